// kvcache --serve's per-request times kept in fixed-size, log-bucketed histograms instead
// of one record per request, so an hour of requests runs in flat memory and what the ranks
// exchange does not grow with the run. Pure logic, unit-tested against exact nearest-rank
// percentiles (tests/kvcache/test_serve_hist.cc).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lib/core/stats.h"

namespace railbench {

// Times in microseconds. Bucket i > 0 holds (kLowUs x g^(i-1), kLowUs x g^i] with
// g = (1 + a) / (1 - a), a = kRelativeError, and answers 2 kLowUs g^i / (g + 1): every
// value of the bucket is within a of it (the bound of DDSketch). Bucket 0 holds everything
// at or below kLowUs (1 ns), the last everything above kHighUs (2.8 hours). count, min,
// max, mean and stdev are exact; a percentile is the bucket of the nearest-rank sample,
// clamped to [min, max], so within kRelativeError of the exact nearest-rank value.
class LatencyHistogram {
 public:
  static constexpr double kRelativeError = 0.005;
  static constexpr double kLowUs = 1e-3;
  static constexpr double kHighUs = 1e10;

  LatencyHistogram();
  void add(double us);
  void merge(const LatencyHistogram& other);
  uint64_t count() const { return n_; }
  double percentile(double p) const;  // p in (0, 100]; 0 when empty
  Summary summary() const;            // p50, p90, p99, p99.9 as percentile()

  // Fixed size (buckets() + 5 words), so every rank's part of an all-gather is the same.
  void append_words(std::vector<double>& out) const;
  // Reads what append_words wrote at `at`, advancing it.
  static LatencyHistogram from_words(std::span<const double> words, size_t& at);
  static size_t buckets();

 private:
  size_t bucket(double us) const;
  std::vector<uint64_t> counts_;
  uint64_t n_ = 0;
  double min_ = 0, max_ = 0, mean_ = 0, m2_ = 0;  // m2_: sum of squared deviations (Welford, Chan to merge)
};

}  // namespace railbench
