// Faults that real providers rarely show, injected into collectives over the loopback:
// a write-with-imm overtaking data on another rail, completion errors and lost
// messages mid-collective, posts answered retry, a lagging rail. Each either still
// gives the right answer or ends every rank with an error naming a peer, never a hang.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "collectives/alltoall.h"
#include "collectives/alltoallv.h"
#include "lib/core/clock.h"
#include "lib/core/errors.h"
#include "tests/collectives/allreduce_cases.h"
#include "tests/collectives/alltoall_cases.h"
#include "tests/collectives/kvcache_cases.h"
#include "tests/support/loopback_transport.h"

using namespace railbench;
using namespace railbench::testing;
using Catch::Matchers::Contains;

namespace {

// Rank r's outcome: empty when it returned, else its error (kind and message).
struct Outcome {
  std::string kind;  // "timeout", "transport", ...
  std::string what;
};

// Runs `body` on every rank with a short deadline and keeps each rank's error instead
// of stopping at the first, so a test can say which rank saw what.
std::vector<Outcome> run_collecting(const Net& net, int n, int rails,
                                    const std::function<void(Bootstrap&, Progress&)>& body) {
  std::vector<Outcome> out(static_cast<size_t>(n));
  std::mutex mu;
  run_ranks_on(
      net, n, rails,
      [&](Bootstrap& b, Transport& t) {
        std::vector<std::string> names;
        for (int r = 0; r < n; ++r) names.push_back(fmt::format("rank {} (node{})", r, r));
        Progress p(t, 1.0, names);
        try {
          body(b, p);
        } catch (const Error& e) {
          std::lock_guard lock(mu);
          out[static_cast<size_t>(b.rank())] = Outcome{to_string(e.code()), e.what()};
        }
      },
      5);
  return out;
}

void one_allreduce(Bootstrap& b, Progress& p, RingProtocol protocol) {
  const int n = b.size();
  std::vector<float> send(4096), recv(4096);
  auto smr = p.transport().register_memory(send.data(), send.size() * 4, MemoryKind::host);
  auto rmr = p.transport().register_memory(recv.data(), recv.size() * 4, MemoryKind::host);
  auto algo = make_ring_allreduce(p, RingOptions{send.size() * 4, 1024, p.transport().num_rails(), protocol});
  fill_input(DataType::f32, ReduceOp::sum, b.rank(), 1, send.data(), send.size());
  algo->run(CollectiveBuffers{smr.get(), 0, rmr.get(), 0}, send.size(), DataType::f32, ReduceOp::sum);
  expect(count_wrong_allreduce(DataType::f32, ReduceOp::sum, n, 1, recv.data(), recv.size()) == 0, "wrong sums");
}

}  // namespace

TEST_CASE("kvcache waits for every rail's immediate when rail 1's overtakes rail 0's data", "[faults][kvcache]") {
  // Writes are ordered per rail, so the decode rank counts one immediate per rail used.
  // Rail 0's first write is held until rail 1's immediate has landed: the decode rank
  // sees a notification while rail 0's blocks are missing, and must not finish on it.
  for (KvMode mode : {KvMode::per_block, KvMode::coalesced}) {
    DYNAMIC_SECTION(to_string(mode)) {
      auto fabric = std::make_shared<LoopbackFabric>(2, LoopbackOptions{.rails = 2});
      const size_t rule =
          fabric->inject({.op = PostKind::write, .rank = 0, .peer = 1, .rail = 0, .nth = 1, .hold = Hold::overtake});
      run_ranks_on(fabric_net(fabric), 2, 2, [&](Bootstrap& b, Transport& t) {
        Progress p(t, 5);
        KvTransfer transfer(p, b, small_kv_options(2, 2, KvProtocol::write, 2, 64));
        const KvRunResult r = transfer.run(mode, 0, 5, true);
        expect(r.wrong == 0, fmt::format("rank {}: {} wrong bytes after the overtaking", b.rank(), r.wrong));
        b.barrier();
      });
      CHECK(fabric->fired(rule) == 1);
      CHECK(fabric->overtaken() == 1);
    }
  }
}

