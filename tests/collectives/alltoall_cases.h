// The all-to-all test body, run over any Net: every block checked against the block
// its sender must have sent, and every step timed.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "collectives/alltoall.h"
#include "collectives/check.h"
#include "lib/transport/progress.h"
#include "tests/collectives/rank_buffers.h"
#include "tests/support/net.h"

namespace railbench::testing {

inline void alltoall_case(const Net& net, int n, int rails, int window, const std::vector<DataType>& types,
                          const std::vector<size_t>& counts) {
  run_ranks_on(net, n, rails, [&](Bootstrap& b, Transport& t) {
    Progress p(t, 30);
    RankBuffers buf(t, counts, static_cast<size_t>(n));
    auto& recv = buf.recv;
    AllToAll a2a(p, AllToAllOptions{buf.bytes, rails, window});
    uint32_t seed = 0;
    for (DataType type : types) {
      for (size_t count : counts) {
        for (bool in_place : {false, true}) {
          ++seed;
          const CollectiveBuffers bufs = buf.placed(in_place);
          fill_alltoall(type, b.rank(), n, seed, bufs.send->data(), count);
          if (!in_place) std::memset(recv.data(), 0xff, count * size_of(type) * static_cast<size_t>(n));
          a2a.run(bufs, count, type);
          const uint64_t wrong = count_wrong_alltoall(type, b.rank(), n, seed, recv.data(), count);
          const std::string what =
              fmt::format("{} n={} window={} {} count={} {} rank {}", net.name, n, window, to_string(type), count,
                          in_place ? "in-place" : "out-of-place", b.rank());
          expect(wrong == 0, fmt::format("{}: {} wrong", what, wrong));
          for (int q = 0; q < n; ++q) {
            const double us = a2a.step_us()[static_cast<size_t>(q)];
            expect(q == b.rank() ? us == 0 : us > 0, fmt::format("{}: step time from rank {} is {}", what, q, us));
          }
        }
      }
    }
    b.barrier();  // no endpoint closes while a peer's last send is in flight
  });
}

}  // namespace railbench::testing
