#include "bench/commands/validate/burn_in_links.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "lib/core/stats.h"

namespace railbench {

namespace {

std::string link_label(const std::vector<std::string>& node_names, int node, int rail) {
  return fmt::format("{} rail{}", node_names.at(static_cast<size_t>(node)), rail);
}

// Bytes a pair test's bandwidth streams move: a->b, b->a and both at once, each a
// warm-up window and the timed ones (bench/commands/validate/pair_runner.cc).
double pair_test_bytes(const SuTests& t) {
  return static_cast<double>(t.bw_bytes) * t.bw_window * (t.bw_iters + 1) * 4;
}

}  // namespace

std::string log_rail_window(BurnInLog& log, const SuConfig& c, const std::vector<std::string>& node_names,
                            const std::vector<PairResult>& window) {
  std::map<std::pair<int, int>, std::vector<double>> rates;  // (rail, node) -> its pair tests' GB/s
  const double bytes = pair_test_bytes(c.tests);
  for (const auto& p : window) {
    if (p.phase != PairPhase::rail) continue;
    const double gbps = p.ok && p.test_s > 0 ? bytes / p.test_s / 1e9 : 0;
    rates[{p.rail_a, p.node_a}].push_back(gbps);
    rates[{p.rail_b, p.node_b}].push_back(gbps);
  }
  double lo = 0, hi = 0;
  std::string lowest;
  for (auto& [key, v] : rates) {
    const double typical = median(std::move(v));
    const std::string label = link_label(node_names, key.second, key.first);
    log.add(label, fmt::format("rail{}", key.first), "GB/s", typical);
    if (lowest.empty() || typical < lo) lo = typical, lowest = label;
    hi = std::max(hi, typical);
  }
  if (lowest.empty()) return "no pair tests";
  return fmt::format("links {:.3f} .. {:.3f} GB/s, lowest {}", lo, hi, lowest);
}

void flag_link_downs(BurnInLog& log, const std::vector<std::string>& node_names,
                     const std::vector<std::vector<LinkCounters>>& from,
                     const std::vector<std::vector<LinkCounters>>& to) {
  for (size_t n = 0; n < from.size() && n < to.size(); ++n)
    for (size_t r = 0; r < from[n].size() && r < to[n].size(); ++r)
      if (link_downs(from[n][r], to[n][r]) > 0)
        log.flag(link_label(node_names, static_cast<int>(n), static_cast<int>(r)), "the link went down");
}

std::vector<Finding> burn_in_findings(const BurnInLog& log, const SuConfig& c,
                                      const std::vector<std::string>& node_names) {
  std::map<std::string, LinkId> ids;
  for (int n = 0; n < static_cast<int>(node_names.size()); ++n)
    for (int r = 0; r < c.num_rails(); ++r) ids[link_label(node_names, n, r)] = LinkId{n, r};
  std::vector<Finding> out;
  for (const auto& l : log.summarize()) {
    auto it = ids.find(l.link);
    if (!l.intermittent() || it == ids.end()) continue;
    Finding f;
    f.severity = Severity::fail;
    f.kind = FindingKind::intermittent;
    f.code = reason::kLinkBurnInDips;
    f.subject = link_name(c, node_names, it->second);
    f.reason = "burn-in: " + l.reason(log.times());
    f.measured = std::isnan(l.worst_value) ? 0 : l.worst_value;
    f.expected = l.reference;
    f.unit = l.unit;
    f.node = it->second.node;
    f.rail = it->second.rail;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace railbench
