// Results as metrics for the fleet's monitoring: the Prometheus text exposition format
// that node_exporter's textfile collector reads (one gauge per figure, labels naming
// the node, rail, leaf and peer), or OpenMetrics (the same, with # UNIT and # EOF).
// Names follow Prometheus conventions: a railbench_ prefix, base units in the name
// (_bytes_per_second, _seconds), no units elsewhere.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace railbench {

enum class MetricsFormat { prometheus, openmetrics };

// "prometheus" or "openmetrics"; throws UsageError naming both.
MetricsFormat parse_metrics_format(const std::string& s);

struct MetricsOptions {
  // Per-pair series (node x peer per rail): n^2 of them, so off unless asked for. A
  // 1,024-node SU has a million pairs per rail, more than a Prometheus wants per scrape.
  bool pairs = false;
};

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class MetricsText {
 public:
  // Declares a gauge family (once; a second declaration must agree). `unit` is the
  // OpenMetrics unit and must end the name ("seconds", "bytes_per_second"; empty: none).
  // Throws std::logic_error for a name Prometheus would refuse: the names are ours.
  void gauge(const std::string& name, const std::string& help, const std::string& unit = "");
  // One sample of a declared family; a value that is not finite (a missing figure) is
  // left out rather than exported as NaN, which would read as a measurement.
  void sample(const std::string& name, const MetricLabels& labels, double value);
  std::string render(MetricsFormat format) const;

 private:
  struct Family {
    std::string help, unit;
    std::vector<std::string> samples;  // "{labels} value"
  };
  std::vector<std::string> order_;
  std::map<std::string, Family> families_;
};

// The run's own series, from the header every results file has: railbench_run_info
// (command, version, commit, status, transport), the run's start and end as Unix
// timestamps, its ranks and hosts, and its verdict as a state set where it has one.
void run_metrics(const nlohmann::json& doc, MetricsText& out);

// Readers for the kinds' parts: a running document has nulls where later steps will
// write, and these see a null, a missing field or a non-object as nothing.
const nlohmann::json& field_of(const nlohmann::json& j, const char* key);
std::string text_of(const nlohmann::json& j, const char* key);  // "" unless a string

// Label helpers for the kinds: a rank's host from the document's world ("" if absent).
std::string rank_host(const nlohmann::json& doc, int rank);

}  // namespace railbench
