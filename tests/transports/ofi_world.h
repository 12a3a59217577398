// A connected libfabric transport for a test rank. tcp is pinned to the loopback
// domain so test traffic never leaves the machine; other providers use their default.
#pragma once

#include <memory>
#include <string>

#include "lib/runtime/bootstrap.h"
#include "tests/support/net.h"
#include "transports/ofi/ofi_transport.h"

namespace railbench::testing {

inline std::unique_ptr<Transport> open_ofi(const std::string& provider, Bootstrap& b, int rails = 1) {
  ofi::OfiOptions o;
  o.provider = provider;
  if (provider == "tcp") o.domains.assign(static_cast<size_t>(rails), "lo");
  o.num_rails = rails;
  auto t = ofi::make_transport(o, b.rank(), b.size());
  t->connect_all(b);
  return t;
}

// The collective tests' view of a provider: each rank opens its own endpoint.
inline Net ofi_net(const std::string& provider) {
  return Net{provider, [provider](int, int rails) -> OpenRank {
               return [provider, rails](Bootstrap& b) { return open_ofi(provider, b, rails); };
             }};
}

}  // namespace railbench::testing
