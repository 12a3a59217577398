#include "bench/commands/congestion/impact.h"

#include <algorithm>
#include <vector>

#include "lib/core/stats.h"

namespace railbench::congestion {

Tail tail_of(std::span<const double> samples, Better better) {
  Tail t;
  t.count = samples.size();
  if (samples.empty()) return t;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  // The bad tail of a bandwidth is its low end: the 1st and 0.1th percentiles.
  const bool low = better == Better::higher;
  t.p50 = percentile_sorted(sorted, 50);
  t.p99 = percentile_sorted(sorted, low ? 1 : 99);
  t.p999 = percentile_sorted(sorted, low ? 0.1 : 99.9);
  return t;
}

namespace {
double factor(double isolated, double congested, Better better) {
  if (isolated <= 0 || congested <= 0) return 0;
  return better == Better::lower ? congested / isolated : isolated / congested;
}
}  // namespace

Impact impact_of(const Tail& isolated, const Tail& congested, Better better) {
  return Impact{factor(isolated.p50, congested.p50, better), factor(isolated.p99, congested.p99, better),
                factor(isolated.p999, congested.p999, better)};
}

nlohmann::json to_json(const Tail& t) {
  return {{"count", t.count}, {"p50", t.p50}, {"p99", t.p99}, {"p99_9", t.p999}};
}

nlohmann::json to_json(const Impact& i) {
  return {{"p50", i.p50}, {"p99", i.p99}, {"p99_9", i.p999}};
}

}  // namespace railbench::congestion
