// The send/recv part of the transport contract every transport's conformance test
// checks the same way: one message of each size on every rail, byte for byte.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include <fmt/format.h>

#include "lib/transport/progress.h"
#include "lib/transport/transport.h"
#include "tests/support/world.h"

namespace railbench::testing {

// Both ranks of a pair call it: each sends `bytes` to `peer` and receives as much from
// it, for every size on every rail, and checks the count and every byte (a pattern of
// the sender's rank). Buffers are one byte longer so a zero-byte message still has a
// registered buffer.
inline void expect_send_recv_every_size(Transport& t, Progress& p, int rank, int peer,
                                        std::initializer_list<size_t> sizes) {
  for (size_t bytes : sizes) {
    std::vector<uint8_t> src(bytes + 1), dst(bytes + 1, 0);
    for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<uint8_t>(i * 7 + rank);
    auto smr = t.register_memory(src.data(), src.size(), MemoryKind::host);
    auto dmr = t.register_memory(dst.data(), dst.size(), MemoryKind::host);
    for (int rail = 0; rail < t.num_rails(); ++rail) {
      std::fill(dst.begin(), dst.end(), 0);
      auto r = p.recv(peer, rail, LocalSpan{dmr.get(), 0, bytes});
      p.send(peer, rail, LocalSpan{smr.get(), 0, bytes});
      p.wait(r, "test message");
      p.wait_all("test sends");
      expect(p.bytes(r) == bytes, fmt::format("received {} bytes, sent {}", p.bytes(r), bytes));
      size_t bad = 0;
      for (size_t i = 0; i < bytes; ++i) bad += dst[i] != static_cast<uint8_t>(i * 7 + peer);
      expect(bad == 0, fmt::format("{} of {} bytes wrong on rail {}", bad, bytes, rail));
    }
  }
}

}  // namespace railbench::testing
