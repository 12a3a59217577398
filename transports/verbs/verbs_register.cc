// Adds -t verbs to the transport registry (lib/transport/registry.h): its options
// (--verbs-gid-index, --verbs-qps-per-peer, with their older spellings), its `info`
// section (every port with its GID table) and its factory.
#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/registry.h"
#include "transports/verbs/verbs_options.h"
#include "transports/verbs/verbs_sysfs.h"
#include "transports/verbs/verbs_transport.h"

namespace railbench::verbs {

namespace {

// What -t verbs would see: every port with its GID table; "(default)" marks the GID
// the transport picks without --verbs-gid-index.
void print_info() {
  const auto ports = list_devices();
  if (ports.empty()) {
    fmt::print(
        "verbs (-t verbs): no RDMA devices (ibv_get_device_list found none): load a driver, or use "
        "scripts/rxe-vm/run.sh for soft-RoCE\n");
    print_sysfs_devices();  // says whether the kernel has RDMA at all
    return;
  }
  fmt::print("verbs (-t verbs): devices and ports:\n");
  for (const auto& p : ports) {
    fmt::print("  {}:{}  state {}, link layer {}, active MTU {}, {} Gb/s, GID table {} entries\n", p.device, p.port,
               p.state, p.link_layer, p.active_mtu, p.link_gbps, p.gid_table_len);
    for (const auto& g : p.gids) {
      fmt::print("    gid[{}] {:<40} {}{}\n", g.index, g.gid, g.type, g.index == p.default_gid ? " (default)" : "");
    }
  }
}

std::unique_ptr<Transport> make(const TransportSpec& spec, const TransportJob& job) {
  if (!spec.provider.empty()) {
    throw UsageError(fmt::format(
        "-t verbs takes no provider ('-t verbs:{}'): choose devices with --rails (e.g. --rails mlx5_0,mlx5_1 or "
        "mlx5_0:1); for libfabric's verbs provider use -t ofi:verbs",
        spec.provider));
  }
  VerbsOptions o;
  o.devices = spec.rail_names;
  o.num_rails = spec.num_rails;
  o.gid_index = spec.option("gid-index");
  o.qps_per_peer = spec.option("qps-per-peer");
  return make_transport(o, job.rank, job.world_size);
}

const bool verbs_register_registered = register_transport(TransportEntry{
    .name = "verbs",
    .order = 20,
    .forms = {"verbs"},
    .options = transport_options(),
    .foreign_options_note = "ibverbs has no such setting",
    .rail_near_gpu = true,
    .info = print_info,
    .make = make,
    .traits = verbs_traits,
});

}  // namespace

}  // namespace railbench::verbs
