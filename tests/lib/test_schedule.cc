#include <catch2/catch.hpp>

#include <set>

#include "lib/core/schedule.h"

using namespace railbench;

TEST_CASE("circle schedule: every pair exactly once, no rank twice in a round", "[schedule]") {
  for (int n = 2; n <= 33; ++n) {
    INFO("n = " << n);
    auto rounds = circle_schedule(n);
    CHECK(rounds.size() == static_cast<size_t>(n % 2 == 0 ? n - 1 : n));
    std::set<std::pair<int, int>> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const auto& p : round) {
        REQUIRE(p.a < p.b);
        REQUIRE(p.a >= 0);
        REQUIRE(p.b < n);
        CHECK(busy.insert(p.a).second);
        CHECK(busy.insert(p.b).second);
        CHECK(seen.insert({p.a, p.b}).second);
      }
      // Even n: everybody works every round; odd n: exactly one rests.
      CHECK(busy.size() == static_cast<size_t>(n % 2 == 0 ? n : n - 1));
    }
    CHECK(seen.size() == static_cast<size_t>(n * (n - 1) / 2));
  }
}

TEST_CASE("circle schedule of fewer than two ranks is empty", "[schedule]") {
  CHECK(circle_schedule(0).empty());
  CHECK(circle_schedule(1).empty());
}

TEST_CASE("peer_in_round finds the partner or -1", "[schedule]") {
  Round r{{0, 3}, {1, 2}};
  CHECK(peer_in_round(r, 0) == 3);
  CHECK(peer_in_round(r, 3) == 0);
  CHECK(peer_in_round(r, 2) == 1);
  CHECK(peer_in_round(r, 4) == -1);
}
