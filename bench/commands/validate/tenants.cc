#include "bench/commands/validate/tenants.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace railbench {

std::string TenantMap::who(const std::vector<std::string>& node_names, int node) const {
  if (!on()) return node_names.at(node);
  return fmt::format("{} (tenant {})", node_names.at(node), names.at(of_node.at(node)));
}

TenantMap make_tenant_map(const SuConfig& config, const std::vector<std::string>& node_names) {
  TenantMap m;
  const int n = static_cast<int>(node_names.size());
  if (config.tenants.empty()) {
    m.of_node.assign(n, 0);
    m.names = {""};
    m.members.emplace_back();
    for (int i = 0; i < n; ++i) m.members[0].push_back(i);
    return m;
  }
  m.of_node = config.tenant_of(node_names);
  for (const auto& t : config.tenants) m.names.push_back(t.name);
  m.members.resize(config.tenants.size());
  for (int i = 0; i < n; ++i) m.members.at(m.of_node.at(i)).push_back(i);
  return m;
}

CrossPartner cross_rail_partner(const TenantMap& tenants, int node) {
  const auto& list = tenants.members.at(tenants.of_node.at(node));
  const auto pos = static_cast<size_t>(std::find(list.begin(), list.end(), node) - list.begin());
  CrossPartner p;
  p.first = pos % 2 == 0;
  const size_t other = p.first ? pos + 1 : pos - 1;
  if (other < list.size()) p.node = list[other];
  return p;
}

std::vector<Round> isolation_rounds(const TenantMap& tenants, int nodes) {
  std::vector<Round> out;
  for (const Round& round : circle_schedule(nodes)) {
    Round kept;
    for (const Pair& p : round)
      if (!tenants.same(p.a, p.b)) kept.push_back(p);
    if (!kept.empty()) out.push_back(std::move(kept));
  }
  return out;
}

std::vector<Finding> judge_isolation(const SuConfig& config, const std::vector<std::string>& node_names,
                                     const TenantMap& tenants, const std::vector<IsolationProbe>& probes) {
  std::vector<Finding> out;
  for (const auto& p : probes) {
    if (!p.reached_a && !p.reached_b) continue;
    const std::string rails =
        p.rail_a == p.rail_b ? fmt::format("rail{}", p.rail_a) : fmt::format("rail{} -> rail{}", p.rail_a, p.rail_b);
    const std::string how = p.reached_a && p.reached_b ? "both ways"
                            : p.reached_b              ? "one way (a to b)"
                                                       : "one way (b to a)";
    Finding f;
    f.severity = Severity::fail;
    f.kind = FindingKind::isolation;
    f.code = reason::kIsolationBreached;
    f.subject = fmt::format("{} -> {} {}", node_names.at(p.node_a), node_names.at(p.node_b), rails);
    f.reason = fmt::format(
        "isolation breached: {} reached {} on {}, {} within {:.1f} s: a port, VLAN or partition puts them in one "
        "network; check both switch ports' VLAN / P_Key against the config's tenants",
        tenants.who(node_names, p.node_a), tenants.who(node_names, p.node_b), rails, how,
        config.tests.isolation_timeout_s);
    f.measured = 1;
    f.expected = 0;
    f.rail = p.rail_a;
    f.ends = {p.node_a, p.node_b};
    out.push_back(std::move(f));
  }
  // One port in another tenant's network (a switch port in the wrong VLAN or partition)
  // breaches with the nodes of that network while no other port of its own tenant on
  // its rail breaches at all: such a port that reached 2+ nodes is named on its own and
  // blamed (its node is drained: it leaks into another tenant). When the tenants share
  // one network, every port of a rail breaches alike, and none is singled out.
  std::map<std::pair<int, int>, std::set<int>> reached;  // (node, rail) -> nodes of other tenants
  for (const auto& p : probes) {
    if (!p.reached_a && !p.reached_b) continue;
    reached[{p.node_a, p.rail_a}].insert(p.node_b);
    reached[{p.node_b, p.rail_b}].insert(p.node_a);
  }
  for (const auto& [port, others] : reached) {
    if (others.size() < 2) continue;
    bool alone = true;
    for (const auto& [mate, mate_reached] : reached)
      if (mate != port && mate.second == port.second && tenants.same(mate.first, port.first)) alone = false;
    if (!alone) continue;
    std::vector<std::string> names;
    std::set<std::string> their;
    for (int n : others) {
      names.push_back(node_names.at(n));
      their.insert(tenants.names.at(tenants.of_node.at(n)));
    }
    out.push_back(
        coded({Severity::fail, FindingKind::isolation, link_name(config, node_names, {port.first, port.second}),
               fmt::format("in another tenant's network: {} reached {} (tenant {}), no other port of its tenant "
                           "on this rail reached any: set this port's VLAN / partition back to tenant {}'s",
                           tenants.who(node_names, port.first), fmt::join(names, ", "), fmt::join(their, ", "),
                           tenants.names.at(tenants.of_node.at(port.first))),
               static_cast<double>(others.size()), 0, "nodes", port.first, port.second},
              reason::kIsolationPortWrongTenant));
  }
  return out;
}

