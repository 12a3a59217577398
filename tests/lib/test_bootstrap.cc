// Bootstraps with real threads and real sockets on the loopback interface.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <thread>

#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"
#include "lib/runtime/rendezvous_tree.h"

using namespace railbench;

namespace {

// Gathers to rank 0 and to the last rank, twice each in a row (so one gather's blocks
// cannot leak into the next): the root gets every rank's block in place, the others
// nothing. Returns the count of wrong results on this rank.
int check_gathers(Bootstrap& b) {
  const int n = b.size();
  const int r = b.rank();
  int wrong = 0;
  for (int root : {0, n - 1, 0, n - 1}) {
    // Rank r's block: 3r bytes of value r + root (rank 0's empty), so lengths and order show.
    std::vector<uint8_t> mine(static_cast<size_t>(3 * r), static_cast<uint8_t>(r + root));
    const auto blocks = b.gather_v(mine, root);
    if (r != root && !blocks.empty()) ++wrong;
    if (r == root && blocks.size() != static_cast<size_t>(n)) ++wrong;
    for (size_t i = 0; r == root && i < blocks.size(); ++i)
      if (blocks[i] != std::vector<uint8_t>(3 * i, static_cast<uint8_t>(i + root))) ++wrong;
  }
  const auto names = b.gather_strings("rank-" + std::to_string(r));
  if (names.size() != (r == 0 ? static_cast<size_t>(n) : 0u)) ++wrong;
  for (int i = 0; r == 0 && i < n; ++i)
    if (names[i] != "rank-" + std::to_string(i)) ++wrong;
  const auto samples = b.gather_vectors(std::vector<double>(static_cast<size_t>(r), r + 0.25));
  for (int i = 0; r == 0 && i < n; ++i)
    if (samples[i] != std::vector<double>(static_cast<size_t>(i), i + 0.25)) ++wrong;
  return wrong;
}

// Exercises all_gather_v, all_gather_value, all_gather_vectors, barrier and the gathers on `n` ranks built by `make`.
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
        // The maximum of value i sits on rank i % n; every other rank's is smaller.
        std::vector<double> times(5);
        for (size_t i = 0; i < times.size(); ++i)
          times[i] = static_cast<int>(i) % n == r ? 100.0 + static_cast<double>(i) : static_cast<double>(r) - 50.0;
        const auto maxima = b->all_reduce_max(times);
        for (size_t i = 0; i < times.size(); ++i)
          if (maxima.size() != times.size() || maxima[i] != 100.0 + static_cast<double>(i)) ++failures;
        auto names = b->all_gather_strings("rank-" + std::to_string(r));
        for (int i = 0; i < n; ++i)
          if (names[i] != "rank-" + std::to_string(i)) ++failures;
        failures += check_gathers(*b);
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

TEST_CASE("the bootstrap tree's subtrees are contiguous and cover the world", "[bootstrap]") {
  using namespace rendezvous;
  for (int n : {1, 2, 3, 5, 8, 13, 64, 100}) {
    std::vector<int> covered(static_cast<size_t>(n), 0);
    for (int r = 0; r < n; ++r) {
      // r's subtree is r and its children's subtrees, back to back with no gap.
      int next = r + 1;
      auto children = tree_children(r, n);
      std::reverse(children.begin(), children.end());
      for (int c : children) {
        CHECK(tree_parent(c) == r);
        CHECK(c == next);
        next += tree_subtree_size(c, n);
      }
      CHECK(next == r + tree_subtree_size(r, n));
      if (r > 0) ++covered[static_cast<size_t>(r)];
    }
    CHECK(tree_subtree_size(0, n) == n);
    for (int r = 1; r < n; ++r) CHECK(covered[static_cast<size_t>(r)] == 1);
  }
  CHECK(tree_children(0, 8) == std::vector<int>{4, 2, 1});
  CHECK(tree_children(4, 6) == std::vector<int>{5});
  CHECK(tree_parent(12) == 8);
}

TEST_CASE("tcp bootstrap tree gathers, reduces and synchronizes", "[bootstrap]") {
  int k = 0;
  for (int n : {3, 5, 8, 13}) {
    const std::string root = "127.0.0.1:" + std::to_string(27000 + (::getpid() % 100) * 5 + k++);
    TcpRendezvous where{root};
    where.topology = "tree";
    run_world(n, [&](int r) {
      auto b = make_tcp_bootstrap(r, n, where, 10.0);
      if (b->layout() != "tree") throw BootstrapError("rank 0 did not choose the tree");
      return b;
    });
  }
}

TEST_CASE("rank 0's topology is the one every rank takes", "[bootstrap]") {
  const std::string root = "127.0.0.1:" + std::to_string(27500 + (::getpid() % 500));
  std::vector<std::string> layouts(4);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.emplace_back([&, r] {
      TcpRendezvous where{root};
      where.topology = r == 0 ? "tree" : "star";
      try {
        auto b = make_tcp_bootstrap(r, 4, where, 10.0);
        b->barrier();
        layouts[static_cast<size_t>(r)] = b->layout();
      } catch (const Error& e) {
        layouts[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  CHECK(layouts == std::vector<std::string>(4, "tree"));
  // Below 64 ranks "auto" is the star.
  const std::string root2 = "127.0.0.1:" + std::to_string(28000 + (::getpid() % 500));
  std::vector<std::thread> star;
  for (int r = 0; r < 2; ++r) {
    star.emplace_back([&, r] {
      try {
        layouts[static_cast<size_t>(r)] = make_tcp_bootstrap(r, 2, {root2}, 10.0)->layout();
      } catch (const Error& e) {
        layouts[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : star) t.join();
  CHECK(layouts[0] == "star");
  CHECK(layouts[1] == "star");
}

TEST_CASE("in the bootstrap tree a silent rank is named by its parent and its subtree by rank 0", "[bootstrap]") {
  const std::string root = "127.0.0.1:" + std::to_string(28500 + (::getpid() % 500));
  // 8 ranks: rank 6's parent is 4, rank 4's is 0. Rank 6 joins the tree but never gathers; it holds
  // its connections open until the others have given up, so they see a silent rank.
  std::vector<std::string> errors(8);
  std::atomic<int> gave_up{0};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 8; ++r) {
    ranks.emplace_back([&, r] {
      TcpRendezvous where{root};
      where.topology = "tree";
      try {
        auto b = make_tcp_bootstrap(r, 8, where, 10.0);
        b->barrier();  // the tree is set up in the first collective: rank 6 takes part
        b->set_timeout(0.5);
        if (r != 6) b->all_gather_strings("rank " + std::to_string(r));
        for (int i = 0; r == 6 && i < 500 && gave_up < 7; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
      } catch (const Error& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
      if (r != 6) ++gave_up;
    });
  }
  for (auto& t : ranks) t.join();
  CHECK_THAT(errors[4], Catch::Contains("rank 4: bootstrap all_gather timed out waiting for rank 6"));
  // Rank 0 times out on rank 4's subtree, or sees rank 4 close first, having given up.
  CHECK_THAT(errors[0], Catch::Contains("rank 4 (for ranks 4-7)"));
  CHECK(errors[6].empty());
  // The others wait on their parents (or see them close): rank 7 on the silent 6, rank 5 on 4.
  CHECK_THAT(errors[7], Catch::Contains("rank 6 (rank 7's parent in the bootstrap tree)"));
  CHECK_THAT(errors[5], Catch::Contains("rank 4 (rank 5's parent in the bootstrap tree)"));
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

TEST_CASE("a gather to a root outside the world is refused by name", "[bootstrap]") {
  auto group = make_thread_group(1);
  auto b = make_thread_bootstrap(group, 0);
  const std::vector<uint8_t> mine{1, 2};
  CHECK_THROWS_AS(b->gather_v(mine, 1), UsageError);
  CHECK_THROWS_WITH(b->gather_v(mine, -1), Catch::Contains("root rank -1 is outside 0..0"));
  CHECK(b->gather_v(mine, 0) == std::vector<std::vector<uint8_t>>{mine});
}

TEST_CASE("threads bootstrap gather names the rank that never arrives", "[bootstrap]") {
  auto group = make_thread_group(3);
  std::string error;
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      auto b = make_thread_bootstrap(group, r);
      b->set_timeout(0.3);
      try {
        b->gather_strings("x");
      } catch (const TimeoutError& e) {
        if (r == 0) error = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  CHECK_THAT(error, Catch::Contains("gather") && Catch::Contains("rank(s) 2"));
}

TEST_CASE("tcp gather at rank 0 names the rank whose block never came", "[bootstrap]") {
  const std::string root = "127.0.0.1:" + std::to_string(31500 + (::getpid() % 500));
  // Ranks 1 and 3 send their blocks; rank 2 joins the rendezvous but never gathers.
  // It holds its connection open until rank 0 has given up, so rank 0 sees a silent rank,
  // not a closed one.
  std::string error;
  std::atomic<bool> root_done{false};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.emplace_back([&, r] {
      try {
        auto b = make_tcp_bootstrap(r, 4, {root}, 5.0);
        b->set_timeout(0.5);
        if (r != 2) b->gather_strings("block of rank " + std::to_string(r));
        for (int i = 0; r == 2 && i < 500 && !root_done; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
      } catch (const TimeoutError& e) {
        if (r == 0) error = e.what();
      }
      if (r == 0) root_done = true;
    });
  }
  for (auto& t : ranks) t.join();
  CHECK_THAT(error, Catch::Contains("bootstrap gather timed out") && Catch::Contains("rank(s) 2 did not arrive"));
}
