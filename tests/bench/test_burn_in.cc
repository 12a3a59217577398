// Burn-in (bench/runner/burn_in.h): --duration parsing, the per-window summaries and the
// intermittent verdict, and the window clock that every rank follows from rank 0.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include "bench/runner/burn_in.h"
#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"

using namespace railbench;

TEST_CASE("burn-in: --duration takes seconds, minutes and hours", "[burn-in]") {
  CHECK(parse_duration("90s") == 90);
  CHECK(parse_duration("10m") == 600);
  CHECK(parse_duration("1h") == 3600);
  CHECK(parse_duration("1.5h") == 5400);
  CHECK(parse_duration("45") == 45);
  CHECK(parse_duration("2min") == 120);
}

TEST_CASE("burn-in: a bad --duration names the text and the fix", "[burn-in][robustness]") {
  CHECK_THROWS_WITH(parse_duration("0"), Catch::Contains("must be more than 0") && Catch::Contains("10m"));
  CHECK_THROWS_WITH(parse_duration("0s"), Catch::Contains("must be more than 0"));
  CHECK_THROWS_WITH(parse_duration("-5m"), Catch::Contains("must be more than 0"));
  CHECK_THROWS_WITH(parse_duration("5x"), Catch::Contains("unknown unit 'x'") && Catch::Contains("90s, 10m, 1h"));
  CHECK_THROWS_WITH(parse_duration("m"), Catch::Contains("is not a duration"));
  CHECK_THROWS_WITH(parse_duration(""), Catch::Contains("is not a duration"));
  CHECK_THROWS_WITH(parse_duration("1000h"), Catch::Contains("30-day limit"));
  CHECK_THROWS_AS(parse_duration("nan"), UsageError);
  CHECK_THROWS_WITH(make_burn_in_plan("10m", 3), Catch::Contains("give one of them"));
  CHECK_FALSE(make_burn_in_plan("", 0).on());
  CHECK(make_burn_in_plan("", 3).cycles == 3);
  CHECK(make_burn_in_plan("2m", 0).duration_s == 120);
}

TEST_CASE("burn-in: a link low in some windows is intermittent, a steady or always-slow one is not", "[burn-in]") {
  BurnInLog log;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // rail1: node01, node05, node06 steady, node02 drops in windows 2 and 4 (4: did not
  // finish), node03 slow in every window; rail0: node01 steady on its own (a group of
  // one: judged against its own run).
  const double flaky[] = {10, 10, 1, 10, nan, 10};
  for (int w = 0; w < 6; ++w) {
    log.begin_window(w * 10.0, "2026-11-23T19:00:0" + std::to_string(w) + "Z");
    log.add("node01 rail1", "rail1", "GB/s", 10 + 0.1 * w);
    log.add("node02 rail1", "rail1", "GB/s", flaky[w]);
    log.add("node03 rail1", "rail1", "GB/s", 5);
    log.add("node01 rail0", "rail0", "GB/s", 7 - 0.1 * w);
    if (w >= 3) log.add("node04 rail1", "rail1", "GB/s", 10);  // first seen in window 3
    log.add("node05 rail1", "rail1", "GB/s", 10);
    log.add("node06 rail1", "rail1", "GB/s", 10);
    log.end_window(w * 10.0 + 9);
  }
  const auto links = log.summarize();
  REQUIRE(links.size() == 7);
  const auto& steady = links[0];
  CHECK(steady.link == "node01 rail1");
  CHECK_FALSE(steady.intermittent());
  CHECK(steady.low == 0);
  CHECK(steady.min == Approx(10));
  CHECK(steady.max == Approx(10.5));
  const auto& flap = links[1];
  CHECK(flap.intermittent());
  CHECK(flap.low == 2);
  CHECK(flap.missing == 1);
  CHECK(flap.worst == 4);  // did not finish: worse than any figure
  CHECK(flap.min == 1);
  CHECK(flap.median == 10);
  CHECK(flap.reference == 10);  // rail1's median over every finished window
  CHECK(flap.per_window);
  CHECK(flap.sentence(log.times()) ==
        "node02 rail1 intermittent: 2 of 6 windows low: 1 below 80% of the rail1 median in the same window (10 GB/s "
        "over the run), 1 did not finish, worst did not finish at +40 s (2026-11-23T19:00:04Z)");
  const auto& slow = links[2];
  CHECK_FALSE(slow.intermittent());
  CHECK(slow.always_low());
  CHECK_FALSE(links[3].intermittent());  // rail0 judged against rail0 alone
  CHECK_FALSE(links[3].per_window);
  const auto& late = links[6];  // first seen after the others
  CHECK(late.link == "node04 rail1");
  CHECK(late.missing == 3);
  CHECK(late.intermittent());  // missing windows are low windows

  const auto j = log.to_json(BurnInPlan{0, 6});
  CHECK(j.at("windows").size() == 6);
  CHECK(j.at("windows")[4].at("start_s") == 40.0);
  CHECK(j.at("plan").at("cycles") == 6);
  CHECK(j.at("links")[1].at("values")[4].is_null());
  CHECK(j.at("links")[1].at("worst_at_s") == 40.0);
  CHECK(j.at("links")[1].at("intermittent") == true);
  CHECK(j.at("links")[0].at("intermittent") == false);

  const auto table = log.table("test");
  CHECK(table.back() == "# burn-in: 2 intermittent link(s) of 7");
}

