#include "bench/commands/validate/fabric_config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bench/commands/validate/config_reader.h"
#include "bench/commands/validate/su_config.h"
#include "lib/core/errors.h"
#include "lib/runtime/hostlist.h"

namespace railbench {
namespace {

using nlohmann::json;

// "10.1.2.3" or "10.1.2.0/24" -> (address, prefix length); false when it is neither.
bool parse_prefix(const std::string& text, uint32_t& addr, int& len) {
  const auto slash = text.find('/');
  const std::string ip = text.substr(0, slash);
  in_addr a{};
  if (inet_pton(AF_INET, ip.c_str(), &a) != 1) return false;
  addr = ntohl(a.s_addr);
  len = 32;
  if (slash != std::string::npos) {
    const std::string bits = text.substr(slash + 1);
    if (bits.empty() || bits.size() > 2 || bits.find_first_not_of("0123456789") != std::string::npos) return false;
    len = std::stoi(bits);
    if (len > 32) return false;
  }
  return true;
}

bool in_prefix(const std::string& address, const std::string& prefix) {
  uint32_t a = 0, p = 0;
  int alen = 0, plen = 0;
  if (!parse_prefix(address, a, alen) || !parse_prefix(prefix, p, plen)) return false;
  const uint32_t mask = plen == 0 ? 0 : ~uint32_t{0} << (32 - plen);
  return (a & mask) == (p & mask);
}

std::vector<std::string> read_addresses(const ConfigReader& r, const json& e, const std::string& where) {
  std::vector<std::string> out;
  if (!e.contains("addresses")) return out;
  const json& a = e.at("addresses");
  if (!a.is_array())
    r.fail(where + ".addresses", "expected a list of IPv4 addresses or prefixes, e.g. [\"10.0.0.254\"]");
  for (const auto& x : a) {
    uint32_t addr = 0;
    int len = 0;
    if (!x.is_string() || !parse_prefix(x.get<std::string>(), addr, len))
      r.fail(where + ".addresses",
             fmt::format("{} is not an IPv4 address or a.b.c.d/len prefix", cut_for_error(x.dump())));
    out.push_back(x.get<std::string>());
  }
  return out;
}

void read_sus(const ConfigReader& r, const json& j, const std::vector<std::string>& node_names, SuFabric& f) {
  if (!j.contains("sus") || !j.at("sus").is_array() || j.at("sus").empty())
    r.fail("fabric.sus",
           "missing; expected the SUs and their nodes: [{\"name\": \"su1\", \"nodes\": \"node[01-32]\"}, ...]");
  std::map<std::string, std::string> owner;
  for (size_t i = 0; i < j.at("sus").size(); ++i) {
    const json& e = j.at("sus")[i];
    const std::string where = fmt::format("fabric.sus[{}]", i);
    r.only(e, where, {"name", "nodes"});
    FabricSu su{r.string(e, where, "name", "", true), r.string(e, where, "nodes", "", true), {}};
    try {
      su.nodes = expand_hostlist(su.nodes_expr, kMaxSuNodes);
    } catch (const UsageError& err) {
      r.fail(where + ".nodes", err.what());
    }
    for (const auto& n : su.nodes) {
      if (std::find(node_names.begin(), node_names.end(), n) == node_names.end())
        r.fail(where + ".nodes", fmt::format("node '{}' is not in the config's nodes", n));
      const auto [it, fresh] = owner.emplace(n, su.name);
      if (!fresh) r.fail(where + ".nodes", fmt::format("node '{}' is in SU {} and in {}", n, it->second, su.name));
    }
    f.sus.push_back(std::move(su));
  }
  for (const auto& n : node_names)
    if (!owner.count(n)) r.fail("fabric.sus", fmt::format("node '{}' is in no SU: list it under one", n));
}

void read_switches(const ConfigReader& r, const json& j, int rails, SuFabric& f) {
  if (!j.contains("spines") || !j.at("spines").is_array() || j.at("spines").empty())
    r.fail("fabric.spines",
           "missing; expected the spine switches: [\"spine0\", ...] or [{\"name\": ..., \"addresses\": [...]}]");
  for (size_t i = 0; i < j.at("spines").size(); ++i) {
    const json& e = j.at("spines")[i];
    const std::string where = fmt::format("fabric.spines[{}]", i);
    if (e.is_string()) {
      f.spines.push_back({e.get<std::string>(), {}});
      continue;
    }
    r.only(e, where, {"name", "addresses"});
    f.spines.push_back({r.string(e, where, "name", "", true), read_addresses(r, e, where)});
  }
  if (!j.contains("leaves") || !j.at("leaves").is_array())
    r.fail("fabric.leaves",
           "missing; expected one leaf per SU and rail: [{\"name\": \"su1-leaf0\", \"su\": \"su1\", "
           "\"rail\": 0, \"addresses\": [...]}, ...]");
  for (size_t i = 0; i < j.at("leaves").size(); ++i) {
    const json& e = j.at("leaves")[i];
    const std::string where = fmt::format("fabric.leaves[{}]", i);
    r.only(e, where, {"name", "su", "rail", "rails", "addresses"});
    FabricLeaf leaf;
    leaf.name = r.string(e, where, "name", "", true);
    leaf.su = r.string(e, where, "su", "", true);
    if (e.contains("rails") == e.contains("rail"))
      r.fail(where, "give the leaf's rail (\"rail\": 0) or its rails (\"rails\": [0, 1]), one of the two");
    if (e.contains("rail")) leaf.rails.push_back(r.integer(e, where, "rail", 0, 0, rails - 1, true));
    if (e.contains("rails")) {
      if (!e.at("rails").is_array() || e.at("rails").empty())
        r.fail(where + ".rails", "expected a list of rail numbers, e.g. [0, 1]");
      for (const auto& x : e.at("rails")) {
        if (!x.is_number_integer() || x.get<int>() < 0 || x.get<int>() >= rails)
          r.fail(where + ".rails", fmt::format("{} is not a rail: use 0..{}", cut_for_error(x.dump()), rails - 1));
        leaf.rails.push_back(x.get<int>());
      }
    }
    leaf.addresses = read_addresses(r, e, where);
    const auto su = std::find_if(f.sus.begin(), f.sus.end(), [&](const FabricSu& s) { return s.name == leaf.su; });
    if (su == f.sus.end()) r.fail(where + ".su", fmt::format("'{}' is not one of fabric.sus", leaf.su));
    for (int rail : leaf.rails)
      if (f.leaf_index(static_cast<int>(su - f.sus.begin()), rail) >= 0)
        r.fail(where, fmt::format("SU {} rail {} has two leaves: one leaf per SU and rail", leaf.su, rail));
    f.leaves.push_back(std::move(leaf));
  }
  for (size_t s = 0; s < f.sus.size(); ++s)
    for (int rail = 0; rail < rails; ++rail)
      if (f.leaf_index(static_cast<int>(s), rail) < 0)
        r.fail("fabric.leaves", fmt::format("SU {} rail {} has no leaf: add one", f.sus[s].name, rail));
}

void read_links(const ConfigReader& r, const json& j, SuFabric& f) {
  std::set<std::string> names;
  if (!j.contains("links")) {
    // Every leaf to every spine, one link each, ports named after the far switch.
    for (const auto& leaf : f.leaves)
      for (const auto& spine : f.spines)
        f.links.push_back({leaf.name + "-" + spine.name, leaf.name, spine.name, "", spine.name, leaf.name, ""});
    return;
  }
  if (!j.at("links").is_array()) r.fail("fabric.links", "expected a list of leaf-spine links");
  for (size_t i = 0; i < j.at("links").size(); ++i) {
    const json& e = j.at("links")[i];
    const std::string where = fmt::format("fabric.links[{}]", i);
    r.only(e, where, {"name", "leaf", "leaf_port", "leaf_address", "spine", "spine_port", "spine_address"});
    FabricLink l;
    l.leaf = r.string(e, where, "leaf", "", true);
    l.spine = r.string(e, where, "spine", "", true);
    l.name = r.string(e, where, "name", l.leaf + "-" + l.spine);
    l.leaf_port = r.string(e, where, "leaf_port", l.spine);
    l.spine_port = r.string(e, where, "spine_port", l.leaf);
    l.leaf_address = r.string(e, where, "leaf_address", "");
    l.spine_address = r.string(e, where, "spine_address", "");
    const bool leaf_known =
        std::any_of(f.leaves.begin(), f.leaves.end(), [&](const FabricLeaf& x) { return x.name == l.leaf; });
    if (!leaf_known) r.fail(where + ".leaf", fmt::format("'{}' is not one of fabric.leaves", l.leaf));
    if (!f.is_spine(l.spine)) r.fail(where + ".spine", fmt::format("'{}' is not one of fabric.spines", l.spine));
    if (f.link_index(l.leaf, l.spine) >= 0)
      r.fail(where, fmt::format("a second link between {} and {}: parallel uplinks are not supported; list one", l.leaf,
                                l.spine));
    if (!names.insert(l.name).second) r.fail(where + ".name", fmt::format("'{}' names two links", l.name));
    f.links.push_back(std::move(l));
  }
}

}  // namespace

int SuFabric::su_of(const std::string& node) const {
  for (size_t s = 0; s < sus.size(); ++s)
    if (std::find(sus[s].nodes.begin(), sus[s].nodes.end(), node) != sus[s].nodes.end()) return static_cast<int>(s);
  return -1;
}

int SuFabric::leaf_index(int su, int rail) const {
  if (su < 0 || su >= static_cast<int>(sus.size())) return -1;
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].su == sus[su].name &&
        std::find(leaves[i].rails.begin(), leaves[i].rails.end(), rail) != leaves[i].rails.end())
      return static_cast<int>(i);
  return -1;
}

