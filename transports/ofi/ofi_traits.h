// The traits of -t ofi[:<provider>] (lib/transport/registry.h), for its registration and
// for the one a build without libfabric makes.
#pragma once

#include <string>
#include <vector>

#include "lib/transport/registry.h"

namespace railbench::ofi {

// verbs: RDMA NICs. efa: microseconds, but EFA devices are not probed as RoCE/IB ports.
// tcp, shm, auto: a kernel stack's tens of microseconds. Every provider binds the rail's
// domain address.
inline TransportTraits ofi_traits(const std::string& provider, const std::vector<std::string>& /*rails*/) {
  if (provider == "verbs") return {.rdma_nics = true, .one_way_latency_s = 5e-6};
  if (provider == "efa") return {.one_way_latency_s = 5e-6};
  return {};
}

}  // namespace railbench::ofi