std::vector<Finding> judge_pkeys(const SuConfig& config, const std::vector<std::string>& node_names,
                                 const TenantMap& tenants, const std::vector<std::vector<NicReport>>& nics) {
  std::vector<Finding> out;
  if (!tenants.on()) return out;
  for (size_t n = 0; n < nics.size(); ++n) {
    const SuTenant& mine = config.tenants.at(tenants.of_node.at(n));
    for (size_t s = 0; s < nics[n].size(); ++s) {
      const NicReport& r = nics[n][s];
      if (!r.found || r.pkeys.empty()) continue;
      const std::string subject = link_name(config, node_names, {static_cast<int>(n), static_cast<int>(s)});
      auto add = [&](const char* code, const std::string& why) {
        out.push_back(coded(
            {Severity::fail, FindingKind::isolation, subject, why, 0, 1, "", static_cast<int>(n), static_cast<int>(s)},
            code));
      };
      std::vector<std::string> keys;
      for (int k : r.pkeys) keys.push_back(fmt::format("0x{:04x}", k));
      const std::string table = fmt::format("{}", fmt::join(keys, " "));
      if (mine.pkey >= 0) {
        const auto it = std::find_if(r.pkeys.begin(), r.pkeys.end(), [&](int k) { return (k & 0x7fff) == mine.pkey; });
        const int want = mine.pkey | (mine.full_member ? 0x8000 : 0);
        if (it == r.pkeys.end()) {
          add(reason::kIsolationPkeyMissing,
              fmt::format("port {} lacks tenant {}'s partition key 0x{:04x} (its table: {}): the subnet manager "
                          "has not put it in the partition; fix the partition config (e.g. partitions.conf) and "
                          "re-sweep",
                          r.nic, mine.name, want, table));
        } else if (*it != want) {
          add(reason::kIsolationPkeyMembership,
              fmt::format("port {} holds tenant {}'s key as 0x{:04x}, the config says {} membership (0x{:04x}): {}",
                          r.nic, mine.name, *it, mine.full_member ? "full" : "limited", want,
                          mine.full_member ? "a limited member cannot talk to the other limited members"
                                           : "a full member reaches every member of the partition"));
        }
      }
      for (const auto& other : config.tenants) {
        if (&other == &mine || other.pkey < 0) continue;
        for (int k : r.pkeys) {
          if ((k & 0x7fff) != other.pkey) continue;
          add(reason::kIsolationPkeyForeign,
              fmt::format("isolation breached: port {} of tenant {} holds tenant {}'s partition key 0x{:04x}: it "
                          "reaches that tenant's nodes; remove it from that partition",
                          r.nic, mine.name, other.name, k));
        }
      }
    }
  }
  return out;
}

std::vector<Finding> judge_interference(const SuConfig& config, const TenantMap& tenants,
                                        const std::vector<TenantInterference>& runs) {
  std::vector<Finding> out;
  const double need = config.thresholds.tenant_busbw_min_ratio;
  for (const auto& r : runs) {
    if (r.alone_gbps <= 0 || r.loaded_gbps <= 0) continue;
    const double ratio = r.loaded_gbps / r.alone_gbps;
    if (ratio >= need) continue;
    out.push_back({Severity::fail, FindingKind::interference, fmt::format("tenant {}", tenants.names.at(r.tenant)),
                   fmt::format("all-reduce busbw {:.3f} GB/s while the other tenants ran theirs, {:.3f} alone: "
                               "{:.2f}x, below {:.2f} (thresholds.tenant_busbw_min_ratio): the tenants share a "
                               "bottleneck (uplinks, a spine, a switch buffer)",
                               r.loaded_gbps, r.alone_gbps, ratio, need),
                   ratio, need, "x"});
  }
  return out;
}

}  // namespace railbench
