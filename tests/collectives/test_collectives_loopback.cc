// Every collective algorithm over the in-memory loopback: the same test bodies as the
// libfabric conformance tests (tests/collectives/*_cases.h), without a provider, so
// they run as fast unit tests. Rails are free here, so most cases stripe over two.
#include <numeric>

#include <catch2/catch.hpp>

#include "collectives/moe_routing.h"
#include "tests/collectives/allreduce_cases.h"
#include "tests/collectives/alltoall_cases.h"
#include "tests/collectives/alltoallv_cases.h"
#include "tests/collectives/gather_scatter_cases.h"
#include "tests/collectives/kvcache_cases.h"
#include "tests/support/loopback_transport.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

// Unordered writes and small messages: the algorithms' other paths (wait for the data
// before the immediate; split what is larger than max_msg_size).
Net unordered_small_messages() {
  return loopback_net(LoopbackOptions{.ordered_writes = false, .max_msg_size = 4096}, {}, "loopback unordered 4K");
}

const std::vector<size_t> kOddCounts = {1, 7, 1023, 20000 + 3};

}  // namespace

TEST_CASE("loopback: ring all-reduce, 1..8 ranks on 1 and 2 rails, both protocols", "[loopback][allreduce]") {
  for (int n = 1; n <= 8; ++n) {
    for (RingProtocol protocol : {RingProtocol::send, RingProtocol::write}) {
      DYNAMIC_SECTION(n << " ranks, " << to_string(protocol)) {
        check_allreduce(loopback_net(), n, 1 + n % 2, {{DataType::f32, ReduceOp::sum}}, kOddCounts,
                        ring(4096, protocol));
      }
    }
  }
}

TEST_CASE("loopback: ring, rhd and hier all-reduce, every type and op", "[loopback][allreduce]") {
  check_allreduce(loopback_net(), 3, 2, every_kind(), {1, 7, 1023}, ring(1024));
  check_allreduce(loopback_net(), 3, 1, every_kind(), {1, 7, 1023}, ring(512, RingProtocol::write));
  check_allreduce(loopback_net(), 6, 2, every_kind(), {1, 7, 1023}, rhd());
  check_allreduce(loopback_net(), 4, 1, every_kind(), {1, 7, 1023}, hier(2));
}

TEST_CASE("loopback: rhd all-reduce, 1..8 ranks (powers of two and not)", "[loopback][allreduce][rhd]") {
  for (int n = 1; n <= 8; ++n) {
    DYNAMIC_SECTION(n << " ranks") {
      check_allreduce(loopback_net(), n, 2, {{DataType::f32, ReduceOp::sum}, {DataType::i64, ReduceOp::min}},
                      kOddCounts, rhd());
    }
  }
}

TEST_CASE("loopback: hier all-reduce, nodes x local ranks", "[loopback][allreduce][hier]") {
  for (auto [nodes, local] : std::vector<std::pair<int, int>>{{2, 2}, {3, 2}, {2, 3}, {1, 4}, {4, 1}, {2, 4}}) {
    DYNAMIC_SECTION(nodes << " nodes x " << local << " ranks") {
      check_allreduce(loopback_net(), nodes * local, 2, {{DataType::f32, ReduceOp::sum}, {DataType::u8, ReduceOp::max}},
                      kOddCounts, hier(local));
    }
  }
}

TEST_CASE("loopback: all-to-all, 1..8 ranks, windows 1 and 4", "[loopback][alltoall]") {
  for (int n = 1; n <= 8; ++n) {
    for (int window : {1, 4}) {
      DYNAMIC_SECTION(n << " ranks, window " << window) {
        alltoall_case(loopback_net(), n, 2, window, {DataType::f32}, {1, 7, 1023, 16384 + 3});
      }
    }
  }
}

// Uneven, with zeros: some pairs (self included) send nothing, the rest odd counts.
static size_t uneven(int src, int dst) {
  return static_cast<size_t>((src * 7 + dst * 3) % 5) * 977;
}

