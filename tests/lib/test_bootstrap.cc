// Bootstraps with real threads and real sockets on the loopback interface.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"

using namespace railbench;

namespace {

// Exercises all_gather_v, all_gather_value, all_gather_vectors and barrier on `n` ranks built by `make`.
template <class Make>
void run_world(int n, Make make) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto b = make(r);
        REQUIRE(b->rank() == r);
        REQUIRE(b->size() == n);
        auto values = b->template all_gather_value<int>(r * 10);
        for (int i = 0; i < n; ++i)
          if (values[i] != i * 10) ++failures;
        // Variable-length blocks: rank r sends r+1 bytes of value r.
        std::vector<uint8_t> mine(static_cast<size_t>(r + 1), static_cast<uint8_t>(r));
        auto blocks = b->all_gather_v(mine);
        for (int i = 0; i < n; ++i)
          if (blocks[i] != std::vector<uint8_t>(static_cast<size_t>(i + 1), static_cast<uint8_t>(i))) ++failures;
        // Vectors of doubles of different lengths (rank r: r values r + 0.5), rank 0's empty.
        std::vector<double> samples(static_cast<size_t>(r), r + 0.5);
        auto vectors = b->all_gather_vectors(samples);
        if (vectors.size() != static_cast<size_t>(n)) ++failures;
        for (int i = 0; i < n && vectors.size() == static_cast<size_t>(n); ++i)
          if (vectors[i] != std::vector<double>(static_cast<size_t>(i), i + 0.5)) ++failures;
        for (int k = 0; k < 20; ++k) b->barrier();
        auto names = b->all_gather_strings("rank-" + std::to_string(r));
        for (int i = 0; i < n; ++i)
          if (names[i] != "rank-" + std::to_string(i)) ++failures;
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("threads bootstrap gathers and synchronizes 1..8 ranks", "[bootstrap]") {
  for (int n = 1; n <= 8; ++n) {
    auto group = make_thread_group(n);
    run_world(n, [&](int r) { return make_thread_bootstrap(group, r); });
  }
}

TEST_CASE("threads bootstrap names the rank that never arrives", "[bootstrap]") {
  auto group = make_thread_group(3);
  std::string error;
  std::thread t0([&] {
    auto b = make_thread_bootstrap(group, 0);
    b->set_timeout(0.3);
    try {
      b->barrier();
    } catch (const TimeoutError& e) {
      error = e.what();
    }
  });
  std::thread t1([&] {
    auto b = make_thread_bootstrap(group, 1);
    b->set_timeout(0.3);
    try {
      b->barrier();
    } catch (const TimeoutError&) {
    }
  });
  t0.join();
  t1.join();
  CHECK_THAT(error, Catch::Contains("rank(s) 2"));
}

TEST_CASE("tcp rendezvous gathers across 4 ranks over loopback", "[bootstrap]") {
  const std::string root = "127.0.0.1:" + std::to_string(29500 + (::getpid() % 500));
  run_world(4, [&](int r) { return make_tcp_bootstrap(r, 4, {root}, 10.0); });
}

TEST_CASE("tcp rendezvous times out naming the ranks that did not connect", "[bootstrap]") {
  const std::string root = "127.0.0.1:" + std::to_string(30500 + (::getpid() % 500));
  // Rank 0 of 3 waits; only rank 1 ever comes.
  std::string error;
  std::thread t0([&] {
    try {
      make_tcp_bootstrap(0, 3, {root}, 0.5);
    } catch (const TimeoutError& e) {
      error = e.what();
    }
  });
  std::thread t1([&] {
    try {
      make_tcp_bootstrap(1, 3, {root}, 0.5);
    } catch (const Error&) {
    }
  });
  t0.join();
  t1.join();
  CHECK_THAT(error, Catch::Contains("rank(s) 2") && Catch::Contains("did not arrive"));
}

TEST_CASE("tcp rendezvous rejects a malformed RAILBENCH_ROOT", "[bootstrap]") {
  CHECK_THROWS_WITH(make_tcp_bootstrap(1, 2, {"no-port"}, 1.0), Catch::Contains("host:port"));
  CHECK_THROWS_AS(make_tcp_bootstrap(3, 2, {"127.0.0.1:1"}, 1.0), UsageError);
}

TEST_CASE("a non-root rank that cannot reach the root says where it looked", "[bootstrap]") {
  // Port 1 on loopback: nothing listens there.
  CHECK_THROWS_WITH(make_tcp_bootstrap(1, 2, {"127.0.0.1:1"}, 0.3), Catch::Contains("RAILBENCH_ROOT=127.0.0.1:1"));
}
