// What only UCX's transport answers: a peer that goes away fails its endpoint with UCX's
// own code; its refusals name the TLS, devices and memory types this UCX has; teardown
// with a receive posted, over tcp (freed_region_check.h). The Transport contract over
// UCX_TLS=tcp (on lo) and shm is tests/transports/conformance_cases.cc.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/progress.h"
#include "tests/support/world.h"
#include "tests/transports/freed_region_check.h"
#include "tests/transports/transport_world.h"
#include "transports/ucx/ucx_transport.h"

using namespace railbench;
using namespace railbench::testing;

// A peer that goes away fails its endpoint (UCP_ERR_HANDLING_MODE_PEER): the receive
// posted for it fails well before the deadline, naming the peer, its rail and UCX's code,
// and every later post to it completes at once with the same failure. Over tcp only: a
// shared-memory peer in the same process never looks dead to UCX's keepalive (it checks
// the peer's pid), which tests/robustness/ucx_dead_peer.sh covers with real processes.
TEST_CASE("ucx: a peer that goes away fails its endpoint, named with UCX's code", "[ucx][robustness]") {
  std::string wait_error, post_error;
  double waited_s = 0;
  run_ranks(2, [&](Bootstrap& b) {
    auto t = open_rank(ucx_net("tcp"), b);
    std::vector<uint8_t> buf(64);
    auto mr = t->register_memory(buf.data(), buf.size(), MemoryKind::host);
    if (b.rank() == 1) {
      b.barrier();  // rank 0's receive is posted
      t.reset();    // closes the endpoint and the worker, as a dying process's kernel would
      b.barrier();
      return;
    }
    Progress p(*t, 20, {"rank 0 (nodeA)", "rank 1 (nodeB)"});
    const uint64_t id = p.recv(1, 0, LocalSpan{mr.get(), 0, 8});
    b.barrier();
    b.barrier();
    const auto start = std::chrono::steady_clock::now();
    try {
      p.wait(id, "a message from a peer that went away");
    } catch (const TransportError& e) {
      wait_error = e.what();
    }
    waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    expect(t->post_send(1, 0, LocalSpan{mr.get(), 0, 8}, 7) == Status::ok, "a post to a failed peer is accepted");
    std::vector<Completion> done(4);
    const size_t n = t->poll(done);
    expect(n == 1 && done[0].wr_id == 7 && done[0].status == Status::error, "and completes at once with an error");
    post_error = t->last_error();
  });
  CHECK(waited_s < 10);
  CHECK_THAT(wait_error, Catch::Contains("rank 1 (nodeB)") && Catch::Contains("recv") && Catch::Contains("UCS_ERR_"));
  CHECK_THAT(post_error, Catch::Contains("send with peer 1 on rail 0 (lo)") && Catch::Contains("UCS_ERR_"));
}

TEST_CASE("ucx: a region freed with a receive still posted is never written", "[ucx][robustness]") {
  run_ranks(2, [&](Bootstrap& b) { expect_freed_region_never_written(open_rank(ucx_net("tcp"), b), b); });
}

TEST_CASE("ucx: an unknown transport or device lists what exists", "[ucx]") {
  ucx::UcxOptions o;
  o.tls = "no-such-tl";
  CHECK_THROWS_WITH(ucx::make_transport(o, 0, 1),
                    Catch::Contains("no-such-tl") && Catch::Contains("tcp") && Catch::Contains("posix"));
  o.tls = "tcp";
  o.devices = {"nosuchif0"};
  CHECK_THROWS_WITH(ucx::make_transport(o, 0, 1), Catch::Contains("nosuchif0") && Catch::Contains("lo"));
}

TEST_CASE("ucx: --mem cuda without CUDA in UCX is refused when the transport opens", "[ucx]") {
  ucx::UcxOptions o;
  o.tls = "shm";
  if (!ucx::cuda_supported()) {
    o.cuda = true;
    CHECK_THROWS_WITH(ucx::make_transport(o, 0, 1), Catch::Contains("--mem cuda") && Catch::Contains("CUDA"));
  } else {
    SUCCEED("this UCX has CUDA memory");
  }
}

// Transport::ping_pong (caps().ping_pong): every round trip delivers the peer's bytes and
// the leader gets one stamp per round trip plus the end, in order; over tcp and shm, a
// small message, one past shared memory's eager sizes and one that goes by rendezvous.
TEST_CASE("ucx: the native ping-pong delivers every size and stamps every round trip", "[ucx]") {
  for (const char* tls : {"tcp", "shm"}) {
    run_ranks(2, [&](Bootstrap& b) {
      auto t = open_rank(ucx_net(tls), b);
      expect(t->caps().ping_pong, "UCX runs ping-pongs itself");
      constexpr size_t kMax = 1 << 20;
      std::vector<uint8_t> src(kMax, static_cast<uint8_t>(0x10 + b.rank())), dst(kMax, 0);
      auto smr = t->register_memory(src.data(), src.size(), MemoryKind::host);
      auto dmr = t->register_memory(dst.data(), dst.size(), MemoryKind::host);
      Progress p(*t, 20);
      const int peer = 1 - b.rank();
      for (size_t bytes : {size_t{8}, size_t{40000}, kMax}) {
        std::fill(dst.begin(), dst.end(), 0);
        std::vector<Clock::time_point> stamps(b.rank() == 0 ? 21 : 0);
        p.ping_pong(PingPong{peer, 0, LocalSpan{smr.get(), 0, bytes}, LocalSpan{dmr.get(), 0, bytes}, 20, b.rank() == 0,
                             stamps.data(), 0, 0});
        const auto expected = static_cast<uint8_t>(0x10 + peer);
        expect(
            std::all_of(dst.begin(), dst.begin() + static_cast<long>(bytes), [&](uint8_t v) { return v == expected; }),
            fmt::format("{} B over {}: the peer's bytes landed", bytes, tls));
        expect(std::is_sorted(stamps.begin(), stamps.end()) && (stamps.empty() || stamps.front() < stamps.back()),
               "one stamp per round trip, in order");
        b.barrier();
      }
    });
  }
}

// A peer that never answers: the ping-pong fails after Progress's deadline, naming it.
TEST_CASE("ucx: a ping-pong whose peer never answers fails naming the peer", "[ucx][robustness]") {
  std::string error;
  run_ranks(2, [&](Bootstrap& b) {
    auto t = open_rank(ucx_net("tcp"), b);
    std::vector<uint8_t> buf(64);
    auto mr = t->register_memory(buf.data(), buf.size(), MemoryKind::host);
    if (b.rank() == 0) {
      Progress p(*t, 0.5, {"rank 0 (nodeA)", "rank 1 (nodeB)"});
      std::vector<Clock::time_point> stamps(4);
      try {
        p.ping_pong(PingPong{1, 0, LocalSpan{mr.get(), 0, 8}, LocalSpan{mr.get(), 8, 8}, 3, true, stamps.data(), 0, 0});
      } catch (const TransportError& e) {
        error = e.what();
      }
    }
    b.barrier();  // rank 1 keeps its transport open (and silent) until rank 0 gave up
  });
  CHECK_THAT(error, Catch::Contains("ping-pong with rank 1 (nodeB) on rail 0") &&
                        Catch::Contains("nothing from that peer for 0.5 s"));
}
