// kvcache --find-max-rate's search on a synthetic latency model with a known capacity:
// an M/M/1 queue, whose total time at percentile p is ln(100/(100-p)) / (mu - rate), with
// seeded multiplicative noise; the answer must land near the rate where that crosses the
// SLO, whatever the start.
#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "bench/commands/kvcache/kvserve_search.h"

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

TEST_CASE("find-max-rate lands within 10% of an M/M/1 model's answer, from below and above", "[kvcache][serve]") {
  const Slo slo = parse_slo("p99:10ms");
  const double mu = 5000;
  const double want = mm1_max_rate(mu, slo);  // 5000 - 460.5
  for (double start : {100.0, 4000.0, 50000.0}) {
    for (uint64_t seed : {1, 2, 3}) {
      DYNAMIC_SECTION("start " << start << " seed " << seed) {
        const MaxRateResult r = find_max_rate(start, slo, mm1(mu, slo, 0.1, seed));
        CHECK(r.max_rate == Approx(want).epsilon(0.10));
        CHECK(r.max_rate < mu);  // never above what the model can carry
        CHECK(r.curve.size() >= 4);
        CHECK(r.curve.size() <= 40);
      }
    }
  }
}

TEST_CASE("find-max-rate reports 0 when no rate meets the SLO", "[kvcache][serve]") {
  const Slo slo = parse_slo("p99:1us");
  const MaxRateResult r = find_max_rate(1000, slo, mm1(5000, slo, 0, 1));
  CHECK(r.max_rate == 0);
  CHECK_FALSE(r.curve.empty());
}
