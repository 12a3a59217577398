// The figures `railbench compare` compares, read out of one results file: each one a
// value with the band of values its own run showed (its noise), whether more is better,
// and the subject that matches it with the same figure of another run.
#pragma once

#include <map>
#include <string>
#include <tuple>
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

// Every figure of a results file, by its result kind (bench/kinds/result_kind.h). Throws
// UsageError naming `path` when its kind has no figures or a field is missing.
std::vector<Figure> figures_of(const nlohmann::json& doc, const std::string& path, double k = kDefaultNoiseK);

// The figures of each kind of results file, named by the kinds' registrations
// (bench/commands/<family>/*_kind*.cc): they append to `out`, each with its band of k
// (robust) standard deviations, and throw nlohmann::json::exception on a missing field.
// allreduce, allgather, reducescatter, alltoall: busbw and time p99 per size and placement.
void collective_figures(const nlohmann::json& doc, double k, std::vector<Figure>& out);
// Bandwidth p50 per direction and latency p50, p99, p99.9 per size, pair and rail.
void sendrecv_figures(const nlohmann::json& doc, double k, std::vector<Figure>& out);
// GB/s and request time p50, p99, p99.9 per mode and token count.
void kvcache_figures(const nlohmann::json& doc, double k, std::vector<Figure>& out);
// workload: step time p50 and p99, exposed communication p50 (lower is better).
void workload_figures(const nlohmann::json& doc, double k, std::vector<Figure>& out);
// tx, rx, lat p50 and p99 per link (node x rail), banded by its partners and its rail.
void validate_figures(const nlohmann::json& doc, double k, std::vector<Figure>& out);

// The figures whose metric is one of `metrics` (all when it is empty). Throws
// UsageError for a name that no figure has, listing those there are.
std::vector<Figure> only_metrics(std::vector<Figure> figures, const std::vector<std::string>& metrics);

// Of a validate file's rail_pairs, the records validate_figures reads a value from: for
// each link and figure, the pair test with its lowest and the one with its highest value
// (the first of equals). A 1,024 x 8 file's 4 M records as JSON values take GBs; these
// are at most 8 per link and give the same figures. add() each record in file order.
class ValidatePairKeeper {
 public:
  void add(const nlohmann::json& pair);
  // The records kept, in file order.
  nlohmann::json kept() const;

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  struct Side {
    size_t id = kNone;
    double value = 0;
  };
  struct Slot {
    Side lo, hi;
  };
  void release(size_t id);
  size_t next_id_ = 0;
  std::map<std::tuple<int, int, int>, Slot> slots_;  // rail, node, figure
  std::map<size_t, int> refs_;                       // record -> slots holding it
  std::map<size_t, nlohmann::json> records_;         // the records held, by their place in the file
};

}  // namespace railbench::compare
