#include "bench/commands/validate/fleet_history.h"

#include <algorithm>

#include <fmt/format.h>

#include "bench/commands/validate/reason_codes.h"
#include "lib/core/stats.h"
#include "lib/store/store.h"

namespace railbench {

namespace {

constexpr const char* kDirections[] = {"tx", "rx"};

Reference reference_of(const std::vector<double>& values) {
  if (values.empty()) return {};
  return {static_cast<int>(values.size()), median(values), scaled_mad(values)};
}

// How far under `ref` the fraction `f` is, when it is below it by the rule (`noise` at
// least the reference's own); 0 otherwise.
double below(const Reference& ref, double noise, double min_drop, double f) {
  const double drop = ref.median - f;
  return drop > std::max(kHistoryZ * std::max(ref.noise, noise), min_drop) ? drop : 0;
}

// A link's fractions of its rail's median today, per direction.
struct Today {
  const LinkStats* link = nullptr;
  double f[2] = {0, 0};
};

std::vector<Today> fractions(const std::vector<LinkStats>& rail) {
  std::vector<Today> out;
  std::vector<double> tx, rx;
  for (const auto& l : rail)
    if (l.pairs - l.failed > 0) tx.push_back(l.tx), rx.push_back(l.rx);
  if (tx.empty()) return out;
  const double mid[2] = {median(tx), median(rx)};
  for (const auto& l : rail) {
    if (l.pairs - l.failed <= 0) continue;
    out.push_back({&l, {mid[0] > 0 ? l.tx / mid[0] : 0, mid[1] > 0 ? l.rx / mid[1] : 0}});
  }
  return out;
}

// One rule: its name, whom it compares with, its references per direction, the noise
// floor per direction.
struct Rule {
  const char* name;
  std::string who;
  const Reference* refs[2] = {nullptr, nullptr};
  double noise[2] = {0, 0};
};

// The reason text of one rule over both directions, empty when it did not fire.
std::string rule_reason(const Rule& rule, double min_drop, const Today& t) {
  std::string out;
  for (int d = 0; d < 2; ++d) {
    const Reference* ref = rule.refs[d];
    if (!ref || ref->values == 0) continue;
    const double drop = below(*ref, rule.noise[d], min_drop, t.f[d]);
    if (drop <= 0) continue;
    out += fmt::format("{}{}: {} {:.2f} of its rail's median, {:.0f}% under {} {:.2f} (noise {:.3f}, {} figures)",
                       out.empty() ? "" : "; ", rule.name, d == 0 ? "sending" : "receiving", t.f[d], drop * 100,
                       rule.who, ref->median, std::max(ref->noise, rule.noise[d]), ref->values);
  }
  return out;
}

}  // namespace

FleetHistory load_fleet_history(const std::string& store, const std::string& su) {
  FleetHistory h;
  h.store = store::store_name(store);
  h.su = su;
  const store::Store s(store, store::Store::Mode::read);
  for (const char* dir : kDirections) {
    const auto got = s.validate_nic_values(su, std::string(dir) + "/rail", kHistoryRuns);
    h.runs = got.runs;
    std::map<std::string, std::vector<double>> per_nic;
    std::vector<double> all;
    for (const auto& [nic, v] : got.values) per_nic[nic].push_back(v), all.push_back(v);
    std::vector<double> noises;
    for (const auto& [nic, values] : per_nic) {
      h.own[nic][dir] = reference_of(values);
      noises.push_back(h.own[nic][dir].noise);
    }
    h.fleet[dir] = reference_of(all);
    h.pooled_noise[dir] = noises.empty() ? 0 : median(noises);
  }
  return h;
}

nlohmann::json to_json(const FleetHistory& h) {
  const auto ref = [](const Reference& r) { return nlohmann::json::array({r.values, r.median, r.noise}); };
  nlohmann::json own = nlohmann::json::object(), fleet = nlohmann::json::object();
  for (const auto& [nic, dirs] : h.own)
    for (const auto& [dir, r] : dirs) own[nic][dir] = ref(r);
  for (const auto& [dir, r] : h.fleet) fleet[dir] = ref(r);
  return {{"store", h.store}, {"su", h.su},     {"runs", h.runs},
          {"own", own},       {"fleet", fleet}, {"pooled_noise", h.pooled_noise}};
}

FleetHistory fleet_history_from_json(const nlohmann::json& j) {
  const auto ref = [](const nlohmann::json& a) {
    return Reference{a.at(0).get<int>(), a.at(1).get<double>(), a.at(2).get<double>()};
  };
  FleetHistory h;
  h.store = j.at("store").get<std::string>();
  h.su = j.at("su").get<std::string>();
  h.runs = j.at("runs").get<int>();
  for (const auto& [nic, dirs] : j.at("own").items())
    for (const auto& [dir, r] : dirs.items()) h.own[nic][dir] = ref(r);
  for (const auto& [dir, r] : j.at("fleet").items()) h.fleet[dir] = ref(r);
  h.pooled_noise = j.at("pooled_noise").get<std::map<std::string, double>>();
  return h;
}

namespace {

// The two rules for one NIC: its own history (where it has enough runs) and the fleet's.
std::pair<Rule, Rule> rules_for(const FleetHistory& h, const std::string& nic) {
  Rule own{"history", ""}, fleet{"fleet", fmt::format("the SU's links over {} runs at", h.runs)};
  const auto it = h.own.find(nic);
  for (int d = 0; d < 2; ++d) {
    const char* dir = kDirections[d];
    if (it != h.own.end())
      if (const auto r = it->second.find(dir); r != it->second.end() && r->second.values >= kHistoryMinRuns)
        own.refs[d] = &r->second;
    if (const auto p = h.pooled_noise.find(dir); p != h.pooled_noise.end()) own.noise[d] = p->second;
    if (const auto r = h.fleet.find(dir); r != h.fleet.end()) fleet.refs[d] = &r->second;
  }
  own.who = fmt::format("its own last {} runs'", own.refs[0] ? own.refs[0]->values : 0);
  return {own, fleet};
}

}  // namespace

int judge_against_history(const SuConfig& config, const std::vector<std::string>& node_names,
                          const std::vector<std::vector<LinkStats>>& stats, const FleetHistory& history,
                          std::vector<Finding>& findings) {
  if (history.runs < kHistoryMinRuns) return 0;
  const double min_drop = config.thresholds.history_bw_below;
  int judged = 0;
  for (const auto& rail : stats) {
    for (const Today& t : fractions(rail)) {
      const LinkStats& l = *t.link;
      const auto [own, fleet] = rules_for(history, fmt::format("{}:rail{}", node_names.at(l.link.node), l.link.rail));
      ++judged;
      const std::string by_own = rule_reason(own, min_drop, t), by_fleet = rule_reason(fleet, min_drop, t);
      if (by_own.empty() && by_fleet.empty()) continue;
      const std::string why = by_own.empty() ? by_fleet : by_fleet.empty() ? by_own : by_own + "; " + by_fleet;
      const auto has = std::find_if(findings.begin(), findings.end(), [&](const Finding& f) {
        return f.node == l.link.node && f.rail == l.link.rail && f.kind != FindingKind::inventory;
      });
      if (has != findings.end()) {
        has->reason += "; also " + why;
        continue;
      }
      const Reference* ref = own.refs[0] ? own.refs[0] : fleet.refs[0];
      findings.push_back(coded({Severity::warn, FindingKind::history, link_name(config, node_names, l.link),
                                why + fmt::format(" ({})", history.store), std::min(t.f[0], t.f[1]),
                                ref ? ref->median : 1, "of rail median", l.link.node, l.link.rail},
                               by_own.empty() ? reason::kLinkBelowFleet : reason::kLinkBelowHistory));
    }
  }
  return judged;
}

}  // namespace railbench
