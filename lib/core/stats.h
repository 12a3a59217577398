// Exact summary statistics of a sample set. Percentiles are nearest-rank on the
// sorted samples: p-th percentile = the ceil(p/100 * N)-th smallest value (1-based),
// so every reported percentile is a value that was actually measured.
#pragma once

#include <span>
#include <vector>

namespace railbench {

struct Summary {
  size_t count = 0;
  double min = 0, max = 0, mean = 0, stdev = 0;  // stdev: sample (N-1) standard deviation
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0;
  bool operator==(const Summary&) const = default;
};

// Nearest-rank percentile of already sorted samples; p in (0, 100].
double percentile_sorted(std::span<const double> sorted, double p);

Summary summarize(std::span<const double> samples);

// The median of a set of values (links of a rail, windows of a link, pairs of a run): the
// middle of the sorted values, the mean of the two middle values for an even count, 0 for
// none. Unlike the p50 of a Summary it need not be a measured value: with four links of
// which one is bad, the bad one can never become the reference it is judged against.
double median(std::vector<double> values);

// Scaled median absolute deviation, 1.4826 x median(|x - median(values)|): a spread that a
// few outliers do not move; 1.4826 makes it the standard deviation of normal data.
double scaled_mad(const std::vector<double>& values);

// Element-wise maximum over ranks: samples_by_rank[r][i] is rank r's time of iteration
// i; the result's i-th value is the slowest rank's time, the iteration's time.
std::vector<double> max_over_ranks(const std::vector<std::vector<double>>& samples_by_rank);

}  // namespace railbench
