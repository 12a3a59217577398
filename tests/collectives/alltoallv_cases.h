// The all-to-all-v test body, run over any Net: a group (the world or a subset of it,
// in any member order) exchanges uneven blocks given by a count matrix, and every
// block is checked against the one its sender must have sent.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "collectives/alltoallv.h"
#include "collectives/check.h"
#include "lib/transport/progress.h"
#include "tests/support/net.h"

namespace railbench::testing {

// Elements member `src` sends member `dst`.
using CountMatrix = std::function<size_t(int src, int dst)>;

// Runs `members` (global ranks, member order) out of `n` ranks; the others stay out.
inline void alltoallv_case(const Net& net, int n, int rails, int window, const std::vector<int>& members, DataType type,
                           const CountMatrix& counts) {
  run_ranks_on(net, n, rails, [&](Bootstrap& b, Transport& t) {
    const auto it = std::find(members.begin(), members.end(), b.rank());
    if (it != members.end()) {
      const Group g{members, static_cast<int>(it - members.begin())};
      const auto m = static_cast<size_t>(g.size());
      std::vector<size_t> to(m), from(m);
      for (int q = 0; q < g.size(); ++q) to[static_cast<size_t>(q)] = counts(g.me, q);
      for (int q = 0; q < g.size(); ++q) from[static_cast<size_t>(q)] = counts(q, g.me);
      const AllToAllVLayout l = AllToAllVLayout::packed(to, from);
      const size_t es = size_of(type), bytes = std::max(l.send_extent(), l.recv_extent()) * es + 64;
      std::vector<std::byte> send(bytes), recv(bytes);
      auto smr = t.register_memory(send.data(), bytes, MemoryKind::host);
      auto rmr = t.register_memory(recv.data(), bytes, MemoryKind::host);
      Progress p(t, 30);
      AllToAllV a2av(p, g, AllToAllVOptions{bytes, rails, window});
      uint32_t seed = 40;
      for (bool in_place : {false, true}) {
        ++seed;
        std::byte* in = in_place ? recv.data() : send.data();
        if (!in_place) std::memset(recv.data(), 0xff, bytes);
        // Patterns by global rank, so a block from the wrong rank is caught.
        for (int q = 0; q < g.size(); ++q)
          fill_block(type, b.rank(), g.global(q), seed, in + l.send_offsets[static_cast<size_t>(q)] * es,
                     to[static_cast<size_t>(q)]);
        a2av.run(
            in_place ? CollectiveBuffers{rmr.get(), 0, rmr.get(), 0} : CollectiveBuffers{smr.get(), 0, rmr.get(), 0}, l,
            type);
        uint64_t wrong = 0;
        for (int q = 0; q < g.size(); ++q)
          wrong += count_wrong_block(type, g.global(q), b.rank(), seed,
                                     recv.data() + l.recv_offsets[static_cast<size_t>(q)] * es,
                                     from[static_cast<size_t>(q)]);
        const std::string what = fmt::format("{} n={} group of {} window={} {} {} rank {}", net.name, n, g.size(),
                                             window, to_string(type), in_place ? "in-place" : "out-of-place", b.rank());
        expect(wrong == 0, fmt::format("{}: {} wrong", what, wrong));
        for (int q = 0; q < g.size(); ++q) {
          const double us = a2av.step_us()[static_cast<size_t>(q)];
          expect(q == g.me ? us == 0 : us >= 0, fmt::format("{}: step time from member {} is {}", what, q, us));
        }
      }
    }
    b.barrier();  // no endpoint closes while a peer's last send is in flight
  });
}

}  // namespace railbench::testing
