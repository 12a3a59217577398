// Ring all-gather and reduce-scatter on 1..8 ranks (threads bootstrap) over real
// libfabric shm and tcp, in nccl-tests' in-place and out-of-place layouts, checked
// element by element.
#include <catch2/catch.hpp>

#include <cstring>

#include <fmt/format.h>

#include "collectives/check.h"
#include "collectives/gather_scatter.h"
#include "lib/progress.h"
#include "tests/collectives/rank_buffers.h"
#include "tests/transports/ofi_world.h"
#include "tests/transports/world.h"

using namespace railbench;
using railbench::testing::expect;
using railbench::testing::open_ofi;
using railbench::testing::RankBuffers;
using railbench::testing::run_ranks;

namespace {

enum class Which { allgather, reducescatter };

void gather_scatter_case(Which which, const char* provider, int n, int rails, size_t slice_bytes,
                         const std::vector<std::pair<DataType, ReduceOp>>& kinds, const std::vector<size_t>& counts) {
  run_ranks(n, [&](Bootstrap& b) {
    auto t = open_ofi(provider, b, rails);
    Progress p(*t, 30);
    RankBuffers buf(*t, counts, static_cast<size_t>(n));
    const size_t max_bytes = buf.bytes;
    auto& recv = buf.recv;
    const MemoryRegion* rmr = buf.rmr.get();
    const RingOptions ring{max_bytes, slice_bytes, rails, RingProtocol::send};
    auto ag = make_ring_allgather(p, ring);
    auto rs = make_ring_reducescatter(p, ring);
    uint32_t seed = 0;
    for (auto [type, op] : kinds) {
      const size_t es = size_of(type);
      for (size_t count : counts) {
        for (bool in_place : {false, true}) {
          ++seed;
          const size_t own = static_cast<size_t>(b.rank()) * count * es;
          std::memset(recv.data(), 0xff, max_bytes);
          uint64_t wrong = 0;
          if (which == Which::allgather) {
            const CollectiveBuffers bufs = in_place ? CollectiveBuffers{rmr, own, rmr, 0} : buf.placed(false);
            fill_block(type, b.rank(), 0, seed, bufs.send->at(bufs.send_offset), count);
            ag->run(bufs, count, type);
            wrong = count_wrong_allgather(type, n, seed, recv.data(), count);
          } else {
            const CollectiveBuffers bufs = in_place ? CollectiveBuffers{rmr, 0, rmr, own} : buf.placed(false);
            fill_input(type, op, b.rank(), seed, bufs.send->data(), count * static_cast<size_t>(n));
            rs->run(bufs, count, type, op);
            wrong = count_wrong_allreduce(type, op, n, seed, bufs.recv->at(bufs.recv_offset), count,
                                          static_cast<size_t>(b.rank()) * count);
          }
          expect(wrong == 0,
                 fmt::format("{} {} n={} {} {} count={} {} rank {}: {} wrong",
                             which == Which::allgather ? "all-gather" : "reduce-scatter", provider, n, to_string(type),
                             to_string(op), count, in_place ? "in-place" : "out-of-place", b.rank(), wrong));
        }
      }
    }
  });
}

}  // namespace

TEST_CASE("ring all-gather, 1..8 ranks over shm, odd counts, both placements", "[allgather]") {
  for (int n = 1; n <= 8; ++n) {
    DYNAMIC_SECTION(n << " ranks") {
      gather_scatter_case(Which::allgather, "shm", n, 1, 1024,
                          {{DataType::f32, ReduceOp::sum}, {DataType::u8, ReduceOp::sum}}, {1, 7, 1023, 20000});
    }
  }
}

TEST_CASE("ring reduce-scatter, 1..8 ranks over shm, every op, odd counts, both placements", "[reducescatter]") {
  for (int n = 1; n <= 8; ++n) {
    DYNAMIC_SECTION(n << " ranks") {
      gather_scatter_case(Which::reducescatter, "shm", n, 1, 1024,
                          {{DataType::f32, ReduceOp::sum},
                           {DataType::bf16, ReduceOp::prod},
                           {DataType::i32, ReduceOp::min},
                           {DataType::f64, ReduceOp::max}},
                          {1, 7, 1023, 20000});
    }
  }
}

TEST_CASE("ring all-gather and reduce-scatter over tcp on 2 rails", "[allgather][reducescatter]") {
  gather_scatter_case(Which::allgather, "tcp", 4, 2, 4096, {{DataType::i64, ReduceOp::sum}}, {1, 100000});
  gather_scatter_case(Which::reducescatter, "tcp", 4, 2, 4096, {{DataType::f16, ReduceOp::sum}}, {1, 100000});
}
