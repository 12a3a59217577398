// kvcache --find-max-rate: the highest offered rate whose latency meets an SLO. The
// system's capacity (what it carries at saturation) is measured first; then rates between
// a sixteenth of it and it are bisected, each probe long enough to reach steady state and
// judged by the serving rules (kvserve_load.h: carried vs arrived, enough samples for the
// percentile). Pure logic, tested on a synthetic latency model and on the judging rules
// with real numbers (tests/kvcache/test_serve_search.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/commands/kvcache/kvserve_load.h"

namespace railbench {

// How long each probe runs: a warm-up that is not judged, then a judged window of at least
// `duration_s` holding at least `requests` arrivals (the larger decides, by the rate).
struct ProbePlan {
  double warmup_s = 1;
  double duration_s = 3;
  uint64_t requests = 300;
  bool lengthened = false;  // `requests` raised to what the SLO's percentile needs
};

// The plan for `slo`: the requests raised to min_samples(P) (p99.9: 1,000) where fewer
// were asked for, and then `lengthened` set. UsageError on a warm-up below 0, a duration
// not above 0 or no requests, naming the option.
ProbePlan probe_plan(double warmup_s, double duration_s, uint64_t requests, const Slo& slo);

// Arrivals of a probe at `rate` (the same seed draws the same times as the run's source):
// every arrival up to the first that is both at or after warmup_s + duration_s and at least
// `requests` into the judged window, rounded up to whole rounds over `pairs`.
size_t probe_arrivals(double rate, double burstiness, uint64_t seed, const ProbePlan& plan, size_t pairs);

struct RatePoint {
  double rate = 0;        // offered (asked for), requests/s
  double arrival = 0;     // measured: arrivals in the judged window / window
  double carried = 0;     // acks in the judged window / window
  double p50_us = 0;      // total time
  double slo_us = 0;      // total time at the SLO's percentile
  uint64_t requests = 0;  // judged
  bool overload = false;  // carried below kCarriedShare of arrived
  bool met = false;       // judge_run: load and percentile judged, carried, within the limit
  bool hopeless = false;  // missed on the transfer time alone (no queueing): a lower rate will not meet it
  std::string why;        // what failed it; "" when met
};

// The search: `capacity` bounds it (a rate at capacity cannot be carried with a queue
// that stays bounded, so it counts as missed unprobed) and 0 starts it. Bisects [lo, hi]
// at the middle: met raises lo, missed lowers hi, until hi - lo is at most rel_tol x
// capacity. Rates below capacity / 16 are not probed: a search that misses down to there
// answers 0. With rel_tol 0.05 that is 5 probes when any rate meets the SLO, 4 when none;
// fewer when a probe is `hopeless` (the search stops there: the transfer alone misses the
// limit, and a probe at a lower rate would take longer for the same answer).
struct MaxRateResult {
  double capacity = 0;
  double max_rate = 0;           // the highest probed rate that met; 0 if none did; never above capacity
  double floor_rate = 0;         // the lowest rate the search would probe (capacity / 16)
  std::vector<RatePoint> curve;  // every probe, in the order measured
};
MaxRateResult find_max_rate(double capacity, const std::function<RatePoint(double)>& measure, double rel_tol = 0.05);

// The most probes find_max_rate makes for `rel_tol` (the plan the search prints).
int max_search_probes(double rel_tol = 0.05);

// Seconds of arrivals one probe at `rate` takes: warm-up and the judged window, which is
// the longer of duration_s and requests / rate (the plan the search prints).
double probe_seconds(double rate, const ProbePlan& plan);

}  // namespace railbench
