// Every collective test body (tests/collectives/*_cases.h) over each variant of a real
// transport in nets_under_test() (tests/transports/transport_world.h): built into the
// UCX binary (tcp on lo, shm) and the verbs one (the soft-RoCE VM's devices), named with
// the binary's ctest prefix. A small matrix: 2 to 4 ranks as threads, messages up to 64 KiB,
// since rxe under emulation moves ~20 MB/s. libfabric's providers run the full matrix
// (test_*_ofi.cc).
#include <numeric>

#include <catch2/catch.hpp>

#include "collectives/moe_routing.h"
#include "tests/collectives/allreduce_cases.h"
#include "tests/collectives/alltoall_cases.h"
#include "tests/collectives/alltoallv_cases.h"
#include "tests/collectives/gather_scatter_cases.h"
#include "tests/collectives/kvcache_cases.h"
#include "tests/transports/transport_world.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

// Odd counts up to 64 KiB of f32.
const std::vector<size_t> kCounts = {1, 7, 1023, 16381};

// Uneven, with zeros: some pairs (self included) send nothing, the rest odd counts.
size_t uneven(int src, int dst) {
  return static_cast<size_t>((src * 7 + dst * 3) % 5) * 977;
}

}  // namespace

TEST_CASE("ring all-reduce, 2 and 3 ranks, both protocols", "[collectives][allreduce]") {
  for (const Net& net : nets_under_test()) {
    for (int n : {2, 3}) {
      for (RingProtocol protocol : {RingProtocol::send, RingProtocol::write}) {
        DYNAMIC_SECTION(net.name << ", " << n << " ranks, " << to_string(protocol)) {
          check_allreduce(net, n, 1, {{DataType::f32, ReduceOp::sum}, {DataType::bf16, ReduceOp::max}}, kCounts,
                          ring(4096, protocol));
        }
      }
    }
  }
}

TEST_CASE("rhd all-reduce every type and op at 3 ranks, hier at 2 nodes x 2", "[collectives][allreduce][rhd][hier]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      check_allreduce(net, 3, 1, every_kind(), {1, 7, 1023}, rhd());
      check_allreduce(net, 4, 1, {{DataType::f32, ReduceOp::sum}, {DataType::u8, ReduceOp::max}}, kCounts, hier(2));
    }
  }
}

TEST_CASE("all-to-all, 2 and 3 ranks, windows 1 and 4", "[collectives][alltoall]") {
  for (const Net& net : nets_under_test()) {
    for (int n : {2, 3}) {
      for (int window : {1, 4}) {
        DYNAMIC_SECTION(net.name << ", " << n << " ranks, window " << window) {
          alltoall_case(net, n, 1, window, {DataType::f32}, {1, 7, 1023, 4099});
        }
      }
    }
  }
}

TEST_CASE("all-to-all-v: the world, a sub-group, a zipf MoE routing", "[collectives][alltoallv]") {
  MoeRoutingOptions o{parse_routing("zipf:1.2"), 8, 2, 200, 1, 0};
  const MoeRouting r = route_tokens(o, 4);
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      alltoallv_case(net, 4, 1, 2, {0, 1, 2, 3}, DataType::f32, uneven);
      alltoallv_case(net, 3, 1, 4, {2, 0}, DataType::bf16, uneven);
      alltoallv_case(net, 4, 1, 3, {0, 1, 2, 3}, DataType::f32, [&](int s, int d) { return r.at(s, d) * 64; });
    }
  }
}

TEST_CASE("ring all-gather and reduce-scatter, 3 ranks", "[collectives][allgather][reducescatter]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      gather_scatter_case(Which::allgather, net, 3, 1, 1024,
                          {{DataType::f32, ReduceOp::sum}, {DataType::u8, ReduceOp::sum}}, {1, 7, 1023, 4099});
      gather_scatter_case(Which::reducescatter, net, 3, 1, 1024,
                          {{DataType::bf16, ReduceOp::prod}, {DataType::i32, ReduceOp::min}}, {1, 7, 1023, 4099});
    }
  }
}

TEST_CASE("collectives striped over 2 rails", "[collectives]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      check_allreduce(net, 2, 2, {{DataType::f32, ReduceOp::sum}}, {7, 16381}, ring(4096, RingProtocol::write));
      alltoall_case(net, 2, 2, 3, {DataType::i32}, {7, 8191});
      gather_scatter_case(Which::reducescatter, net, 2, 2, 4096, {{DataType::f32, ReduceOp::sum}}, {7, 8191});
    }
  }
}

TEST_CASE("kvcache, every mode, both protocols, 1 and 2 rails", "[collectives][kvcache]") {
  for (const Net& net : nets_under_test()) {
    for (KvProtocol protocol : {KvProtocol::write, KvProtocol::send}) {
      DYNAMIC_SECTION(net.name << ", protocol " << (protocol == KvProtocol::write ? "write" : "send")) {
        kvcache_case(net, 2, 1, protocol, 2, 100);  // 100 tokens: a partly filled last block
        kvcache_case(net, 2, 2, protocol, 2, 64);
      }
    }
  }
}
