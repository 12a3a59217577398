#include "bench/runner/transport_factory.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/core/errors.h"

#ifdef RAILBENCH_HAVE_OFI
#include "transports/ofi/ofi_transport.h"
#endif
#ifdef RAILBENCH_HAVE_VERBS
#include "transports/verbs/verbs_transport.h"
#endif
#ifdef RAILBENCH_HAVE_NCCL
#include "transports/nccl/nccl_transport.h"
#endif

namespace railbench {

std::vector<std::string> built_transports() {
  std::vector<std::string> out;
#ifdef RAILBENCH_HAVE_OFI
  out.push_back("ofi");
#endif
#ifdef RAILBENCH_HAVE_VERBS
  out.push_back("verbs");
#endif
#ifdef RAILBENCH_HAVE_NCCL
  out.push_back("nccl");
#endif
  return out;
}

TransportSpec parse_transport_spec(const std::string& transport, const std::string& rails) {
  TransportSpec spec;
  auto colon = transport.find(':');
  spec.name = transport.substr(0, colon);
  if (colon != std::string::npos) spec.provider = transport.substr(colon + 1);
  const auto built = built_transports();
  if (std::find(built.begin(), built.end(), spec.name) == built.end()) {
    throw UsageError(fmt::format("unknown transport '{}': this build has {} (e.g. -t ofi:tcp, -t ofi:shm){}", transport,
                                 fmt::join(built, ", "),
                                 spec.name == "nccl" ? "; -t nccl needs a build with CUDA and NCCL found" : ""));
  }
  if (colon != std::string::npos && spec.provider.empty()) {
    throw UsageError(fmt::format("transport '{}' names no provider after ':': e.g. -t ofi:tcp", transport));
  }
  if (!rails.empty()) {
    int n = 0;
    auto [ptr, ec] = std::from_chars(rails.data(), rails.data() + rails.size(), n);
    const bool number =
        (ec == std::errc() || ec == std::errc::result_out_of_range) && ptr == rails.data() + rails.size();
    if (number) {
      if (ec == std::errc::result_out_of_range) n = rails[0] == '-' ? 0 : kMaxRails + 1;
      if (n < 1) throw UsageError(fmt::format("--rails {} must be 1 or more", rails));
      if (n > kMaxRails)
        throw UsageError(
            fmt::format("--rails {} is more than the {} rails railbench opens: give at most --rails {} "
                        "(one per NIC)",
                        rails, kMaxRails, kMaxRails));
      spec.num_rails = n;
    } else {
      size_t start = 0;
      while (start <= rails.size()) {
        size_t comma = rails.find(',', start);
        std::string name = rails.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (name.empty())
          throw UsageError(fmt::format("--rails '{}' has an empty name: e.g. --rails eth0,eth1", rails));
        spec.rail_names.push_back(name);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      if (spec.rail_names.size() > static_cast<size_t>(kMaxRails))
        throw UsageError(fmt::format("--rails names {} rails, more than the {} railbench opens: name at most {}",
                                     spec.rail_names.size(), kMaxRails, kMaxRails));
      spec.num_rails = static_cast<int>(spec.rail_names.size());
    }
  }
  return spec;
}

nlohmann::json transport_details(const std::string& name) {
#ifdef RAILBENCH_HAVE_NCCL
  if (name == "nccl") return nlohmann::json{{"nccl_version", nccl::version()}, {"nccl_env", nccl::environment()}};
#endif
  (void)name;
  return nlohmann::json::object();
}

std::unique_ptr<Transport> make_transport(const TransportSpec& spec, int rank, int world_size, bool all_on_one_host) {
#ifdef RAILBENCH_HAVE_OFI
  if (spec.name == "ofi") {
    if (spec.gid_index >= 0 || spec.qps_per_peer != 1) {
      throw UsageError(
          "--gid-index and --qps-per-peer apply to -t verbs; libfabric chooses these itself (drop them for -t ofi)");
    }
    ofi::OfiOptions o;
    o.provider = spec.provider;
    o.domains = spec.rail_names;
    o.num_rails = spec.num_rails;
    o.all_ranks_on_one_host = all_on_one_host;
    o.hmem = spec.mem == MemoryKind::cuda;
    o.gpu = spec.gpu < 0 ? 0 : spec.gpu;
    return ofi::make_transport(o, rank, world_size);
  }
#endif
#ifdef RAILBENCH_HAVE_VERBS
  if (spec.name == "verbs") {
    if (!spec.provider.empty()) {
      throw UsageError(fmt::format(
          "-t verbs takes no provider ('-t verbs:{}'): choose devices with --rails (e.g. --rails mlx5_0,mlx5_1 or "
          "mlx5_0:1); for libfabric's verbs provider use -t ofi:verbs",
          spec.provider));
    }
    verbs::VerbsOptions o;
    o.devices = spec.rail_names;
    o.num_rails = spec.num_rails;
    o.gid_index = spec.gid_index;
    o.qps_per_peer = spec.qps_per_peer;
    return verbs::make_transport(o, rank, world_size);
  }
#endif
#ifdef RAILBENCH_HAVE_NCCL
  if (spec.name == "nccl") {
    if (!spec.provider.empty() || spec.num_rails != 1 || !spec.rail_names.empty() || spec.gid_index >= 0 ||
        spec.qps_per_peer != 1) {
      throw UsageError(
          "-t nccl takes no provider, --rails, --gid-index or --qps-per-peer: NCCL picks its NICs itself (steer it "
          "with NCCL_IB_HCA, e.g. NCCL_IB_HCA=mlx5_0,mlx5_1)");
    }
    return nccl::make_transport(nccl::NcclOptions{spec.gpu < 0 ? 0 : spec.gpu}, rank, world_size);
  }
#endif
  (void)rank;
  (void)world_size;
  (void)all_on_one_host;
  throw UsageError(fmt::format("transport '{}' is not built into this railbench", spec.name));
}

}  // namespace railbench
