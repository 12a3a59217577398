// GPCNeT's congestion impact factor: a victim metric measured alone and under
// aggressors, compared percentile by percentile so that a factor above 1 is always worse.
// Latency: congested / isolated at p50, p99, p99.9. Bandwidth (higher is better): the
// low tail is the bad one, so "p99" is the bandwidth that 99% of windows reached (the
// 1st percentile) and the factor is isolated / congested.
#pragma once

#include <span>

#include <nlohmann/json.hpp>

namespace railbench::congestion {

enum class Better { lower, higher };  // latency: lower; bandwidth: higher

// p50, the tail at 99% and 99.9% (nearest rank; the low tail when higher is better).
struct Tail {
  size_t count = 0;
  double p50 = 0, p99 = 0, p999 = 0;
};
Tail tail_of(std::span<const double> samples, Better better);

struct Impact {
  double p50 = 0, p99 = 0, p999 = 0;
};
// Factor per percentile; 0 where the isolated or congested figure is 0 (nothing measured).
Impact impact_of(const Tail& isolated, const Tail& congested, Better better);

nlohmann::json to_json(const Tail& t);
nlohmann::json to_json(const Impact& i);

}  // namespace railbench::congestion
