// What the validate section reads from a validate results document, in the shape the
// tables and heatmaps need: nodes, per rail matrices, findings by link.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/offline/report/sections.h"
#include "bench/offline/report/svg.h"
#include "bench/offline/report/validate_grid.h"

namespace railbench::report {

struct ValidateFinding {
  int number = 0;  // 1-based, the table's order
  std::string severity, kind, subject, reason;
  int node = -1, rail = -1;
};

struct ValidateRun {
  std::vector<std::string> nodes;  // node index -> name
  // The document's "rails" array (matrices, links, errors), not a copy: at 1,024 x 8 it
  // holds 40 M figures. The document outlives the run's section.
  const nlohmann::json* rails_ = nullptr;
  const nlohmann::json& rails() const;
  std::vector<ValidateFinding> findings;
  // (node, rail) -> indices into `findings` of those that blame that link
  std::map<std::pair<int, int>, std::vector<size_t>> by_link;
  nlohmann::json retests;                      // "retest_pairs"
  std::unordered_map<std::string, int> index;  // node name -> index

  static ValidateRun read(const nlohmann::json& doc);
  int node_index(const std::string& name) const;
  // More nodes than this and each rail is drawn as leaf x leaf blocks, a strip of nodes
  // and the full matrix of chosen leaf pairs (validate_summary.cc) instead of whole
  // node x node heatmaps: 64 x 64 is still a map a reader takes in at once.
  static constexpr size_t kDirectMatrixNodes = 64;
  bool aggregated() const { return nodes.size() > kDirectMatrixNodes; }
};

// The heatmaps of every rail, grouped by leaf: bandwidth, latency p50 and p99, and with
// a baseline the change of each link's bandwidth. `grids` are v's (read_rail_grids, in
// rail order), `base_grids` the baseline's. The cells of `worst` carry cell_anchor.
std::string validate_heatmaps(const RunContext& ctx, const ValidateRun& v, const std::vector<RailGrid>& grids,
                              const ValidateRun* base, const std::vector<RailGrid>& base_grids,
                              const std::vector<WorstLink>& worst);

// The aggregated view of a large SU: per rail the leaf x leaf summary, the per-node
// strip and the full matrices of the leaf pairs that hold a worst link or a failed pair.
std::string validate_summary(const RunContext& ctx, const ValidateRun& v, const std::vector<RailGrid>& grids,
                             const std::vector<WorstLink>& worst);

// validate's fabric phase (the results' "fabric" object): the fabric drawn with each
// link coloured by its verdict, the links with evidence against them, the ECMP balance.
// "" when the run has no fabric phase.
std::string fabric_section(const nlohmann::json& doc);

// The worst links, worst first, each linked to its cell.
std::string worst_links_table(const RunContext& ctx, const ValidateRun& v, const std::vector<RailGrid>& grids,
                              const std::vector<WorstLink>& worst);

// Where a finding on (node, rail) links to: its row in the bandwidth heatmap, or in the
// aggregated view its node's cell in the node strip.
std::string link_anchor(const RunContext& ctx, const ValidateRun& v, int rail, int node);
// The id of the cell a -> b on `rail` (a bandwidth heatmap's or a leaf pair's).
std::string cell_anchor(const RunContext& ctx, int rail, int a, int b);
// Classes and hover lines for a cell whose row or column link a finding blames.
void mark_findings(const ValidateRun& v, int rail, int a, int b, HeatCell& c);
// "FAIL #1" / "WARN #3" for the worst finding that blames node a or b on `rail`; "" if none.
std::string finding_verdict(const ValidateRun& v, int rail, int a, int b);

}  // namespace railbench::report
