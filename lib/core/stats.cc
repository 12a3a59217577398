#include "lib/core/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

namespace railbench {

double percentile_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0.0;
  // ceil(p/100 * N) in exact integer arithmetic on per-mille, to avoid 0.999 * 1000
  // rounding to 999.0000001 and picking the wrong rank.
  const auto n = static_cast<long long>(sorted.size());
  const auto permille = std::llround(p * 10.0);
  long long rank = (permille * n + 999) / 1000;
  rank = std::clamp(rank, 1LL, n);
  return sorted[static_cast<size_t>(rank - 1)];
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const size_t n = values.size(), mid = n / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  if (n % 2) return values[mid];
  // The lower middle is the largest value below the upper one, which nth_element left in
  // front of it.
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + values[mid]) / 2;
}

double scaled_mad(const std::vector<double>& values) {
  const double center = median(values);
  std::vector<double> deviation;
  deviation.reserve(values.size());
  for (double x : values) deviation.push_back(std::fabs(x - center));
  return 1.4826 * median(std::move(deviation));
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  double sum = 0;
  for (double v : sorted) sum += v;
  s.mean = sum / static_cast<double>(s.count);
  if (s.count > 1) {
    double sq = 0;
    for (double v : sorted) sq += (v - s.mean) * (v - s.mean);
    s.stdev = std::sqrt(sq / static_cast<double>(s.count - 1));
  }
  s.p50 = percentile_sorted(sorted, 50);
  s.p90 = percentile_sorted(sorted, 90);
  s.p99 = percentile_sorted(sorted, 99);
  s.p999 = percentile_sorted(sorted, 99.9);
  return s;
}

std::vector<double> max_over_ranks(const std::vector<std::vector<double>>& samples_by_rank) {
  std::vector<double> out;
  for (const auto& rank_samples : samples_by_rank) {
    if (out.size() < rank_samples.size()) out.resize(rank_samples.size(), 0.0);
    for (size_t i = 0; i < rank_samples.size(); ++i) out[i] = std::max(out[i], rank_samples[i]);
  }
  return out;
}

}  // namespace railbench
