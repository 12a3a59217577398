// kvcache --find-max-rate: the highest offered rate whose latency meets an SLO, searched
// over a measuring callback, pure logic so that it is tested on a synthetic latency model
// (tests/kvcache/test_serve_search.cc).
#pragma once

#include <functional>
#include <vector>

#include "bench/commands/kvcache/kvserve_load.h"

namespace railbench {

struct RatePoint {
  double rate = 0;     // offered, requests/s
  double p50_us = 0;   // total time
  double slo_us = 0;   // total time at the SLO's percentile
  double carried = 0;  // requests/s
  bool met = false;    // slo_us within the limit and carried >= 90% of offered
};

struct MaxRateResult {
  double max_rate = 0;           // highest rate measured meeting the SLO; 0 if none did
  std::vector<RatePoint> curve;  // every probe, in the order measured
};

// Starts at `start`: doubles while the SLO holds (at most `max_probes` probes in all),
// halves while it does not, then bisects between the highest rate met and the lowest
// missed until they are within `rel_tol` of each other. Noise: a rate counts as met only
// when `repeats` measurements all meet it, and a miss above a met rate narrows the
// bracket only there (a later met rate above an earlier miss is not believed).
MaxRateResult find_max_rate(double start, const Slo& slo, const std::function<RatePoint(double)>& measure,
                            double rel_tol = 0.05, int repeats = 2, int max_probes = 40);

}  // namespace railbench
