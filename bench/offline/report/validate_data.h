// What the validate section reads from a validate results document, in the shape the
// tables and heatmaps need: nodes, per rail matrices, findings by link.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/offline/report/sections.h"

namespace railbench::report {

struct ValidateFinding {
  int number = 0;  // 1-based, the table's order
  std::string severity, kind, subject, reason;
  int node = -1, rail = -1;
};

struct ValidateRun {
  std::vector<std::string> nodes;  // node index -> name
  nlohmann::json rails;            // the "rails" array (matrices, links, errors)
  std::vector<ValidateFinding> findings;
  // (node, rail) -> indices into `findings` of those that blame that link
  std::map<std::pair<int, int>, std::vector<size_t>> by_link;
  nlohmann::json retests;  // "retest_pairs"

  static ValidateRun read(const nlohmann::json& doc);
  int node_index(const std::string& name) const;
};

// The heatmaps of every rail, grouped by leaf: bandwidth, latency p50 and p99, and with
// a baseline the change of each link's bandwidth.
std::string validate_heatmaps(const RunContext& ctx, const ValidateRun& v, const ValidateRun* base);

// The id of the bandwidth heatmap row of `node` on `rail`: where a finding links to.
std::string link_anchor(const RunContext& ctx, int rail, int node);

}  // namespace railbench::report
