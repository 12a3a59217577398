// Adds -t nccl to the transport registry (lib/transport/registry.h): GPU buffers by
// default, the library's version beside the GPU lines of `info`, its factory, and the
// version and NCCL_* environment for the results.
#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/registry.h"
#include "transports/nccl/nccl_transport.h"

namespace railbench::nccl {

namespace {

std::unique_ptr<Transport> make(const TransportSpec& spec, const TransportJob& job) {
  if (!spec.provider.empty() || spec.num_rails != 1 || !spec.rail_names.empty()) {
    throw UsageError(
        "-t nccl takes no provider or --rails: NCCL picks its NICs itself (steer it with NCCL_IB_HCA, e.g. "
        "NCCL_IB_HCA=mlx5_0,mlx5_1)");
  }
  return make_transport(NcclOptions{spec.gpu < 0 ? 0 : spec.gpu}, job.rank, job.world_size);
}

const bool nccl_register_registered = register_transport(TransportEntry{
    .name = "nccl",
    .order = 30,
    .forms = {"nccl"},
    .foreign_options_note = "NCCL picks its NICs and queue pairs itself (steer it with NCCL_IB_HCA)",
    .default_memory = MemoryKind::cuda,
    .exclusive_gpu = true,
    .gpu_info = [] { fmt::print("nccl: {} (-t nccl)\n", version()); },
    .make = make,
    .details =
        [] {
          return nlohmann::json{{"nccl_version", version()}, {"nccl_env", environment()}};
        },
});

}  // namespace

}  // namespace railbench::nccl
