// The all-reduce test body, run over any Net: the loopback (unit) and libfabric
// providers (conformance) share it. Every element is checked against a sequential
// reference, for both placements.
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "collectives/allreduce.h"
#include "collectives/check.h"
#include "lib/transport/progress.h"
#include "tests/collectives/rank_buffers.h"
#include "tests/support/net.h"

namespace railbench::testing {

using Kinds = std::vector<std::pair<DataType, ReduceOp>>;
// Makes the algorithm under test for a rank: (progress, max_bytes, rails, world size).
using Maker = std::function<std::unique_ptr<AllReduce>(Progress&, size_t, int, int)>;

inline Kinds every_kind() {
  Kinds kinds;
  for (DataType t :
       {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i32, DataType::i64, DataType::u8})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) kinds.emplace_back(t, op);
  return kinds;
}

inline void check_allreduce(const Net& net, int n, int rails, const Kinds& kinds, const std::vector<size_t>& counts,
                            const Maker& make) {
  run_ranks_on(net, n, rails, [&](Bootstrap& b, Transport& t) {
    Progress p(t, 30);
    RankBuffers buf(t, counts, 1);
    auto& recv = buf.recv;
    auto algo = make(p, buf.bytes, rails, n);
    uint32_t seed = 0;
    for (auto [type, op] : kinds) {
      for (size_t count : counts) {
        for (bool in_place : {false, true}) {
          ++seed;
          const CollectiveBuffers bufs = buf.placed(in_place);
          fill_input(type, op, b.rank(), seed, bufs.send->data(), count);
          if (!in_place) std::memset(recv.data(), 0xff, count * size_of(type));
          algo->run(bufs, count, type, op);
          const uint64_t wrong = count_wrong_allreduce(type, op, n, seed, recv.data(), count);
          expect(wrong == 0, fmt::format("{} {} n={} {} {} count={} {} rank {}: {} wrong", algo->name(), net.name, n,
                                         to_string(type), to_string(op), count, in_place ? "in-place" : "out-of-place",
                                         b.rank(), wrong));
        }
      }
    }
    // A rank may return while a peer still waits for its last send to complete; ranks
    // are threads of one process here, so none may close its endpoint before that.
    b.barrier();
  });
}

inline Maker ring(size_t slice_bytes, RingProtocol protocol = RingProtocol::send) {
  return [=](Progress& p, size_t max_bytes, int rails, int) {
    return make_ring_allreduce(p, RingOptions{max_bytes, slice_bytes, rails, protocol});
  };
}

inline Maker rhd() {
  return [](Progress& p, size_t max_bytes, int rails, int) { return make_rhd_allreduce(p, max_bytes, rails); };
}

// hier with `per_node` consecutive ranks per pretend node.
inline Maker hier(int per_node) {
  return [per_node](Progress& p, size_t max_bytes, int rails, int n) {
    NodeLayout layout;
    for (int r = 0; r < n; ++r) layout.node_of.push_back(r / per_node);
    return make_hier_allreduce(p, max_bytes, rails, layout);
  };
}

}  // namespace railbench::testing
