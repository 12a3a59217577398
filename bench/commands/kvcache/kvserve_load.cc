#include "bench/commands/kvcache/kvserve_load.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

std::vector<double> arrival_times(double rate, double burstiness, uint64_t seed, size_t n) {
  check_serve_load(rate, burstiness);
  // mt19937_64 and gamma_distribution are specified well enough that every rank of one
  // job (one libstdc++) draws the same sequence; the prefill ranks rely on that.
  std::mt19937_64 gen(seed);
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  std::vector<double> out;
  out.reserve(n);
  double t = 0;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(t);
    t += gap(gen);
  }
  return out;
}

void check_serve_load(double rate, double burstiness) {
  if (!std::isfinite(rate) || rate <= 0)
    throw UsageError(fmt::format("--rate {} must be a number of requests per second above 0 (e.g. --rate 100)", rate));
  if (!std::isfinite(burstiness) || burstiness <= 0)
    throw UsageError(fmt::format(
        "--burstiness {} must be a number above 0: 1 is Poisson, below 1 burstier, above 1 more regular", burstiness));
}

Slo parse_slo(const std::string& text) {
  const auto bad = [&] {
    return UsageError(
        fmt::format("--slo '{}': expected pP:LIMIT with a unit, such as p99:50ms, p50:800us or p99.9:1s", text));
  };
  const auto colon = text.find(':');
  if (text.size() < 4 || text[0] != 'p' || colon == std::string::npos) throw bad();
  Slo s;
  s.text = text;
  try {
    size_t used = 0;
    const std::string pct = text.substr(1, colon - 1);
    s.percentile = std::stod(pct, &used);
    if (used != pct.size()) throw bad();
    const std::string lim = text.substr(colon + 1);
    const double v = std::stod(lim, &used);
    const std::string unit = lim.substr(used);
    const double scale = unit == "us" ? 1 : unit == "ms" ? 1e3 : unit == "s" ? 1e6 : -1;
    if (scale < 0) throw bad();
    s.limit_us = v * scale;
  } catch (const std::logic_error&) {  // stod's invalid_argument and out_of_range
    throw bad();
  }
  if (!(s.percentile > 0 && s.percentile <= 100) || !(s.limit_us > 0) || !std::isfinite(s.limit_us)) throw bad();
  return s;
}

ServeSummary summarize_serve(const std::vector<ServeSample>& samples, double span_s, double wall_s, uint64_t bytes,
                             const Slo* slo) {
  ServeSummary s;
  s.requests = samples.size();
  std::vector<double> v(samples.size());
  const auto column = [&](double ServeSample::*field) {
    for (size_t i = 0; i < samples.size(); ++i) v[i] = samples[i].*field;
    return summarize(v);
  };
  s.queue_us = column(&ServeSample::queue_us);
  s.transfer_us = column(&ServeSample::transfer_us);
  s.total_us = column(&ServeSample::total_us);
  const auto n = static_cast<double>(s.requests);
  // n requests span n-1 gaps; the offered rate is what the generator asked for.
  s.offered_rps = span_s > 0 && n > 1 ? (n - 1) / span_s : 0;
  s.carried_rps = wall_s > 0 ? n / wall_s : 0;
  s.offered_gbps = s.offered_rps * static_cast<double>(bytes) / 1e9;
  s.carried_gbps = s.carried_rps * static_cast<double>(bytes) / 1e9;
  s.overload = s.offered_rps > 0 && s.carried_rps < 0.9 * s.offered_rps;
  if (slo) {
    const auto within = std::count_if(samples.begin(), samples.end(),
                                      [&](const ServeSample& x) { return x.total_us <= slo->limit_us; });
    s.goodput = n > 0 ? static_cast<double>(within) / n : 0;
    std::sort(v.begin(), v.end());  // v holds the totals (the last column)
    s.slo_us = v.empty() ? 0 : percentile_sorted(v, slo->percentile);
    s.slo_met = !v.empty() && s.slo_us <= slo->limit_us;
  }
  return s;
}

}  // namespace railbench
