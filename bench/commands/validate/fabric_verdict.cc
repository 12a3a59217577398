#include "bench/commands/validate/fabric_verdict.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/core/stats.h"

namespace railbench {

using nlohmann::json;

double healthy_flow_gbps(std::vector<double> carried, double expected_gbps) {
  constexpr size_t kMinFlows = 8;
  if (carried.size() < kMinFlows) return expected_gbps;
  return std::min(expected_gbps, median(std::move(carried)));
}

std::vector<FlowObservation> observe_flows(const SuFabric& f, const std::vector<FabricFlow>& flows,
                                           double expected_gbps) {
  // Retransmits a healthy flow shows here (a shaped port's shallow queue drops some
  // in slow start): a lossy flow is one far above the flows' own median.
  std::vector<double> retx;
  for (const auto& x : flows)
    if (!x.skipped && x.completed) retx.push_back(x.retransmits);
  const double typical = retx.empty() ? 0 : median(retx);
  std::vector<FlowObservation> out;
  for (const auto& x : flows) {
    FlowObservation o;
    o.label = fmt::format("flow {} port {}", x.plan.id, x.plan.src_port);
    o.links = x.path.links;
    o.next_candidates = x.path.next_candidates;
    o.src_nic = x.plan.src;
    o.dst_nic = x.plan.dst;
    o.retransmits = x.retransmits;
    o.fraction = expected_gbps > 0 ? x.gbps / expected_gbps : 0;
    if (x.skipped) continue;
    if (!x.trace.reached || !x.completed) {
      o.health = FlowHealth::dead;
      o.fraction = 0;
    } else if (o.fraction < f.tests.flow_min_fraction) {
      o.health = FlowHealth::slow;
    } else if (x.retransmits >= static_cast<unsigned>(f.tests.retransmits_lossy) && x.retransmits > 4 * typical) {
      o.health = FlowHealth::lossy;
    }
    out.push_back(std::move(o));
  }
  return out;
}

namespace {

std::string link_subject(const FabricLink& l) {
  return fmt::format("{} port {} <-> {} port {} ({})", l.leaf, l.leaf_port, l.spine, l.spine_port, l.name);
}

Finding fabric_finding(Severity sev, const char* code, const std::string& subject, const std::string& reason,
                       double measured = 0, double expected = 0, const std::string& unit = "") {
  Finding x;
  x.severity = sev;
  x.kind = FindingKind::fabric;
  x.code = code;
  x.subject = subject;
  x.reason = reason;
  x.measured = measured;
  x.expected = expected;
  x.unit = unit;
  return x;
}

// A finding on leaf-spine link `l`: its switch ports as the subject, its name as the
// structured fabric_link.
Finding link_finding(Severity sev, const char* code, const FabricLink& l, const std::string& reason,
                     double measured = 0, double expected = 0, const std::string& unit = "") {
  Finding x = fabric_finding(sev, code, link_subject(l), reason, measured, expected, unit);
  x.fabric_link = l.name;
  return x;
}

// Links that no flow crossed in one direction or both, though flows from (to) its leaf
// crossed the other spines: down (routing goes around it) or a route withdrawn.
void coverage_findings(const SuFabric& f, const std::vector<FabricNic>& nics, const std::vector<FabricFlow>& flows,
                       const std::vector<int>& blamed, const FabricSearch& search, FabricJudgment& out) {
  std::map<int, int> up, down, from_leaf, to_leaf;  // link -> flows that crossed it; leaf -> flows with a spine seen
  for (const auto& x : flows) {
    if (x.skipped || x.path.spine < 0) continue;
    const int a = nics[x.plan.src].leaf, b = nics[x.plan.dst].leaf;
    from_leaf[a] += 1;
    to_leaf[b] += 1;
    const std::string& spine = f.spines[x.path.spine].name;
    up[f.link_index(f.leaves[a].name, spine)] += 1;
    down[f.link_index(f.leaves[b].name, spine)] += 1;
  }
  for (size_t i = 0; i < f.links.size(); ++i) {
    const FabricLink& l = f.links[i];
    if (std::find(blamed.begin(), blamed.end(), static_cast<int>(i)) != blamed.end()) continue;  // named already
    const int leaf = f.leaf_named(l.leaf);
    const int n_up = up[static_cast<int>(i)], n_down = down[static_cast<int>(i)];
    const int probed_out = leaf < static_cast<int>(search.out.size()) ? search.out[leaf] : 0;
    const int probed_in = leaf < static_cast<int>(search.in.size()) ? search.in[leaf] : 0;
    const int out_flows = from_leaf[leaf] + probed_out, in_flows = to_leaf[leaf] + probed_in;
    // With k spines a healthy link is missed by n flows with chance ((k-1)/k)^n: judge
    // only where that is below 1%.
    const double k = static_cast<double>(f.spines.size());
    auto sure = [&](int n) { return n > 0 && std::pow((k - 1) / k, n) < 0.01; };
    std::string why;
    const char* code = reason::kFabricRouteWithdrawn;
    // "28 flows", or "28 flows and 64 source ports probed" where the search went on.
    auto counted = [](int total, int probed) {
      return probed > 0 ? fmt::format("{} flows and {} probed source ports", total - probed, probed)
                        : fmt::format("{} flows", total);
    };
    if (n_up == 0 && n_down == 0 && sure(out_flows + in_flows)) {
      code = reason::kFabricLinkDown;
      why = fmt::format(
          "no flow crossed it either way ({} left {} over the other spines, {} arrived): down, "
          "or both its routes withdrawn; the fabric is short of its capacity",
          counted(out_flows, probed_out), l.leaf, counted(in_flows, probed_in));
    } else if (n_up == 0 && n_down > 0 && sure(out_flows)) {
      why = fmt::format(
          "{} sends nothing through {} ({} left it over the other spines, {} flows arrived through "
          "{}): its route via {} is withdrawn, or its ECMP hash never picks it",
          l.leaf, l.spine, counted(out_flows, probed_out), n_down, l.spine, l.spine);
    } else if (n_down == 0 && n_up > 0 && sure(in_flows)) {
      why = fmt::format(
          "nothing reaches {} through {} ({} arrived over the other spines): the other leaves' "
          "routes to {} via {} are withdrawn",
          l.leaf, l.spine, counted(in_flows, probed_in), l.leaf, l.spine);
    }
    if (!why.empty()) {
      out.findings.push_back(link_finding(Severity::fail, code, l, why));
      out.links_at_fault.push_back(static_cast<int>(i));
    }
  }
}

// Whether a finding is on the link (made by link_finding).
bool names_link(const Finding& x, const FabricLink& l) {
  return x.fabric_link == l.name;
}

std::string health_word(const LinkEvidence& e, const FabricTests& t) {
  if (e.median_fraction < 1e-9) return "dead";
  if (e.median_fraction < t.flow_min_fraction) return "slow";
  return "lossy";
}

// The code of a blamed link, from the same figures as its health word: flows that enter
// it and never arrive (blackholed), arrive slowly, or arrive with far more retransmits.
const char* health_code(const LinkEvidence& e, const FabricTests& t) {
  if (e.median_fraction < 1e-9) return reason::kFabricLinkBlackholed;
  if (e.median_fraction < t.flow_min_fraction) return reason::kFabricLinkSlow;
  return reason::kFabricLinkLossy;
}

}  // namespace

namespace {

// A second (third...) link blamed on one bad flow that no other blamed link explains is
// a noisy flow (one slow sample on a shared host), not a second fault: a fault on a
// link shows on each flow the hash puts there. Dropped, weakest first; its flow stays
// unexplained. One blamed link alone is kept: localize already weighed it against the
// good flows through it.
void drop_weak_links(const std::vector<FlowObservation>& observed, Localization& loc) {
  const std::set<int> host(loc.host_nics.begin(), loc.host_nics.end());
  while (loc.blamed.size() > 1) {
    int weakest = -1, weakest_unique = 2;
    for (int link : loc.blamed) {
      int unique = 0;
      for (size_t i = 0; i < observed.size(); ++i) {
        const FlowObservation& o = observed[i];
        if (o.health == FlowHealth::good || host.count(o.src_nic) || host.count(o.dst_nic) || !crosses(o, link))
          continue;
        const bool other =
            std::any_of(loc.blamed.begin(), loc.blamed.end(), [&](int b) { return b != link && crosses(o, b); });
        unique += !other;
      }
      if (unique < weakest_unique) weakest = link, weakest_unique = unique;
    }
    if (weakest < 0) break;
    loc.blamed.erase(std::find(loc.blamed.begin(), loc.blamed.end(), weakest));
    for (size_t i = 0; i < observed.size(); ++i)
      if (observed[i].health != FlowHealth::good && crosses(observed[i], weakest) &&
          std::none_of(loc.blamed.begin(), loc.blamed.end(), [&](int b) { return crosses(observed[i], b); }))
        loc.unexplained_flows.push_back(static_cast<int>(i));
  }
}

void link_findings(const SuFabric& f, const std::vector<FabricNic>& nics, const std::vector<FlowObservation>& observed,
                   const Localization& loc, double expected_gbps, FabricJudgment& out) {
  int bad_total = 0;
  for (const auto& o : observed) bad_total += o.health != FlowHealth::good;
  for (int link : loc.blamed) {
    const LinkEvidence& e = loc.links.at(link);
    std::string apart;
    for (const auto& group : loc.ambiguous) {
      if (std::find(group.begin(), group.end(), link) == group.end()) continue;
      for (int other : group)
        if (other != link) apart += (apart.empty() ? "" : ", ") + f.links.at(other).name;
    }
    const int total = static_cast<int>(observed.size());
    std::string reason = fmt::format(
        "{:.0f}% of the expected {:.3g} Gb/s (median of its flows), {} of {} flows through it {}, {} of {} others; "
        "{} retransmits; votes {:.2f}",
        100 * e.median_fraction, expected_gbps, e.bad_flows, e.bad_flows + e.good_flows, health_word(e, f.tests),
        bad_total - e.bad_flows, total - e.bad_flows - e.good_flows, e.retransmits, e.votes);
    if (!apart.empty()) reason += fmt::format("; no flow tells it apart from {}", apart);
    out.links_at_fault.push_back(link);
    out.findings.push_back(link_finding(Severity::fail, health_code(e, f.tests), f.links.at(link), reason,
                                        e.median_fraction * expected_gbps, expected_gbps, "Gb/s"));
  }
  for (int nic : loc.host_nics) out.host_side.push_back(nics.at(nic).label);
  for (int nic : loc.host_nics)
    out.lines.push_back(
        fmt::format("# fabric: {}: its flows are bad on every path: the host's NIC, cable or leaf "
                    "port, not the fabric (the pair tests judge it)",
                    nics.at(nic).label));
  for (const ChanceLink& c : loc.by_chance)
    out.lines.push_back(fmt::format(
        "# fabric: {}: {} of its {} flows bad, as chance would have it at this run's background rate ({} of {} "
        "flows elsewhere; p = {:.2g}): not named; if it recurs, raise the fabric tests' flows_per_spine to give each "
        "link more flows",
        f.links.at(c.link).name, c.bad, c.flows, c.background_bad, c.background_flows, c.p_value));
  if (!loc.unexplained_flows.empty())
    out.lines.push_back(fmt::format("# fabric: {} bad flow(s) no fabric link explains (e.g. {})",
                                    loc.unexplained_flows.size(), observed.at(loc.unexplained_flows[0]).label));
}

void ecmp_lines(const SuFabric& f, const std::vector<FabricNic>& nics, const std::vector<FabricFlow>& flows,
                const std::vector<FlowObservation>& observed, FabricJudgment& out) {
  for (size_t leaf = 0; leaf < f.leaves.size(); ++leaf) {
    // Uplinks a finding names already (down, withdrawn, blamed) are no imbalance of the hash.
    std::vector<int> uplinks;
    for (size_t i = 0; i < f.links.size(); ++i) {
      const bool named = std::any_of(out.findings.begin(), out.findings.end(),
                                     [&](const Finding& x) { return names_link(x, f.links[i]); });
      if (f.links[i].leaf == f.leaves[leaf].name && !named) uplinks.push_back(static_cast<int>(i));
    }
    std::vector<FlowObservation> mine;
    size_t k = 0;
    for (const auto& x : flows) {
      if (x.skipped) continue;
      if (nics[x.plan.src].leaf == static_cast<int>(leaf) && x.path.spine >= 0) mine.push_back(observed.at(k));
      ++k;
    }
    if (mine.empty() || uplinks.empty()) continue;
    const EcmpBalance b = ecmp_balance(uplinks, mine);
    json per = json::object();
    std::string text;
    for (size_t u = 0; u < uplinks.size(); ++u) {
      per[f.links[uplinks[u]].spine] = b.flows_per_link.at(u);
      text += fmt::format("{}{} {}", text.empty() ? "" : ", ", f.links[uplinks[u]].spine, b.flows_per_link.at(u));
    }
    out.ecmp.push_back(json{{"leaf", f.leaves[leaf].name},
                            {"flows", mine.size()},
                            {"flows_per_uplink", per},
                            {"max_over_mean", b.max_over_mean},
                            {"uplinks_used", b.links_used}});
    out.lines.push_back(fmt::format("# fabric ECMP {}: {} flows, per uplink {} (max/mean {:.2f})", f.leaves[leaf].name,
                                    mine.size(), text, b.max_over_mean));
    if (mine.size() >= 8 * uplinks.size() && b.max_over_mean >= 2) {
      out.findings.push_back(fabric_finding(
          Severity::warn, reason::kFabricEcmpPolarized, f.leaves[leaf].name,
          fmt::format("ECMP polarized: {} flows with distinct source ports use {} of its {} uplinks, the busiest "
                      "{:.1f}x the mean: check the switches' hash fields and seeds",
                      mine.size(), b.links_used, uplinks.size(), b.max_over_mean)));
    }
  }
}

}  // namespace

FabricJudgment judge_fabric(const SuFabric& f, const std::vector<FabricNic>& nics, const std::vector<FabricFlow>& flows,
                            const std::vector<FlowObservation>& observed, double expected_gbps,
                            const FabricSearch& search) {
  FabricJudgment out;
  std::set<std::string> mismatches;
  for (const auto& x : flows)
    if (!x.path.mismatch.empty()) mismatches.insert(x.path.mismatch);
  for (const auto& m : mismatches) {
    if (out.findings.size() >= 4) break;  // one config error repeats on every flow
    out.findings.push_back(fabric_finding(Severity::warn, reason::kFabricConfigMismatch, "fabric config", m));
  }
  Localization loc = localize(static_cast<int>(f.links.size()), observed);
  drop_weak_links(observed, loc);
  drop_chance_links(observed, loc);
  link_findings(f, nics, observed, loc, expected_gbps, out);
  coverage_findings(f, nics, flows, loc.blamed, search, out);
  ecmp_lines(f, nics, flows, observed, out);
  for (const auto& e : loc.links) {
    const bool blamed = std::find(loc.blamed.begin(), loc.blamed.end(), e.link) != loc.blamed.end();
    const FabricLink& l = f.links.at(e.link);
    std::string finding;  // the phase's finding on it, "SEVERITY: reason" (blamed, down, withdrawn)
    for (const Finding& x : out.findings)
      if (names_link(x, l)) finding = fmt::format("{}: {}", to_string(x.severity), x.reason);
    json j{{"link", l.name},
           {"leaf", l.leaf},
           {"spine", l.spine},
           {"finding", finding},
           {"votes", e.votes},
           {"bad_flows", e.bad_flows},
           {"good_flows", e.good_flows},
           {"median_fraction", e.median_fraction},
           {"retransmits", e.retransmits},
           {"blamed", blamed}};
    // Chosen by the cover, then left unblamed: chance explains its bad flows.
    for (const ChanceLink& c : loc.by_chance)
      if (c.link == e.link) j["chance_p"] = c.p_value;
    out.links.push_back(std::move(j));
  }
  return out;
}

}  // namespace railbench
