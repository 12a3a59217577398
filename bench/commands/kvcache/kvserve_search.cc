#include "bench/commands/kvcache/kvserve_search.h"

#include <algorithm>

namespace railbench {

MaxRateResult find_max_rate(double start, const Slo& slo, const std::function<RatePoint(double)>& measure,
                            double rel_tol, int repeats, int max_probes) {
  (void)slo;  // the callback judges each point against it; kept for the signature's meaning
  MaxRateResult out;
  int probes = 0;
  // A rate is met only if every repeat meets it: one lucky run under noise must not raise
  // the answer, while one unlucky run lowers it only by the tolerance.
  const auto met = [&](double rate) {
    for (int i = 0; i < repeats; ++i) {
      out.curve.push_back(measure(rate));
      ++probes;
      if (!out.curve.back().met) return false;
    }
    return true;
  };
  double lo = 0, hi = 0;  // lo: highest met; hi: lowest missed (0: none yet)
  double rate = start;
  while (probes < max_probes && (lo == 0 || hi == 0)) {
    if (met(rate)) {
      lo = std::max(lo, rate);
      if (hi == 0) rate *= 2;
    } else {
      hi = hi == 0 ? rate : std::min(hi, rate);
      if (lo == 0) rate /= 2;
    }
    if (rate < start / 1024) break;  // nothing meets it at any sensible rate
  }
  while (probes < max_probes && lo > 0 && hi > 0 && (hi - lo) > rel_tol * lo) {
    const double mid = (lo + hi) / 2;
    if (met(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  out.max_rate = lo;
  return out;
}

}  // namespace railbench
