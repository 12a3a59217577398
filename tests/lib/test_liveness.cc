// The liveness probe (lib/runtime/liveness.h) and what Progress and the bootstrap say with it:
// a timed-out wait names the rank that is stopped or dead, not the live neighbour it
// happened to wait on, so the operator looks at the right host.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "lib/core/clock.h"
#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"
#include "lib/runtime/liveness.h"
#include "lib/transport/progress.h"
#include "tests/support/free_port.h"
#include "tests/support/loopback_world.h"
#include "tests/support/world.h"

using namespace railbench;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using railbench::testing::LoopbackWorld;

namespace {

const std::vector<std::string> kNames = {"rank 0 (node-a)", "rank 1 (node-b)", "rank 2 (node-c)", "rank 3 (node-d)"};

struct Responders {
  explicit Responders(int n) {
    for (int r = 0; r < n; ++r) {
      all.push_back(std::make_unique<LivenessResponder>());
      endpoints.push_back(all.back()->endpoint());
    }
  }
  std::vector<std::unique_ptr<LivenessResponder>> all;
  std::vector<LivenessEndpoint> endpoints;
};

}  // namespace

TEST_CASE("liveness: a stopped rank is silent, an exited one gone, within the probe's deadline",
          "[liveness][robustness]") {
  Responders w(4);
  REQUIRE(w.endpoints[0].port > 0);
  w.all[2]->set_silent(true);  // as a SIGSTOPped process: the port accepts, nobody answers
  w.all[3].reset();            // as a killed process: the port refuses
  const auto t0 = Clock::now();
  const auto states = probe_liveness(w.endpoints, 0, 0.5);
  CHECK(seconds_between(t0, Clock::now()) < 2.0);
  CHECK(states[0] == PeerState::unknown);  // itself
  CHECK(states[1] == PeerState::alive);
  CHECK(states[2] == PeerState::silent);
  CHECK(states[3] == PeerState::gone);
  const std::string text = describe_liveness(states, kNames, 0.5, 0);
  CHECK_THAT(text, Contains("rank 2 (node-c) did not answer a liveness probe within 0.5 s: stopped or hung"));
  CHECK_THAT(text, Contains("rank 3 (node-d) is gone"));
  CHECK_THAT(text, !Contains("rank 1"));
  // Answering again after SIGCONT.
  w.all[2]->set_silent(false);
  CHECK(probe_liveness(w.endpoints, 0, 0.5)[2] == PeerState::alive);
}

TEST_CASE("liveness: all alive says nothing, a rank that was stopped itself says so", "[liveness][robustness]") {
  Responders w(3);
  CHECK(describe_liveness(probe_liveness(w.endpoints, 1, 0.5), kNames, 0.5, 0).empty());
  w.all[0].reset();
  w.all[2].reset();
  const std::string text = describe_liveness(probe_liveness(w.endpoints, 1, 0.5), kNames, 0.5, 12);
  CHECK_THAT(text, StartsWith("this rank was itself unresponsive (stopped?) for 12 s"));
  CHECK_THAT(text, Contains("rank 0 (node-a) and rank 2 (node-c) are gone"));
  CHECK_THAT(text, Contains("gone on without this one"));
}

TEST_CASE("liveness: endpoints are exchanged over the bootstrap and the probe runs on any rank",
          "[liveness][robustness]") {
  std::vector<std::string> seen(3);
  testing::run_ranks(3, [&](Bootstrap& b) {
    Liveness live(b, {kNames[0], kNames[1], kNames[2]}, 0.5);
    seen[static_cast<size_t>(b.rank())] = live.probe();
    b.barrier();  // nobody's responder goes before every probe is done
  });
  for (const auto& s : seen) CHECK(s.empty());
}

TEST_CASE("Progress: a timeout names the silent rank first, then the live peer it waited on",
          "[liveness][progress][robustness]") {
  // Rank 0 waits on rank 1 (a ring neighbour, alive); rank 2 is the one stopped.
  LoopbackWorld w(4);
  Responders r(4);
  r.all[2]->set_silent(true);
  Progress p(w.t(0), 0.1, kNames);
  p.set_liveness_probe(
      [&](double stalled) { return describe_liveness(probe_liveness(r.endpoints, 0, 0.3), kNames, 0.3, stalled); });
  p.recv(1, 0, w.local(0, 0, 8));
  std::string what;
  try {
    p.wait_all("a ring step");
  } catch (const TimeoutError& e) {
    what = e.what();
  }
  CHECK_THAT(what, StartsWith("rank 0: rank 2 (node-c) did not answer a liveness probe"));
  CHECK_THAT(what, Contains("waiting for a ring step from rank 1 (node-b)"));
  CHECK(what.find("rank 2 (node-c)") < what.find("rank 1 (node-b)"));
}

TEST_CASE("tcp bootstrap: a rank waiting on the root names the rank that never arrived", "[liveness][robustness]") {
  // Rank 2 never starts. Rank 0 (the root) names it itself; rank 1, which only talks to
  // the root, used to blame the root: now it asks who answers.
  Responders r(3);
  r.all[2].reset();
  const int port = railbench::testing::free_tcp_port();
  const std::string root = fmt::format("127.0.0.1:{}", port);
  std::string root_error, rank1_error;
  std::thread root_thread([&] {
    try {
      make_tcp_bootstrap(0, 3, {root}, 2.5);  // outlasts rank 1's wait
    } catch (const TimeoutError& e) {
      root_error = e.what();
    }
  });
  try {
    auto b = make_tcp_bootstrap(1, 3, {root}, 1.0);
    b->set_liveness_probe(
        [&](double) { return describe_liveness(probe_liveness(r.endpoints, 1, 0.3), kNames, 0.3, 0); });
    b->barrier();
  } catch (const Error& e) {
    rank1_error = e.what();
  }
  root_thread.join();
  CHECK_THAT(root_error, Contains("rank(s) 2 did not arrive"));
  CHECK_THAT(rank1_error, StartsWith("rank 1: rank 2 (node-c) is gone"));
}
