// The options and traits of -t verbs, declared for its registration and for the one a
// build without libibverbs makes: either way --verbs-gid-index and --verbs-qps-per-peer
// (and their older spellings) parse, and with another -t are refused by name, and a
// validate plan over verbs is made.
#pragma once

#include <string>
#include <vector>

#include "lib/transport/registry.h"

namespace railbench::verbs {

inline std::vector<TransportOption> transport_options() {
  return {{.name = "gid-index",
           .alias = "--gid-index",
           .help = "verbs: GID table index (default: the port's RoCE v2 IPv4 GID)",
           .default_value = -1},
          {.name = "qps-per-peer",
           .alias = "--qps-per-peer",
           .help = "verbs: RC queue pairs per peer and rail (ECMP entropy)",
           .default_value = 1,
           .show_default = true}};
}

// Every rail an RDMA NIC, connected from its own GID.
inline TransportTraits verbs_traits(const std::string& /*provider*/, const std::vector<std::string>& /*rails*/) {
  return {.rdma_nics = true, .one_way_latency_s = 5e-6, .binds_rail_address = true};
}

}  // namespace railbench::verbs
