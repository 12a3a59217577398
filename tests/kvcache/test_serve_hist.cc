// kvcache --serve's latency histogram against exact nearest-rank percentiles
// (lib/core/stats.h) on seeded samples: the bound it states holds, count, min, max and
// mean are exact, and merging two halves gives what one histogram of all would.
#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "bench/commands/kvcache/kvserve_hist.h"
#include "lib/core/stats.h"

using namespace railbench;

namespace {

void check_within(const Summary& exact, const Summary& h) {
  const double e = LatencyHistogram::kRelativeError * (1 + 1e-9);
  CHECK(h.count == exact.count);
  CHECK(h.min == exact.min);
  CHECK(h.max == exact.max);
  CHECK(h.mean == Approx(exact.mean).epsilon(1e-9));
  CHECK(h.stdev == Approx(exact.stdev).epsilon(1e-6));
  for (auto [x, y] : {std::pair{exact.p50, h.p50}, {exact.p90, h.p90}, {exact.p99, h.p99}, {exact.p999, h.p999}}) {
    INFO("exact " << x << " histogram " << y);
    CHECK(std::abs(y - x) <= e * x);
  }
}

}  // namespace

TEST_CASE("serve histogram: p50/p90/p99/p99.9 within the stated relative error on 100,000 seeded samples",
          "[kvcache][serve]") {
  std::mt19937_64 gen(11);
  // Latency-like shapes: a lognormal body, a heavy Pareto tail, and a mix of a fast path
  // and a slow one spanning ns to minutes.
  std::lognormal_distribution<double> body(std::log(300.0), 0.6);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const auto pareto = [&] { return 50.0 / std::pow(1 - u(gen), 1 / 1.3); };
  const auto mixed = [&] { return u(gen) < 0.9 ? 0.01 + u(gen) : 1e6 * (1 + 60 * u(gen)); };
  for (int shape = 0; shape < 3; ++shape) {
    DYNAMIC_SECTION("shape " << shape) {
      std::vector<double> v;
      LatencyHistogram h;
      for (int i = 0; i < 100000; ++i) {
        const double x = shape == 0 ? body(gen) : shape == 1 ? pareto() : mixed();
        v.push_back(x);
        h.add(x);
      }
      check_within(summarize(v), h.summary());
      // Any percentile, not only the four the summary reports.
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      for (double p : {1.0, 10.0, 25.0, 75.0, 95.0, 99.5, 99.99, 100.0}) {
        const double x = percentile_sorted(sorted, p);
        INFO("p" << p << " exact " << x << " histogram " << h.percentile(p));
        CHECK(std::abs(h.percentile(p) - x) <= LatencyHistogram::kRelativeError * (1 + 1e-9) * x);
      }
    }
  }
}

TEST_CASE("serve histogram: merged halves and a round trip through words equal one histogram of all",
          "[kvcache][serve]") {
  std::mt19937_64 gen(5);
  std::exponential_distribution<double> e(1 / 800.0);
  LatencyHistogram all, a, b;
  for (int i = 0; i < 20000; ++i) {
    const double x = e(gen);
    all.add(x);
    (i % 3 ? a : b).add(x);
  }
  std::vector<double> words;
  b.append_words(words);
  size_t at = 0;
  a.merge(LatencyHistogram::from_words(words, at));
  CHECK(at == words.size());
  CHECK(words.size() == LatencyHistogram::buckets() + 5);
  const Summary x = all.summary(), y = a.summary();
  CHECK(y.count == x.count);
  CHECK(y.p50 == x.p50);
  CHECK(y.p99 == x.p99);
  CHECK(y.p999 == x.p999);
  CHECK(y.mean == Approx(x.mean).epsilon(1e-12));
  CHECK(y.stdev == Approx(x.stdev).epsilon(1e-9));
  CHECK(LatencyHistogram().summary().count == 0);
  CHECK(LatencyHistogram().percentile(99) == 0);
}
