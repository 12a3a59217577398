// Adds -t ucx to the transport registry (lib/transport/registry.h): its -t forms, its
// `info` section (UCX's version and the transports and devices it offers here, as
// `ucx_info -d` lists them) and its factory.
#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/registry.h"
#include "transports/ucx/ucx_traits.h"
#include "transports/ucx/ucx_transport.h"

namespace railbench::ucx {

namespace {

void print_info() {
  fmt::print("UCX {}: transports and devices on this host (cuda memory: {}):\n", ucx_version(),
             cuda_supported() ? "yes" : "no, built without CUDA");
  fmt::print("  {:<12} {:<16} {}\n", "transport", "device", "memory domain");
  for (const auto& r : list_resources()) fmt::print("  {:<12} {:<16} {}\n", r.tl, r.device, r.md);
}

std::unique_ptr<Transport> make(const TransportSpec& spec, const TransportJob& job) {
  UcxOptions o;
  o.tls = spec.provider;
  o.devices = spec.rail_names;
  o.num_rails = spec.num_rails;
  o.cuda = spec.mem == MemoryKind::cuda;
  o.peer_failure = peer_failure_from_env();
  if (spec.mem == MemoryKind::cuda_host) throw UsageError("ucx: --mem cuda_host is not supported: use --mem host");
  return make_transport(o, job.rank, job.world_size);
}

const bool ucx_register_registered = register_transport(TransportEntry{
    .name = "ucx",
    .order = 40,
    .forms = {"ucx", "ucx:shm", "ucx:tcp", "ucx:rc_verbs", "ucx:rc_x", "ucx:dc_x"},
    .foreign_options_note = "UCX chooses these itself",
    .info = print_info,
    .make = make,
    .details =
        [] {
          return nlohmann::json{{"ucx_version", ucx_version()}, {"ucx_peer_failure", peer_failure_from_env()}};
        },
    .traits = ucx_traits,
});

}  // namespace

}  // namespace railbench::ucx
