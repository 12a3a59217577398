// validate's bisection phase (config tests.bisection): the nodes split into two halves
// (first and second half of the run's node order, which on a multi-leaf rail is the
// leaf order), node i of one half paired with node i of the other, every pair of the
// cut streaming both ways at once on every rail at once. Pairwise tests load one link at
// a time; this loads the whole cut, as an all-to-all does. Two cuts: the same rail on
// both sides (the rail's leaves and the links between them), and, with 2+ rails, slot s
// to slot s+1 (through the spine: each leaf's uplink carries every node's cross-rail
// flow, so an F:1 uplink gives about 1/F). The arithmetic is here, apart from the traffic.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"

namespace railbench {

// (node of the first half, node of the second half); an odd count leaves the last
// node out (`rests`).
struct BisectionSplit {
  std::vector<std::pair<int, int>> pairs;
  int rests = -1;
};
BisectionSplit bisection_split(int nodes);

enum class BisectionCut { rail, cross_rail };
const char* to_string(BisectionCut cut);  // "rail", "cross-rail"

// One pair of the cut as measured: both directions at once, GB/s counting both.
struct BisectionPair {
  int node_a = 0, node_b = 0, rail_a = 0, rail_b = 0;
  double gbps = 0;  // 0: did not finish
};

// One rail's cut: achieved (the pairs' sum) over ideal (pairs x 2 directions x the
// slower rail's line rate).
struct BisectionRail {
  BisectionCut cut = BisectionCut::rail;
  int rail = 0;  // the first half's rail
  std::vector<BisectionPair> pairs;
  double achieved = 0, ideal = 0;
  double fraction() const { return ideal > 0 ? achieved / ideal : 0; }
};
BisectionRail summarize_cut(const SuConfig& config, BisectionCut cut, int rail, std::vector<BisectionPair> pairs);

// Below thresholds.bisection_min_fraction: FAIL, kind bisection, naming the rail, the
// cut and its weakest pair (no node is blamed: a cut is the fabric's).
std::vector<Finding> judge_bisection(const SuConfig& config, const std::vector<std::string>& node_names,
                                     const std::vector<BisectionRail>& cuts);

nlohmann::json to_json(const SuConfig& config, const std::vector<std::string>& node_names, const BisectionRail& cut);

}  // namespace railbench
