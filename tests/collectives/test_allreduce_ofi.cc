// Ring all-reduce on 1..8 ranks (threads bootstrap) over real libfabric shm and tcp,
// verified element by element against a sequential reference.
#include <catch2/catch.hpp>

#include <cstring>

#include <fmt/format.h>

#include "collectives/allreduce.h"
#include "collectives/check.h"
#include "lib/progress.h"
#include "tests/transports/ofi_world.h"
#include "tests/transports/world.h"

using namespace railbench;
using railbench::testing::expect;
using railbench::testing::open_ofi;
using railbench::testing::run_ranks;

namespace {

void allreduce_case(const char* provider, int n, int rails, size_t slice_bytes,
                    const std::vector<std::pair<DataType, ReduceOp>>& kinds, const std::vector<size_t>& counts,
                    RingProtocol protocol = RingProtocol::send) {
  run_ranks(n, [&](Bootstrap& b) {
    auto t = open_ofi(provider, b, rails);
    Progress p(*t, 30);
    size_t max_bytes = 0;
    for (size_t c : counts) max_bytes = std::max(max_bytes, c * 8);
    std::vector<std::byte> send(max_bytes), recv(max_bytes);
    auto smr = t->register_memory(send.data(), max_bytes, MemoryKind::host);
    auto rmr = t->register_memory(recv.data(), max_bytes, MemoryKind::host);
    auto ring = make_ring_allreduce(p, RingOptions{max_bytes, slice_bytes, rails, protocol});
    uint32_t seed = 0;
    for (auto [type, op] : kinds) {
      for (size_t count : counts) {
        for (bool in_place : {false, true}) {
          ++seed;
          const CollectiveBuffers bufs =
              in_place ? CollectiveBuffers{rmr.get(), 0, rmr.get(), 0} : CollectiveBuffers{smr.get(), 0, rmr.get(), 0};
          fill_input(type, op, b.rank(), seed, bufs.send->data(), count);
          if (!in_place) std::memset(recv.data(), 0xff, count * size_of(type));
          ring->run(bufs, count, type, op);
          const uint64_t wrong = count_wrong_allreduce(type, op, n, seed, recv.data(), count);
          expect(wrong == 0,
                 fmt::format("{} n={} {} {} count={} {} rank {}: {} wrong", provider, n, to_string(type), to_string(op),
                             count, in_place ? "in-place" : "out-of-place", b.rank(), wrong));
        }
      }
    }
  });
}

}  // namespace

TEST_CASE("ring all-reduce, f32 sum, 1..8 ranks over shm, odd counts, both placements", "[allreduce]") {
  for (int n = 1; n <= 8; ++n) {
    DYNAMIC_SECTION(n << " ranks") {
      allreduce_case("shm", n, 1, 4096, {{DataType::f32, ReduceOp::sum}}, {1, 7, 1023, 65536 + 3});
    }
  }
}

TEST_CASE("ring all-reduce, every type and op, 3 ranks over shm", "[allreduce]") {
  std::vector<std::pair<DataType, ReduceOp>> kinds;
  for (DataType t :
       {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i32, DataType::i64, DataType::u8})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) kinds.emplace_back(t, op);
  allreduce_case("shm", 3, 1, 1024, kinds, {1, 7, 1023});
}

TEST_CASE("ring all-reduce over tcp on 2 rails, slices striped across them", "[allreduce]") {
  for (int n : {2, 4}) {
    DYNAMIC_SECTION(n << " ranks") {
      allreduce_case("tcp", n, 2, 4096, {{DataType::f32, ReduceOp::sum}, {DataType::i32, ReduceOp::max}},
                     {1, 1023, 100000});
    }
  }
}

TEST_CASE("ring all-reduce with the write protocol: credits, keys and notifications", "[allreduce]") {
  // Small slices so every step has several writes in flight and scratch halves are
  // reused many times within one call; repeated calls reuse the halves across calls.
  for (int n : {2, 3, 5}) {
    DYNAMIC_SECTION("shm, " << n << " ranks") {
      allreduce_case("shm", n, 1, 512, {{DataType::f32, ReduceOp::sum}, {DataType::bf16, ReduceOp::max}},
                     {1, 7, 1023, 65536 + 3}, RingProtocol::write);
    }
  }
  DYNAMIC_SECTION("tcp, 4 ranks, 2 rails") {
    allreduce_case("tcp", 4, 2, 1024, {{DataType::i64, ReduceOp::sum}}, {7, 100000}, RingProtocol::write);
  }
}
