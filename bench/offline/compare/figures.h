// The figures `railbench compare` compares, read out of one results file: each one a
// value with the band of values its own run showed (its noise), whether more is better,
// and the subject that matches it with the same figure of another run.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace railbench::compare {

struct Figure {
  std::string subject;  // what was measured: "1M out-of-place", "send 4K rank0<->rank1 rail0", "node03 rail1"
  std::string metric;   // "busbw", "lat p99", "tx", ...
  std::string unit;     // "GB/s", "us"
  bool higher_better = true;
  double value = 0;
  // The run's own noise around `value` (bench/offline/compare/README.md): value +- k
  // robust standard deviations, or a tail percentile's neighbours.
  double lo = 0, hi = 0;
  std::string key() const { return subject + " | " + metric; }
};

// The bands of one distribution (lib/core/stats.h's Summary, as the JSON keeps it: count,
// min, max, mean, stdev, p50, p90, p99, p99_9).
struct Band {
  double lo = 0, hi = 0;
};
// p50's band: p50 +- k sigma, sigma estimated from the upper half, (p90 - p50) / 1.2816
// (the JSON keeps no p10; for normal data this is the standard deviation, and unlike
// stdev one stall among many iterations does not move it).
Band p50_band(const nlohmann::json& summary, double k);
// A tail percentile's band: its neighbours (p90..p99.9 for p99, p99..max for p99.9),
// widened to at least the percentile +- k sigma as for p50: a tail of a few samples
// moves with every stall.
Band p99_band(const nlohmann::json& summary, double k);
Band p999_band(const nlohmann::json& summary, double k);

// How wide the bands are, in (robust) standard deviations: bench/offline/compare/README.md, "The noise rule".
inline constexpr double kDefaultNoiseK = 3;

// Every figure of a results file of any measuring command (sendrecv, the collectives,
// kvcache, validate). Throws UsageError naming `path` when the file holds no results
// this version can read.
std::vector<Figure> figures_of(const nlohmann::json& doc, const std::string& path, double k = kDefaultNoiseK);

// The figures whose metric is one of `metrics` (all when it is empty). Throws
// UsageError for a name that no figure has, listing those there are.
std::vector<Figure> only_metrics(std::vector<Figure> figures, const std::vector<std::string>& metrics);

}  // namespace railbench::compare