TEST_CASE("kvcache over a lagging rail: every write on rail 1 delayed", "[faults][kvcache]") {
  for (bool ordered : {true, false}) {
    DYNAMIC_SECTION((ordered ? "ordered" : "unordered") << " writes") {
      const std::vector<FaultRule> lag = {
          {.op = PostKind::write, .rail = 1, .nth = 0, .hold = Hold::delay, .delay = std::chrono::microseconds(300)},
          {.op = PostKind::write_imm,
           .rail = 1,
           .nth = 0,
           .hold = Hold::delay,
           .delay = std::chrono::microseconds(300)},
      };
      kvcache_case(loopback_net({.ordered_writes = ordered}, lag, "loopback, rail 1 lagging"), 4, 2, KvProtocol::write,
                   2, 64);
    }
  }
}

TEST_CASE("collectives give the right answer when every post first answers retry", "[faults][retry]") {
  std::vector<FaultRule> busy;
  for (PostKind op : {PostKind::send, PostKind::recv, PostKind::write, PostKind::write_imm})
    busy.push_back({.op = op, .nth = 0, .fault = Fault::retry, .retries = 2});
  const Net net = loopback_net({}, busy, "loopback, every post retried twice");
  check_allreduce(net, 3, 2, {{DataType::f32, ReduceOp::sum}}, {7, 20000}, ring(1024));
  check_allreduce(net, 3, 2, {{DataType::f32, ReduceOp::sum}}, {7, 20000}, ring(1024, RingProtocol::write));
  check_allreduce(net, 5, 1, {{DataType::i64, ReduceOp::max}}, {7, 20000}, rhd());
  alltoall_case(net, 4, 2, 2, {DataType::i32}, {7, 20000});
  kvcache_case(net, 2, 2, KvProtocol::write, 2, 64);
}

TEST_CASE("ring all-reduce over 2 rails where rail 1 lags behind rail 0", "[faults][allreduce]") {
  for (RingProtocol protocol : {RingProtocol::send, RingProtocol::write}) {
    DYNAMIC_SECTION(to_string(protocol)) {
      std::vector<FaultRule> lag;
      for (PostKind op : {PostKind::send, PostKind::write, PostKind::write_imm})
        lag.push_back({.op = op, .rail = 1, .nth = 0, .hold = Hold::delay, .delay = std::chrono::microseconds(200)});
      check_allreduce(loopback_net({}, lag, "loopback, rail 1 lagging"), 4, 2, {{DataType::f32, ReduceOp::sum}},
                      {7, 20000}, ring(1024, protocol));
    }
  }
}

TEST_CASE("a completion error mid-all-reduce ends every rank with an error naming a peer", "[faults][allreduce]") {
  struct Case {
    RingProtocol protocol;
    PostKind op;
  };
  for (Case c : {Case{RingProtocol::send, PostKind::send}, Case{RingProtocol::write, PostKind::write_imm}}) {
    DYNAMIC_SECTION(to_string(c.protocol)) {
      auto fabric = std::make_shared<LoopbackFabric>(4, LoopbackOptions{});
      fabric->inject({.op = c.op, .rank = 2, .peer = 3, .nth = 10, .fault = Fault::fail});
      const auto start = Clock::now();
      const auto out =
          run_collecting(fabric_net(fabric), 4, 1, [&](Bootstrap& b, Progress& p) { one_allreduce(b, p, c.protocol); });
      CHECK(seconds_between(start, Clock::now()) < 4.0);  // the deadline, not the test's timeout
      CHECK(out[2].kind == "transport");
      CHECK_THAT(out[2].what, Contains("rank 2: write with rank 3 (node3) on rail 0 failed") ||
                                  Contains("rank 2: send with rank 3 (node3) on rail 0 failed"));
      CHECK_THAT(out[2].what, Contains("injected failure"));
      for (int r = 0; r < 4; ++r) {
        INFO("rank " << r << ": " << out[static_cast<size_t>(r)].what);
        CHECK_THAT(out[static_cast<size_t>(r)].what, Contains("(node"));  // every rank ended naming a peer
      }
      // Rank 3 waited for what rank 2 never sent, unless the failure reached it first as a
      // neighbour that had already ended (on a loaded machine, or under ASan, rank 0 may
      // close first, or have released the region rank 3 writes into while it unwinds).
      CHECK_THAT(out[3].what, Contains("rank 2 (node2)") || Contains("has closed its transport") ||
                                  Contains("not a region rank 0 has registered (deregistered"));
    }
  }
}

