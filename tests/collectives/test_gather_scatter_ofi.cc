// Ring all-gather and reduce-scatter on 1..8 ranks (threads bootstrap) over real
// libfabric shm and tcp, in nccl-tests' in-place and out-of-place layouts, checked
// element by element.
#include <catch2/catch.hpp>

#include "tests/collectives/gather_scatter_cases.h"
#include "tests/transports/transport_world.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

void gather_scatter_case(Which which, const char* provider, int n, int rails, size_t slice_bytes,
                         const std::vector<std::pair<DataType, ReduceOp>>& kinds, const std::vector<size_t>& counts) {
  railbench::testing::gather_scatter_case(which, ofi_net(provider), n, rails, slice_bytes, kinds, counts);
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
