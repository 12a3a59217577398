// All-reduce algorithms (ring, rhd, hier) on 1..8 ranks (threads bootstrap) over real
// libfabric shm and tcp, verified element by element against a sequential reference.
#include <catch2/catch.hpp>

#include "collectives/allreduce.h"
#include "lib/core/errors.h"
#include "lib/transport/progress.h"
#include "tests/collectives/allreduce_cases.h"
#include "tests/support/world.h"
#include "tests/transports/transport_world.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

void allreduce_case(const char* provider, int n, int rails, size_t slice_bytes, const Kinds& kinds,
                    const std::vector<size_t>& counts, RingProtocol protocol = RingProtocol::send) {
  railbench::testing::check_allreduce(ofi_net(provider), n, rails, kinds, counts, ring(slice_bytes, protocol));
}

void check_allreduce(const char* provider, int n, int rails, const Kinds& kinds, const std::vector<size_t>& counts,
                     const Maker& make) {
  railbench::testing::check_allreduce(ofi_net(provider), n, rails, kinds, counts, make);
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
  allreduce_case("shm", 3, 1, 1024, every_kind(), {1, 7, 1023});
}

TEST_CASE("rhd all-reduce, 1..8 ranks over shm (powers of two and not), odd counts", "[allreduce][rhd]") {
  for (int n = 1; n <= 8; ++n) {
    DYNAMIC_SECTION(n << " ranks") {
      check_allreduce("shm", n, 1, {{DataType::f32, ReduceOp::sum}, {DataType::i64, ReduceOp::min}},
                      {1, 7, 1023, 65536 + 3}, rhd());
    }
  }
}

TEST_CASE("rhd all-reduce, every type and op, 3 and 6 ranks over shm", "[allreduce][rhd]") {
  for (int n : {3, 6}) {
    DYNAMIC_SECTION(n << " ranks") {
      check_allreduce("shm", n, 1, every_kind(), {1, 7, 1023}, rhd());
    }
  }
}

TEST_CASE("rhd all-reduce over tcp on 2 rails, large transfers striped", "[allreduce][rhd]") {
  check_allreduce("tcp", 3, 2, {{DataType::f32, ReduceOp::sum}}, {7, 300000}, rhd());
}

TEST_CASE("hier all-reduce: nodes x local ranks over shm, odd counts", "[allreduce][hier]") {
  // (nodes, ranks per node): 2x2 is the acceptance shape; 3 nodes makes the cross-node
  // rhd fold; 1 node and 1 rank per node are the degenerate ends.
  for (auto [nodes, local] : std::vector<std::pair<int, int>>{{2, 2}, {3, 2}, {2, 3}, {1, 4}, {4, 1}, {2, 4}}) {
    DYNAMIC_SECTION(nodes << " nodes x " << local << " ranks") {
      check_allreduce("shm", nodes * local, 1, {{DataType::f32, ReduceOp::sum}, {DataType::u8, ReduceOp::max}},
                      {1, 7, 1023, 65536 + 3}, hier(local));
    }
  }
}

TEST_CASE("hier all-reduce, every type and op, 2 nodes x 2 ranks over shm", "[allreduce][hier]") {
  check_allreduce("shm", 4, 1, every_kind(), {1, 7, 1023}, hier(2));
}

TEST_CASE("hier all-reduce refuses nodes of different sizes", "[allreduce][hier]") {
  run_ranks(3, [&](Bootstrap& b) {
    auto t = open_rank(ofi_net("shm"), b);
    Progress p(*t, 30);
    bool threw = false;
    try {
      make_hier_allreduce(p, 1024, 1, NodeLayout{{0, 0, 1}});
    } catch (const UsageError& e) {
      threw = std::string(e.what()).find("same number of ranks on every node") != std::string::npos;
    }
    expect(threw, "a 2+1 layout must be refused with a message naming the problem");
  });
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
