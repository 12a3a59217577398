#include "bench/commands/kvcache/kvserve_search.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

ProbePlan probe_plan(double warmup_s, double duration_s, uint64_t requests, const Slo& slo) {
  if (!std::isfinite(warmup_s) || warmup_s < 0)
    throw UsageError(fmt::format("--probe-warmup {} must be seconds 0 or above (e.g. 1)", warmup_s));
  if (!std::isfinite(duration_s) || duration_s <= 0)
    throw UsageError(fmt::format("--probe-duration {} must be seconds above 0 (e.g. 3)", duration_s));
  if (requests == 0) throw UsageError("--probe-requests 0: a probe needs requests to judge: give e.g. 300");
  ProbePlan p{warmup_s, duration_s, requests, false};
  // Below the percentile's own need the verdict would rest on the largest sample or two.
  const uint64_t need = std::max(min_samples(slo.percentile), kMinLoadRequests);
  if (p.requests < need) {
    p.requests = need;
    p.lengthened = true;
  }
  return p;
}

size_t probe_arrivals(double rate, double burstiness, uint64_t seed, const ProbePlan& plan, size_t pairs) {
  ArrivalClock clock(rate, burstiness, seed);
  const double end_s = plan.warmup_s + plan.duration_s;
  size_t n = 0, judged = 0;
  for (;;) {
    const double t = clock.next();
    ++n;
    if (t >= plan.warmup_s) ++judged;
    if (t >= end_s && judged >= plan.requests) break;
  }
  pairs = std::max<size_t>(pairs, 1);
  return (n + pairs - 1) / pairs * pairs;
}

double probe_seconds(double rate, const ProbePlan& plan) {
  return plan.warmup_s + std::max(plan.duration_s, rate > 0 ? static_cast<double>(plan.requests) / rate : 0);
}

int max_search_probes(double rel_tol) {
  return static_cast<int>(std::ceil(std::log2(1 / rel_tol)));
}

MaxRateResult find_max_rate(double capacity, const std::function<RatePoint(double)>& measure, double rel_tol) {
  MaxRateResult out;
  out.capacity = capacity;
  out.floor_rate = capacity / 16;
  if (!(capacity > 0)) return out;
  // lo: the highest rate met (0: none yet); hi: the lowest missed, capacity to begin with.
  // One probe a rate: each is long enough that its verdict is the rate's, not a draw's, and
  // a bisection's few probes are bounded in time where repeats are not.
  double lo = 0, hi = capacity;
  const int most = max_search_probes(rel_tol);
  while (hi - lo > rel_tol * capacity && static_cast<int>(out.curve.size()) < most) {
    const double mid = (lo + hi) / 2;
    if (mid < out.floor_rate) break;
    out.curve.push_back(measure(mid));
    if (out.curve.back().met) {
      lo = mid;
    } else {
      hi = mid;
      if (out.curve.back().hopeless && lo == 0) break;
    }
  }
  out.max_rate = std::min(lo, capacity);
  return out;
}

}  // namespace railbench
