// kvcache --find-max-rate's search on a synthetic latency model with a known capacity:
// an M/M/1 queue, whose total time at percentile p is ln(100/(100-p)) / (mu - rate), with
// seeded multiplicative noise; the answer must land near the rate where that crosses the
// SLO, below the capacity, in a bounded number of probes. And each probe's plan: long
// enough for the percentile, with a warm-up, at every rate.
#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "bench/commands/kvcache/kvserve_search.h"
#include "lib/core/errors.h"

using namespace railbench;

namespace {

// mu: service rate (req/s). Returns the analytical highest rate meeting `slo`.
double mm1_max_rate(double mu, const Slo& slo) {
  const double q = std::log(100.0 / (100.0 - slo.percentile));
  return mu - q / (slo.limit_us * 1e-6);
}

std::function<RatePoint(double)> mm1(double mu, const Slo& slo, double noise, uint64_t seed) {
  auto gen = std::make_shared<std::mt19937_64>(seed);
  return [=](double rate) {
    std::uniform_real_distribution<double> u(1 - noise, 1 + noise);
    RatePoint p;
    p.rate = rate;
    const double q = std::log(100.0 / (100.0 - slo.percentile));
    const bool stable = rate < mu;
    p.slo_us = stable ? q / (mu - rate) * 1e6 * u(*gen) : 1e12;
    p.p50_us = stable ? std::log(2.0) / (mu - rate) * 1e6 : 1e12;
    p.carried = stable ? rate : mu;
    p.met = p.slo_us <= slo.limit_us;
    return p;
  };
}

}  // namespace

TEST_CASE("find-max-rate lands within 10% of an M/M/1 model's answer, below its capacity, in 5 probes",
          "[kvcache][serve]") {
  const Slo slo = parse_slo("p99:10ms");
  const double mu = 5000;
  const double want = mm1_max_rate(mu, slo);  // 5000 - 460.5
  for (uint64_t seed : {1, 2, 3}) {
    DYNAMIC_SECTION("seed " << seed) {
      const MaxRateResult r = find_max_rate(mu, mm1(mu, slo, 0.1, seed));
      CHECK(r.max_rate == Approx(want).epsilon(0.10));
      CHECK(r.max_rate < mu);  // never above what the model can carry
      CHECK(r.capacity == mu);
      CHECK(r.curve.size() == 5);
      CHECK(static_cast<int>(r.curve.size()) <= max_search_probes());
      for (const RatePoint& p : r.curve) CHECK(p.rate < mu);
    }
  }
}

TEST_CASE("find-max-rate never answers above the capacity, even when every probe meets", "[kvcache][serve]") {
  const MaxRateResult r = find_max_rate(1000, [](double rate) {
    RatePoint p;
    p.rate = rate;
    p.met = true;
    return p;
  });
  CHECK(r.max_rate < 1000);
  CHECK(r.max_rate >= 950);  // within the 5% tolerance of it
}

TEST_CASE("find-max-rate reports 0 when no rate down to capacity / 16 meets the SLO", "[kvcache][serve]") {
  const Slo slo = parse_slo("p99:1us");
  const MaxRateResult r = find_max_rate(5000, mm1(5000, slo, 0, 1));
  CHECK(r.max_rate == 0);
  CHECK(r.curve.size() == 4);
  CHECK(r.floor_rate == Approx(5000.0 / 16));
  for (const RatePoint& p : r.curve) CHECK(p.rate >= r.floor_rate);
  CHECK(find_max_rate(0, mm1(5000, slo, 0, 1)).curve.empty());  // no capacity measured: nothing to probe
}

TEST_CASE("a probe plan holds the percentile's samples and lasts its duration at every rate", "[kvcache][serve]") {
  const Slo p99 = parse_slo("p99:100ms"), p999 = parse_slo("p99.9:100ms");
  const ProbePlan plan = probe_plan(1, 3, 300, p99);
  CHECK_FALSE(plan.lengthened);
  CHECK(plan.requests == 300);
  // p99.9 needs 1,000: the nearest rank of 300 would be the largest sample.
  const ProbePlan longer = probe_plan(1, 3, 300, p999);
  CHECK(longer.lengthened);
  CHECK(longer.requests == 1000);
  CHECK(probe_plan(1, 3, 20, p99).requests == 100);
  CHECK_THROWS_WITH(probe_plan(-1, 3, 300, p99), Catch::Contains("--probe-warmup -1 must be"));
  CHECK_THROWS_WITH(probe_plan(1, 0, 300, p99), Catch::Contains("--probe-duration 0 must be"));
  CHECK_THROWS_AS(probe_plan(1, 3, 0, p99), UsageError);
  for (double rate : {5.0, 100.0, 2000.0}) {
    DYNAMIC_SECTION("rate " << rate) {
      const size_t n = probe_arrivals(rate, 1, 7, plan, 2);
      CHECK(n % 2 == 0);
      // Count what the same draws put in the judged window.
      ArrivalClock clock(rate, 1, 7);
      size_t judged = 0;
      double last = 0;
      for (size_t i = 0; i < n; ++i) {
        last = clock.next();
        if (last >= plan.warmup_s) ++judged;
      }
      CHECK(judged >= plan.requests);
      CHECK(last >= plan.warmup_s + plan.duration_s);
      // Not much more than needed: the larger bound decides.
      const double expect = rate * probe_seconds(rate, plan);
      CHECK(static_cast<double>(n) == Approx(expect).epsilon(0.2));
    }
  }
  CHECK(probe_seconds(1000, plan) == Approx(4));  // 3 s holds 3,000 requests
  CHECK(probe_seconds(50, plan) == Approx(7));    // 300 requests take 6 s
}

TEST_CASE("find-max-rate stops at a probe whose transfer alone misses the limit", "[kvcache][serve]") {
  int probes = 0;
  const MaxRateResult r = find_max_rate(100, [&](double rate) {
    ++probes;
    RatePoint p;
    p.rate = rate;
    p.hopeless = true;  // a lower rate would only take longer to say the same
    return p;
  });
  CHECK(probes == 1);
  CHECK(r.max_rate == 0);
  CHECK(r.curve.front().rate == 50);
}