TEST_CASE("burn-in: memory stays bounded: past the window limit, windows merge two into one", "[burn-in]") {
  BurnInLog log;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const size_t passes = kBurnInMaxWindows + 1;
  for (size_t w = 0; w < passes; ++w) {
    log.begin_window(static_cast<double>(w), "2026-11-23T19:00:00Z");
    // Pass 7 did not finish, pass 10 was slow: merged windows keep the worse figure.
    log.add("rail0 ranks 0-1", "rail0", "GB/s", w == 7 ? nan : w == 10 ? 1.0 : 10.0 + static_cast<double>(w % 2));
    log.end_window(static_cast<double>(w) + 0.5);
  }
  CHECK(log.windows() == kBurnInMaxWindows / 2 + 1);
  CHECK(log.passes_per_window() == 2);
  CHECK(log.times()[3].start_s == 6);
  CHECK(log.times()[3].end_s == 7.5);
  const auto j = log.to_json(BurnInPlan{0, static_cast<int>(passes)});
  const auto& values = j.at("links")[0].at("values");
  CHECK(values.size() == log.windows());
  CHECK(values[0] == 10.0);
  CHECK(values[3].is_null());
  CHECK(values[5] == 1.0);
  CHECK(j.at("passes_per_window") == 2);
  const auto l = log.summarize().at(0);
  CHECK(l.intermittent());
  CHECK(l.low == 2);
  // Later passes fold two by two into windows of 2 passes: the count stays bounded, and
  // after many more merges every window still spans the same number of passes.
  for (size_t w = passes; w < 20 * kBurnInMaxWindows; ++w) {
    log.begin_window(static_cast<double>(w), "2026-11-23T19:00:00Z");
    log.add("rail0 ranks 0-1", "rail0", "GB/s", w == 4000 ? 2.0 : 10.0);
    log.end_window(static_cast<double>(w) + 0.5);
  }
  CHECK(log.windows() <= kBurnInMaxWindows);
  CHECK(log.windows() > kBurnInMaxWindows / 2);
  CHECK(log.passes_per_window() == 32);
  CHECK(log.times()[1].start_s == 32);
  CHECK(log.times()[1].end_s == 63.5);
  const auto later = log.to_json(BurnInPlan{});
  CHECK(later.at("links")[0].at("values")[4000 / 32] == 2.0);
  CHECK(later.at("links")[0].at("values")[0].is_null());  // holds pass 7, which did not finish
}

TEST_CASE("burn-in: every rank runs the windows rank 0's clock decides", "[burn-in]") {
  auto run = [](BurnInPlan plan, int n) {
    auto group = make_thread_group(n);
    std::vector<int> windows(static_cast<size_t>(n), 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        auto b = make_thread_bootstrap(group, r);
        BurnInClock clock(*b, plan);
        while (clock.next_window()) {
          ++windows[static_cast<size_t>(r)];
          // Rank 1 is slow to finish its windows: the others still wait for rank 0's word.
          if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      });
    }
    for (auto& t : threads) t.join();
    return windows;
  };
  CHECK(run(BurnInPlan{0, 3}, 3) == std::vector<int>{3, 3, 3});
  CHECK(run(BurnInPlan{}, 2) == std::vector<int>{1, 1});  // off: one window, the plain run
  const auto timed = run(BurnInPlan{0.1, 0}, 3);
  CHECK(timed[0] >= 2);
  CHECK(timed[0] <= 8);
  CHECK(timed[1] == timed[0]);
  CHECK(timed[2] == timed[0]);
}