TEST_CASE("loopback: all-to-all-v, world and sub-groups, uneven counts with zeros", "[loopback][alltoallv]") {
  for (int n = 1; n <= 5; ++n) {
    std::vector<int> world(static_cast<size_t>(n));
    std::iota(world.begin(), world.end(), 0);
    DYNAMIC_SECTION(n << " ranks") {
      alltoallv_case(loopback_net(), n, 2, 1 + n % 3, world, DataType::f32, uneven);
    }
  }
  // A sub-group in its own member order (an EP group inside the world), the rest idle.
  alltoallv_case(loopback_net(), 6, 2, 2, {4, 1, 3}, DataType::bf16, uneven);
  alltoallv_case(loopback_net(), 4, 1, 4, {2, 0}, DataType::i64, [](int s, int d) { return s == d ? 0 : size_t{5}; });
  // Nothing at all, and everything to one member (the hot expert's owner).
  alltoallv_case(loopback_net(), 3, 2, 2, {0, 1, 2}, DataType::u8, [](int, int) { return size_t{0}; });
  alltoallv_case(loopback_net(), 4, 2, 4, {0, 1, 2, 3}, DataType::f32,
                 [](int, int d) { return d == 2 ? size_t{70000} : size_t{0}; });
}

TEST_CASE("loopback: all-to-all-v carries a zipf MoE routing", "[loopback][alltoallv]") {
  MoeRoutingOptions o{parse_routing("zipf:1.2"), 8, 2, 300, 7, 3};
  const MoeRouting r = route_tokens(o, 4);
  const size_t hidden = 33;
  alltoallv_case(loopback_net(), 4, 2, 2, {0, 1, 2, 3}, DataType::bf16,
                 [&](int s, int d) { return r.at(s, d) * hidden; });
}

TEST_CASE("loopback: ring all-gather and reduce-scatter, 1..8 ranks", "[loopback][allgather][reducescatter]") {
  for (int n = 1; n <= 8; ++n) {
    DYNAMIC_SECTION(n << " ranks") {
      gather_scatter_case(Which::allgather, loopback_net(), n, 2, 1024,
                          {{DataType::f32, ReduceOp::sum}, {DataType::u8, ReduceOp::sum}}, kOddCounts);
      gather_scatter_case(Which::reducescatter, loopback_net(), n, 2, 1024,
                          {{DataType::bf16, ReduceOp::prod}, {DataType::i32, ReduceOp::min}}, kOddCounts);
    }
  }
}

TEST_CASE("loopback: kvcache, every mode, both protocols, 1 and 2 rails", "[loopback][kvcache]") {
  for (KvProtocol protocol : {KvProtocol::write, KvProtocol::send}) {
    for (int n : {2, 4}) {
      DYNAMIC_SECTION(n << " ranks, protocol " << (protocol == KvProtocol::write ? "write" : "send")) {
        kvcache_case(loopback_net(), n, 1, protocol, 2, 100);  // 100 tokens: a partly filled last block
        kvcache_case(loopback_net(), n, 2, protocol, 2, 64);
      }
    }
  }
}

TEST_CASE("loopback: unordered writes and 4 KiB messages take the algorithms' other paths", "[loopback]") {
  const Net net = unordered_small_messages();
  kvcache_case(net, 2, 2, KvProtocol::write, 2, 100);
  kvcache_case(net, 4, 1, KvProtocol::write, 1, 33);
  check_allreduce(net, 3, 2, {{DataType::f32, ReduceOp::sum}}, {7, 30000}, ring(64 << 10, RingProtocol::write));
  check_allreduce(net, 5, 2, {{DataType::i32, ReduceOp::max}}, {7, 30000}, rhd());
  alltoall_case(net, 3, 2, 2, {DataType::f64}, {7, 30000});
  alltoallv_case(net, 3, 2, 2, {2, 0, 1}, DataType::f64, uneven);
}
