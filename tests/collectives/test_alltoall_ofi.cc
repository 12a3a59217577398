// Pairwise all-to-all on 1..8 ranks (threads bootstrap) over real libfabric shm and tcp,
// every block checked against the block its sender must have sent.
#include <catch2/catch.hpp>

#include "collectives/check.h"
#include "collectives/moe_routing.h"
#include "tests/collectives/alltoall_cases.h"
#include "tests/collectives/alltoallv_cases.h"
#include "tests/transports/transport_world.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

void alltoall_case(const char* provider, int n, int rails, int window, const std::vector<DataType>& types,
                   const std::vector<size_t>& counts) {
  railbench::testing::alltoall_case(ofi_net(provider), n, rails, window, types, counts);
}

}  // namespace

TEST_CASE("all-to-all, 1..8 ranks over shm, odd counts, both placements", "[alltoall]") {
  for (int n = 1; n <= 8; ++n) {
    for (int window : {1, 4}) {
      DYNAMIC_SECTION(n << " ranks, window " << window) {
        alltoall_case("shm", n, 1, window, {DataType::f32}, {1, 7, 1023, 16384 + 3});
      }
    }
  }
}

TEST_CASE("all-to-all, every type, 3 ranks over shm", "[alltoall]") {
  alltoall_case(
      "shm", 3, 1, 2,
      {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i32, DataType::i64, DataType::u8},
      {1, 7, 1023});
}

TEST_CASE("all-to-all over tcp on 2 rails, large blocks striped", "[alltoall]") {
  for (int n : {2, 4}) {
    DYNAMIC_SECTION(n << " ranks") {
      alltoall_case("tcp", n, 2, 3, {DataType::i32}, {7, 100000});
    }
  }
}

TEST_CASE("all-to-all check patterns catch a block in the wrong place", "[alltoall][unit]") {
  const int n = 4;
  const size_t count = 33;
  std::vector<float> in(count * n), out(count * n);
  // What rank 2 must receive: block q from rank q.
  for (int q = 0; q < n; ++q) fill_block(DataType::f32, q, 2, 5, out.data() + q * count, count);
  CHECK(count_wrong_alltoall(DataType::f32, 2, n, 5, out.data(), count) == 0);
  std::swap_ranges(out.begin(), out.begin() + count, out.begin() + count);  // blocks 0 and 1 swapped
  CHECK(count_wrong_alltoall(DataType::f32, 2, n, 5, out.data(), count) > count);
  fill_alltoall(DataType::f32, 1, n, 5, in.data(), count);
  CHECK(count_wrong_block(DataType::f32, 1, 3, 5, in.data() + 3 * count, count) == 0);
}

TEST_CASE("all-to-all-v over shm and tcp: world, a sub-group, zeros, a MoE routing", "[alltoallv]") {
  auto uneven = [](int s, int d) { return static_cast<size_t>((s * 7 + d * 3) % 5) * 977; };
  railbench::testing::alltoallv_case(ofi_net("shm"), 4, 1, 2, {0, 1, 2, 3}, DataType::f32, uneven);
  railbench::testing::alltoallv_case(ofi_net("shm"), 5, 1, 4, {3, 0, 4}, DataType::bf16, uneven);
  MoeRoutingOptions o{parse_routing("zipf:1.2"), 8, 2, 200, 1, 0};
  const MoeRouting r = route_tokens(o, 4);
  // 2 rails: the hot member's blocks are large enough to be striped.
  railbench::testing::alltoallv_case(ofi_net("tcp"), 4, 2, 3, {0, 1, 2, 3}, DataType::f32,
                                     [&](int s, int d) { return r.at(s, d) * 64; });
}
