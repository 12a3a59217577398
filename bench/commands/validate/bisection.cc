#include "bench/commands/validate/bisection.h"

#include <algorithm>

#include <fmt/format.h>

namespace railbench {

BisectionSplit bisection_split(int nodes) {
  BisectionSplit s;
  const int half = nodes / 2;
  for (int i = 0; i < half; ++i) s.pairs.emplace_back(i, half + i);
  if (nodes % 2 == 1) s.rests = nodes - 1;
  return s;
}

const char* to_string(BisectionCut cut) {
  return cut == BisectionCut::rail ? "rail" : "cross-rail";
}

BisectionRail summarize_cut(const SuConfig& config, BisectionCut cut, int rail, std::vector<BisectionPair> pairs) {
  BisectionRail r;
  r.cut = cut;
  r.rail = rail;
  for (const auto& p : pairs) {
    r.achieved += p.gbps;
    const double line = std::min(line_gbytes(config.rails.at(p.rail_a)), line_gbytes(config.rails.at(p.rail_b)));
    r.ideal += 2 * line;
  }
  r.pairs = std::move(pairs);
  return r;
}

std::vector<Finding> judge_bisection(const SuConfig& config, const std::vector<std::string>& node_names,
                                     const std::vector<BisectionRail>& cuts) {
  std::vector<Finding> out;
  const double need = config.thresholds.bisection_min_fraction;
  for (const auto& c : cuts) {
    if (c.pairs.empty() || c.fraction() >= need) continue;
    const auto weakest = std::min_element(
        c.pairs.begin(), c.pairs.end(), [](const BisectionPair& a, const BisectionPair& b) { return a.gbps < b.gbps; });
    const std::string where = c.cut == BisectionCut::rail
                                  ? fmt::format("rail{} ({})", c.rail, config.rails[c.rail].leaf)
                                  : fmt::format("rail{} -> rail{} (through the spine)", c.rail, weakest->rail_b);
    const char* code = c.cut == BisectionCut::rail ? reason::kBisectionRailLow : reason::kBisectionCrossRailLow;
    out.push_back(coded({Severity::fail, FindingKind::bisection, fmt::format("{} {} cut", where, to_string(c.cut)),
                         fmt::format("{} pairs at once carried {:.3f} GB/s of {:.3f} ({:.0f}%, need {:.0f}%: "
                                     "thresholds.bisection_min_fraction); weakest {} <-> {} {:.3f} GB/s: {}",
                                     c.pairs.size(), c.achieved, c.ideal, 100 * c.fraction(), 100 * need,
                                     node_names.at(weakest->node_a), node_names.at(weakest->node_b), weakest->gbps,
                                     c.cut == BisectionCut::rail ? "the rail's leaves cannot carry every node at once"
                                                                 : "the leaf uplinks into the spine are short of the "
                                                                   "nodes below them (oversubscribed, or a link down)"),
                         c.fraction(), need, "x"},
                        code));
  }
  return out;
}

nlohmann::json to_json(const SuConfig& config, const std::vector<std::string>& node_names, const BisectionRail& cut) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& p : cut.pairs) {
    pairs.push_back({{"node_a", node_names.at(p.node_a)},
                     {"rail_a", p.rail_a},
                     {"node_b", node_names.at(p.node_b)},
                     {"rail_b", p.rail_b},
                     {"bidir_gbs", p.gbps}});
  }
  return {{"cut", to_string(cut.cut)},
          {"rail", cut.rail},
          {"leaf", config.rails.at(cut.rail).leaf},
          {"achieved_gbs", cut.achieved},
          {"ideal_gbs", cut.ideal},
          {"fraction", cut.fraction()},
          {"pairs", pairs}};
}

}  // namespace railbench
