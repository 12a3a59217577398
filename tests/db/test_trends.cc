// db trends' judgement over made-up series: which way is worse, against what noise.
#include <catch2/catch.hpp>

#include <random>

#include "bench/offline/db/db_options.h"
#include "bench/offline/db/trends.h"
#include "lib/core/errors.h"

using namespace railbench;
using namespace railbench::db;
using railbench::store::Series;

namespace {

// `n` runs a day apart: level + step x run + noise, all passed.
Series series(const std::string& name, int n, double level, double step, double noise, std::mt19937& rng) {
  std::normal_distribution<double> z(0, 1);
  Series s{{"nic", name}, "tx/rail", "of rail median", {}};
  for (int i = 0; i < n; ++i) s.points.push_back({i + 1, 20000.0 + i, level + step * i + noise * z(rng), true});
  return s;
}

}  // namespace

TEST_CASE("trends: the one link that drifts down by more than the fleet's noise is named, with its slope", "[db]") {
  std::mt19937 rng(7);
  std::vector<Series> fleet;
  for (int i = 0; i < 30; ++i) fleet.push_back(series("node" + std::to_string(i) + ":rail0", 8, 1.0, 0, 0.03, rng));
  fleet.push_back(series("node99:rail0", 8, 1.0, -0.03, 0.03, rng));
  const auto d = drifting(fleet, true, 0.65, {});
  REQUIRE(d.size() == 1);
  CHECK(d[0].thing.name == "node99:rail0");
  CHECK(d[0].per_run == Approx(-0.03).margin(0.015));
  CHECK(d[0].per_week == Approx(7 * d[0].per_run));  // runs a day apart
  REQUIRE(d[0].crosses_in_days);
  CHECK(*d[0].crosses_in_days > 0);
  // Upwards is better for a rate: no drift. For a latency it is the wrong way.
  fleet.back() = series("node99:rail0", 8, 1.0, +0.03, 0.03, rng);
  CHECK(drifting(fleet, true, std::nullopt, {}).empty());
  CHECK(drifting(fleet, false, std::nullopt, {}).size() == 1);
}

TEST_CASE("trends: a quiet fleet, too few runs, or a run that failed is no drift", "[db]") {
  std::mt19937 rng(3);
  std::vector<Series> fleet;
  for (int i = 0; i < 30; ++i) fleet.push_back(series("n" + std::to_string(i), 8, 1.0, 0, 0.03, rng));
  CHECK(drifting(fleet, true, std::nullopt, {}).empty());
  fleet.push_back(series("short", 3, 1.0, -0.1, 0, rng));
  CHECK(drifting(fleet, true, std::nullopt, {}).empty());
  Series failed = series("failed", 8, 1.0, -0.05, 0, rng);
  failed.points.back().passed = false;  // a failing link is a finding, not a trend
  fleet.push_back(failed);
  CHECK(drifting(fleet, true, std::nullopt, {}).empty());
}

TEST_CASE("trends: a link that alternates is flaky, one that failed once is not", "[db]") {
  std::mt19937 rng(1);
  Series a = series("alt", 8, 1, 0, 0, rng), once = series("once", 8, 1, 0, 0, rng);
  for (size_t i = 0; i < 8; ++i) a.points[i].passed = i % 2 == 0;
  once.points[4].passed = false;
  const auto f = flaky({a, once}, {});
  REQUIRE(f.size() == 1);
  CHECK(f[0].thing.name == "alt");
  CHECK(f[0].pattern == "PFPFPFPF");
  CHECK(f[0].changes == 7);
}

TEST_CASE("trends: --since forms and the sparkline", "[db]") {
  CHECK(since_days("30d", 86400 * 100) == Approx(70));
  CHECK(since_days("2w", 86400 * 100) == Approx(86));
  CHECK(since_days("48h", 86400 * 100) == Approx(98));
  CHECK(since_days("all", 0) < -1e6);
  CHECK_THROWS_WITH(since_days("soon", 0), Catch::Contains("'soon'") && Catch::Contains("30d"));
  CHECK(sparkline({0, 1, 2, 3, 4, 5, 6, 7}) == "▁▂▃▄▅▆▇█");
  CHECK(sparkline({2, 2}) == "▄▄");
}
