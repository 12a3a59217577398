#include "bench/commands/validate/cabling.h"

#include <fmt/format.h>

namespace railbench {

std::string leaf_name(const SuConfig& config, int rail) {
  const std::string& leaf = config.rails.at(rail).leaf;
  return leaf.empty() ? fmt::format("rail{}'s leaf", rail) : leaf;
}

namespace {

// The rail whose leaf the port reaches instead of its own: -1 when it reaches its own
// rail's nodes (cabled right) or nobody (dead: the link checks' to name).
int wrong_leaf(const PortReach& p, int own_rail) {
  if (!p.probed || own_rail >= static_cast<int>(p.answered.size()) || p.answered[own_rail] > 0) return -1;
  int best = -1;
  for (int b = 0; b < static_cast<int>(p.answered.size()); ++b)
    if (p.answered[b] > 0 && (best < 0 || p.answered[b] > p.answered[best])) best = b;
  return best;
}

}  // namespace

std::vector<Finding> judge_cabling(const SuConfig& config, const std::vector<std::string>& node_names,
                                   const ReachMatrix& reach) {
  std::vector<Finding> out;
  const int rails = config.num_rails();
  for (int n = 0; n < static_cast<int>(reach.size()); ++n) {
    std::vector<int> wrong(rails, -1);
    for (int r = 0; r < rails && r < static_cast<int>(reach[n].size()); ++r) wrong[r] = wrong_leaf(reach[n][r], r);
    std::vector<bool> named(rails, false);
    for (int r = 0; r < rails; ++r) {
      const int b = wrong[r];
      if (b < 0 || named[r]) continue;
      named[r] = true;
      Finding f;
      f.kind = FindingKind::cabling;
      f.expected = 1;
      f.node = n;
      f.rail = r;
      if (wrong[b] == r && !named[b]) {
        // Each port reaches the other's leaf: one fault (two cables crossed), one finding.
        named[b] = true;
        f.code = reason::kCableSwapped;
        f.subject = node_names.at(n);
        f.reason = fmt::format(
            "rail{} and rail{} appear swapped (rail{} reaches {}'s nodes, rail{} reaches {}'s): swap the two cables "
            "back, the cables themselves work",
            r, b, r, leaf_name(config, b), b, leaf_name(config, r));
      } else {
        f.code = reason::kCableWrongLeaf;
        f.subject = link_name(config, node_names, {n, r});
        f.reason =
            fmt::format("cabled to {} (expected {}): it reaches {}'s nodes and none of {}'s; move the cable to {}",
                        leaf_name(config, b), leaf_name(config, r), leaf_name(config, b), leaf_name(config, r),
                        leaf_name(config, r));
      }
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace railbench
