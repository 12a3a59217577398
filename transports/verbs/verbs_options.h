// The options of -t verbs, declared for its registration and for the one a build
// without libibverbs makes: either way --verbs-gid-index and --verbs-qps-per-peer (and
// their older spellings) parse, and with another -t are refused by name.
#pragma once

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

}  // namespace railbench::verbs
