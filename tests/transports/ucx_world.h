// A connected UCX transport for a test rank. tcp is pinned to the loopback device so
// test traffic never leaves the machine; shm uses UCX's shared-memory transports.
#pragma once

#include <memory>
#include <string>

#include "lib/runtime/bootstrap.h"
#include "transports/ucx/ucx_transport.h"

namespace railbench::testing {

inline std::unique_ptr<Transport> open_ucx(const std::string& tls, Bootstrap& b, int rails = 1) {
  ucx::UcxOptions o;
  o.tls = tls;
  if (tls == "tcp") o.devices.assign(static_cast<size_t>(rails), "lo");
  o.num_rails = rails;
  auto t = ucx::make_transport(o, b.rank(), b.size());
  t->connect_all(b);
  return t;
}

}  // namespace railbench::testing