int SuFabric::link_index(const std::string& leaf, const std::string& spine) const {
  for (size_t i = 0; i < links.size(); ++i)
    if (links[i].leaf == leaf && links[i].spine == spine) return static_cast<int>(i);
  return -1;
}

bool SuFabric::is_spine(const std::string& name) const {
  return std::any_of(spines.begin(), spines.end(), [&](const FabricSwitch& s) { return s.name == name; });
}

int SuFabric::spine_index(const std::string& name) const {
  for (size_t i = 0; i < spines.size(); ++i)
    if (spines[i].name == name) return static_cast<int>(i);
  return -1;
}

int SuFabric::leaf_named(const std::string& name) const {
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].name == name) return static_cast<int>(i);
  return -1;
}

int SuFabric::su_named(const std::string& name) const {
  for (size_t i = 0; i < sus.size(); ++i)
    if (sus[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string SuFabric::switch_of(const std::string& address) const {
  for (const auto& l : links) {
    if (l.leaf_address == address) return l.leaf;
    if (l.spine_address == address) return l.spine;
  }
  for (const auto& leaf : leaves)
    for (const auto& p : leaf.addresses)
      if (in_prefix(address, p)) return leaf.name;
  for (const auto& spine : spines)
    for (const auto& p : spine.addresses)
      if (in_prefix(address, p)) return spine.name;
  return "";
}

double probe_rate_per_rank(const SuFabric& f, int nics) {
  const double leaves = std::max<double>(1, static_cast<double>(f.leaves.size()));
  const double spines = std::max<double>(1, static_cast<double>(f.spines.size()));
  const double load = std::max(nics / leaves, nics / spines) / 3.0;  // askers per switch, a third of each trace each
  return f.tests.probe_rate / std::max(1.0, load);
}

FabricPlan plan_fabric(const SuFabric& f, int nics, double flow_gbps) {
  FabricPlan p;
  const long long leaves = static_cast<long long>(f.leaves.size());
  const long long spines = static_cast<long long>(f.spines.size());
  p.flows = leaves * spines * f.tests.flows_per_spine;
  p.max_flows = leaves * spines * f.tests.max_flows_per_spine * 2;  // out of and into every leaf
  p.probes = p.flows * 4;                                           // three switch hops and the SYN that connects
  p.per_rank_probe_rate = probe_rate_per_rank(f, nics);
  p.discovery_s = nics > 0 ? static_cast<double>(p.probes) / nics / p.per_rank_probe_rate : 0;
  // A round holds flows that share no NIC and no fabric link (each crosses two).
  const double per_round = std::max(1.0, std::min(nics / 2.0, static_cast<double>(f.links.size()) / 2.0));
  p.measure_rounds = std::ceil(static_cast<double>(p.flows) / per_round);
  p.measure_s = p.measure_rounds * (static_cast<double>(f.tests.flow_bytes) * 8 / (flow_gbps * 1e9) + 0.002);
  // The sweep: each NIC opens peers x k flows a step (peers: at most the NICs of its rail
  // in other SUs, SUs taken as equal), all traced, then one all-to-all of ecmp_bytes per
  // connection at the line rate.
  std::set<int> rails;
  for (const auto& leaf : f.leaves) rails.insert(leaf.rails.begin(), leaf.rails.end());
  const double sus = static_cast<double>(f.sus.size());
  const double others = sus > 1 ? nics / std::max<double>(1, static_cast<double>(rails.size())) * (sus - 1) / sus : 0;
  const long long peers = std::min<long long>(f.tests.ecmp_peers, std::llround(others));
  p.sweep_peers = peers;
  const uint64_t bytes = f.tests.ecmp_bytes ? f.tests.ecmp_bytes : f.tests.flow_bytes;
  for (int k : f.tests.ecmp_sweep) {
    p.sweep_flows += nics * peers * k;
    p.sweep_move_s += peers ? static_cast<double>(peers * bytes) * 8 / (flow_gbps * 1e9) : 0;
  }
  p.sweep_probes = p.sweep_flows * 4;
  p.sweep_trace_s = nics > 0 ? static_cast<double>(p.sweep_probes) / nics / p.per_rank_probe_rate : 0;
  return p;
}

SuFabric read_fabric(const ConfigReader& r, const json& j, const std::vector<std::string>& node_names, int rails) {
  r.only(j, "fabric", {"sus", "spines", "leaves", "links", "uplink_gbps", "tests"});
  SuFabric f;
  read_sus(r, j, node_names, f);
  read_switches(r, j, rails, f);
  read_links(r, j, f);
  f.uplink_gbps = r.number(j, "fabric", "uplink_gbps", 0, 0.001, 100000, true);
  if (j.contains("tests")) {
    const json& t = j.at("tests");
    const std::string w = "fabric.tests";
    r.only(t, w,
           {"enabled", "flows_per_spine", "max_flows_per_spine", "probe_rate", "flow_bytes", "flow_min_fraction",
            "retransmits_lossy", "max_ttl", "max_flows_per_round", "ecmp_sweep", "ecmp_peers", "ecmp_bytes"});
    FabricTests& x = f.tests;
    x.enabled = r.boolean(t, w, "enabled", x.enabled);
    x.flows_per_spine = r.integer(t, w, "flows_per_spine", x.flows_per_spine, 1, 64);
    x.max_flows_per_spine = r.integer(t, w, "max_flows_per_spine", x.max_flows_per_spine, x.flows_per_spine, 256);
    x.probe_rate = r.number(t, w, "probe_rate", x.probe_rate, 1, 100000);
    x.flow_bytes = r.size(t, w, "flow_bytes", x.flow_bytes);
    x.flow_min_fraction = r.number(t, w, "flow_min_fraction", x.flow_min_fraction, 0.01, 1);
    x.retransmits_lossy = r.integer(t, w, "retransmits_lossy", x.retransmits_lossy, 1, 1000000000);
    x.max_ttl = r.integer(t, w, "max_ttl", x.max_ttl, 3, 32);
    x.max_flows_per_round = r.integer(t, w, "max_flows_per_round", x.max_flows_per_round, 0, 1000000);
    if (x.flow_bytes < 4096 || x.flow_bytes > (4ULL << 30)) r.fail(w + ".flow_bytes", "use 4K .. 4G");
    if (t.contains("ecmp_sweep")) {
      const json& list = t.at("ecmp_sweep");
      if (!list.is_array()) r.fail(w + ".ecmp_sweep", "expected a list of flows per connection, e.g. [1, 2, 4, 8]");
      for (const auto& v : list) {
        if (!v.is_number_integer() || v.get<int>() < 1 || v.get<int>() > 64)
          r.fail(w + ".ecmp_sweep", fmt::format("{} is not a flow count in 1..64", v.dump()));
        x.ecmp_sweep.push_back(v.get<int>());
      }
    }
    x.ecmp_peers = r.integer(t, w, "ecmp_peers", x.ecmp_peers, 1, 256);
    x.ecmp_bytes = r.size(t, w, "ecmp_bytes", x.ecmp_bytes);
    if (x.ecmp_bytes != 0 && (x.ecmp_bytes < 65536 || x.ecmp_bytes > (4ULL << 30)))
      r.fail(w + ".ecmp_bytes", "use 64K .. 4G (0: flow_bytes)");
  }
  return f;
}

std::vector<int> parse_ecmp_sweep(const std::string& text, const std::string& where) {
  std::vector<int> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    int k = 0;
    try {
      size_t used = 0;
      k = std::stoi(item, &used);
      if (used != item.size()) k = 0;
    } catch (const std::exception&) {
      k = 0;
    }
    if (k < 1 || k > 64)
      throw UsageError(
          fmt::format("{} '{}': '{}' is not a flow count in 1..64; give a list such as 1,2,4,8", where, text, item));
    out.push_back(k);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace railbench