TEST_CASE("a send lost mid-all-to-all times out naming the sender", "[faults][alltoall]") {
  auto fabric = std::make_shared<LoopbackFabric>(3, LoopbackOptions{});
  const size_t rule = fabric->inject({.op = PostKind::send, .rank = 1, .peer = 0, .nth = 2, .fault = Fault::drop});
  const auto out = run_collecting(fabric_net(fabric), 3, 1, [&](Bootstrap&, Progress& p) {
    std::vector<int32_t> send(3 * 64), recv(3 * 64);
    auto smr = p.transport().register_memory(send.data(), send.size() * 4, MemoryKind::host);
    auto rmr = p.transport().register_memory(recv.data(), recv.size() * 4, MemoryKind::host);
    AllToAll a2a(p, AllToAllOptions{send.size() * 4, 1, 2});
    // Rank 1's second send to rank 0 is lost; ranks 1 and 2 have all they need and return.
    for (int i = 0; i < 2; ++i) a2a.run(CollectiveBuffers{smr.get(), 0, rmr.get(), 0}, 64, DataType::i32);
  });
  CHECK(fabric->fired(rule) == 1);
  CHECK(out[0].kind == "timeout");
  CHECK_THAT(out[0].what, Contains("rank 1 (node1) (1 recv outstanding)"));
  // The lost send never completes either: the sender names the receiver.
  CHECK_THAT(out[1].what, Contains("all-to-all sends from rank 0 (node0) (1 send outstanding)"));
  CHECK(out[2].what.empty());
}

TEST_CASE("a send lost mid-all-to-all-v in a sub-group times out naming the peer", "[faults][alltoallv]") {
  // The group is ranks {2, 0} of 3 (member order 2, 0); rank 1 stays out.
  auto fabric = std::make_shared<LoopbackFabric>(3, LoopbackOptions{});
  const size_t rule = fabric->inject({.op = PostKind::send, .rank = 2, .peer = 0, .nth = 1, .fault = Fault::drop});
  const auto out = run_collecting(fabric_net(fabric), 3, 1, [&](Bootstrap& b, Progress& p) {
    if (b.rank() == 1) return;
    std::vector<int32_t> send(64), recv(64);
    auto smr = p.transport().register_memory(send.data(), send.size() * 4, MemoryKind::host);
    auto rmr = p.transport().register_memory(recv.data(), recv.size() * 4, MemoryKind::host);
    const Group g{{2, 0}, b.rank() == 2 ? 0 : 1};
    AllToAllV a2av(p, g, AllToAllVOptions{256, 1, 1});
    // Member 0 sends 10 to itself and 20 to member 1, which sends 30 back and 5 to itself.
    const auto l =
        b.rank() == 2 ? AllToAllVLayout::packed({10, 20}, {10, 30}) : AllToAllVLayout::packed({30, 5}, {20, 5});
    a2av.run(CollectiveBuffers{smr.get(), 0, rmr.get(), 0}, l, DataType::i32);
  });
  CHECK(fabric->fired(rule) == 1);
  CHECK(out[0].kind == "timeout");
  CHECK_THAT(out[0].what, Contains("an all-to-all-v block from rank 2 (node2)"));
  CHECK_THAT(out[2].what, Contains("all-to-all-v sends from rank 0 (node0)"));
  CHECK(out[1].what.empty());
}
