#include "bench/commands/validate/baseline.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/core/stats.h"
#include "lib/results/read.h"

namespace railbench {

using nlohmann::json;

ValidateBaseline validate_baseline_from_json(const json& doc, const std::string& path, const SuConfig& config) {
  auto refuse = [&](const std::string& why) { throw UsageError(fmt::format("--baseline '{}': {}", path, why)); };
  if (doc.value("command", "") != "validate")
    refuse(fmt::format("it holds results of '{}', not of validate: give the --json of an accepted validate run",
                       doc.value("command", "?")));
  if (doc.value("verdict", "") != "PASS")
    refuse(fmt::format("that run's verdict is {}, not PASS: accept a run that passed (or fix the SU first)",
                       doc.value("verdict", "none")));
  if (!doc.contains("rails") || !doc.at("rails").is_array())
    refuse("it has no per-rail figures (an --inventory-only run?): give a run that sent traffic");
  ValidateBaseline b{path, {}};
  try {
    const json& rails = doc.at("rails");
    if (static_cast<int>(rails.size()) != config.num_rails())
      refuse(fmt::format("it has {} rails, the config {} has {}: a baseline of another SU?", rails.size(), config.path,
                         config.num_rails()));
    for (const auto& rail : rails) {
      const int r = rail.at("rail").get<int>();
      for (const auto& l : rail.at("links")) {
        if (l.at("pairs").get<int>() - l.at("failed").get<int>() <= 0) continue;
        b.links[{l.at("node").get<std::string>(), r}] = {l.at("tx_gbs").get<double>(), l.at("rx_gbs").get<double>()};
      }
    }
  } catch (const json::exception& e) {
    refuse(fmt::format("a per-rail field is missing or mistyped ({})", e.what()));
  }
  return b;
}

ValidateBaseline load_validate_baseline(const std::string& path, const SuConfig& config) {
  // The pair records repeat what the per-rail links hold: skipped, so an SU's file of
  // GBs (every rail pair of 1,024 nodes) is read as a baseline too.
  const auto doc = read_results_file(path, "--baseline", {{"rail_pairs", [](const nlohmann::json&) {}}});
  return validate_baseline_from_json(doc, path, config);
}

namespace {

struct Judged {
  const LinkStats* link;
  double ratio;  // the worse direction, now / accepted
  double now, then;
  const char* dir;
};

}  // namespace

int judge_against_baseline(const SuConfig& config, const std::vector<std::string>& node_names,
                           const std::vector<std::vector<LinkStats>>& stats, const ValidateBaseline& baseline,
                           std::vector<Finding>& findings) {
  const double margin = config.thresholds.baseline_bw_below;
  int judged = 0;
  for (const auto& rail : stats) {
    std::vector<Judged> links;
    for (const auto& l : rail) {
      if (l.pairs - l.failed <= 0) continue;
      const auto it = baseline.links.find({node_names.at(l.link.node), l.link.rail});
      if (it == baseline.links.end()) continue;
      Judged j{&l, 1, 0, 0, ""};
      for (auto [v, acc, d] :
           {std::tuple{l.tx, it->second.tx, "sending"}, std::tuple{l.rx, it->second.rx, "receiving"}}) {
        if (acc > 0 && v / acc < j.ratio) j = Judged{&l, v / acc, v, acc, d};
      }
      links.push_back(j);
    }
    if (links.empty()) continue;
    judged += static_cast<int>(links.size());
    // The rail's typical change: what every link shares (a switch firmware, a busier
    // host, a different time of day) is the rail's, and one WARN says it; a link is its
    // own finding only when it fell well below where its rail went. Otherwise one slow
    // link's partners, or a uniformly slower rerun, would be named link by link.
    std::vector<double> ratios;
    for (const auto& j : links) ratios.push_back(j.ratio);
    const double typical = std::min(1.0, median(std::move(ratios)));
    const int r = links.front().link->link.rail;
    if (1 - typical > margin) {
      findings.push_back(
          coded({Severity::warn, FindingKind::baseline, fmt::format("rail{}", r),
                 fmt::format("its links are a median {:.0f}% below their accepted figures ({}): the whole "
                             "rail changed (switch, firmware, load), not one link",
                             (1 - typical) * 100, baseline.path),
                 typical, 1, "x", -1, r},
                reason::kRailBelowBaseline));
    }
    for (const auto& j : links) {
      const double below = 1 - j.ratio;
      if (j.ratio >= typical * (1 - margin)) continue;
      const std::string why = fmt::format(
          "{} {:.3f} GB/s, {:.0f}% below its accepted {:.3f} GB/s ({}{})", j.dir, j.now, below * 100, j.then,
          baseline.path, typical < 1 ? fmt::format("; its rail moved {:.0f}%", (typical - 1) * 100) : std::string());
      const LinkStats& l = *j.link;
      const auto has = std::find_if(findings.begin(), findings.end(), [&](const Finding& f) {
        return f.node == l.link.node && f.rail == l.link.rail && f.kind != FindingKind::inventory;
      });
      if (has != findings.end()) {
        has->reason += "; also " + why;
        has->severity = Severity::fail;
        continue;
      }
      findings.push_back(coded({Severity::fail, FindingKind::baseline, link_name(config, node_names, l.link), why,
                                j.now, j.then, "GB/s", l.link.node, l.link.rail},
                               reason::kLinkBelowBaseline));
    }
  }
  return judged;
}

}  // namespace railbench
