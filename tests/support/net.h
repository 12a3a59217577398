// What a collective test runs over, so one test body serves the in-memory loopback
// (unit tests) and the libfabric providers (conformance tests) alike, as gloo's tests
// cross every transport with one list of cases.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "lib/runtime/bootstrap.h"
#include "lib/transport/transport.h"
#include "tests/support/world.h"

namespace railbench::testing {

// Opens and connects one rank's transport.
using OpenRank = std::function<std::unique_ptr<Transport>(Bootstrap&)>;

struct Net {
  std::string name;  // for failure messages: "shm", "tcp", "loopback"
  // Called once per world before its rank threads start (a loopback world makes its
  // shared fabric here); returns how each rank opens its transport.
  std::function<OpenRank(int world_size, int rails)> world;
};

// run_ranks, each rank with its transport opened over `net`.
inline void run_ranks_on(const Net& net, int n, int rails, const std::function<void(Bootstrap&, Transport&)>& body,
                         double timeout_s = 30) {
  const OpenRank open = net.world(n, rails);
  run_ranks(
      n,
      [&](Bootstrap& b) {
        auto t = open(b);
        body(b, *t);
      },
      timeout_s);
}

}  // namespace railbench::testing
