#include "bench/commands/validate/su_config.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/commands/validate/config_reader.h"
#include "lib/core/config_path.h"
#include "lib/core/errors.h"
#include "lib/core/sizes.h"
#include "lib/runtime/hostlist.h"

namespace railbench {
namespace {

using nlohmann::json;

bool valid_ib_mtu(int mtu) {
  return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

// The fields outside rails, thresholds and tests: the SU's name, nodes and transport.
void read_top_level(const ConfigReader& r, const json& doc, SuConfig& c) {
  c.name = r.string(doc, "", "name", std::filesystem::path(c.path).stem().string());
  c.nodes_expr = r.string(doc, "", "nodes", "", true);
  try {
    c.nodes = expand_hostlist(c.nodes_expr, kMaxSuNodes);
  } catch (const UsageError& e) {
    r.fail("nodes", e.what());
  }
  std::set<std::string> seen;
  for (const auto& n : c.nodes) {
    if (!seen.insert(n).second) r.fail("nodes", fmt::format("node '{}' is listed twice", n));
  }
  c.gpus_per_node = r.integer(doc, "", "gpus_per_node", 0, 1, 64, true);
  c.transport = r.string(doc, "", "transport", c.transport);
  try {
    transport_traits(c.transport);  // any -t form of a registered transport, built here or not
  } catch (const UsageError& e) {
    r.fail("transport", e.what());
  }
  c.gid_index = r.integer(doc, "", "gid_index", -1, -1, 255);
  c.qps_per_peer = r.integer(doc, "", "qps_per_peer", 1, 1, 64);
}

// rails[i].leaves: {"r0-leaf0": "gpu[001-032]", "r0-leaf1": "gpu[033-064]"}: every node of
// the SU under exactly one leaf, as the fabric's cabling plan has it.
void read_leaves(const ConfigReader& r, const json& j, const std::string& where, const SuConfig& c, SuRail& rail) {
  if (!j.is_object() || j.empty())
    r.fail(where, "expected an object of leaf -> hostlist, e.g. {\"leaf0\": \"gpu[001-032]\", \"leaf1\": ...}");
  const std::set<std::string> known(c.nodes.begin(), c.nodes.end());
  for (const auto& [leaf, expr] : j.items()) {
    if (!expr.is_string()) r.fail(where + "." + leaf, "expected a hostlist string, e.g. \"gpu[001-032]\"");
    std::vector<std::string> nodes;
    try {
      nodes = expand_hostlist(expr.get<std::string>(), kMaxSuNodes);
    } catch (const UsageError& e) {
      r.fail(where + "." + leaf, e.what());
    }
    for (const auto& n : nodes) {
      if (!known.count(n)) r.fail(where + "." + leaf, fmt::format("node '{}' is not in nodes", n));
      const auto [it, fresh] = rail.node_leaf.emplace(n, leaf);
      if (!fresh) r.fail(where, fmt::format("node '{}' is under two leaves ({} and {})", n, it->second, leaf));
    }
    rail.leaf_names.push_back(leaf);
  }
  for (const auto& n : c.nodes)
    if (!rail.node_leaf.count(n))
      r.fail(where, fmt::format("node '{}' has no leaf: list it under one of {}", n, fmt::join(rail.leaf_names, ", ")));
  rail.leaf = rail.leaf_names.size() == 1 ? rail.leaf_names.front()
                                          : fmt::format("{}..{}", rail.leaf_names.front(), rail.leaf_names.back());
}

// rails[i]: one NIC per GPU slot, each slot and each NIC used once. `have` and `nics`
// are what the entries before it took.
SuRail read_rail(const ConfigReader& r, const json& e, size_t i, const SuConfig& c, std::vector<bool>& have,
                 std::set<std::string>& nics) {
  const std::string where = fmt::format("rails[{}]", i);
  r.only(e, where, {"gpu", "nic", "leaf", "leaves", "speed_gbps", "line_rate_gbps", "mtu"});
  SuRail rail;
  rail.gpu = r.integer(e, where, "gpu", static_cast<int>(i), 0, c.gpus_per_node - 1);
  if (have[rail.gpu]) r.fail(where + ".gpu", fmt::format("GPU slot {} has two rails", rail.gpu));
  have[rail.gpu] = true;
  rail.nic = r.string(e, where, "nic", "", true);
  if (!nics.insert(rail.nic).second) r.fail(where + ".nic", fmt::format("NIC '{}' serves two slots", rail.nic));
  rail.leaf = r.string(e, where, "leaf", fmt::format("leaf{}", rail.gpu));
  if (e.contains("leaves")) {
    if (e.contains("leaf"))
      r.fail(where + ".leaves", "and leaf both given: leaf names the one leaf of the rail, leaves a leaf per node");
    read_leaves(r, e.at("leaves"), where + ".leaves", c, rail);
  }
  rail.speed_gbps = r.number(e, where, "speed_gbps", 0, 0.001, 100000, true);
  rail.line_rate_gbps = r.number(e, where, "line_rate_gbps", rail.speed_gbps, 0.001, 100000);
  rail.mtu = r.integer(e, where, "mtu", 0, 256, 65536, true);
  if (c.rdma_nics() && !valid_ib_mtu(rail.mtu)) {
    r.fail(where + ".mtu", fmt::format("{} is not an IB MTU: with transport {} use 256, 512, 1024, 2048 or 4096 "
                                       "(the active MTU of the port)",
                                       rail.mtu, c.transport));
  }
  return rail;
}

void read_rails(const ConfigReader& r, const json& doc, SuConfig& c) {
  if (!doc.contains("rails") || !doc.at("rails").is_array()) {
    r.fail("rails", "missing; expected a list with one entry per GPU slot: {\"gpu\": 0, \"nic\": \"mlx5_0\", ...}");
  }
  const json& rails = doc.at("rails");
  if (static_cast<int>(rails.size()) != c.gpus_per_node) {
    r.fail("rails", fmt::format("has {} entries but gpus_per_node is {}: one NIC (rail) per GPU slot", rails.size(),
                                c.gpus_per_node));
  }
  c.rails.resize(rails.size());
  std::vector<bool> have(rails.size(), false);
  std::set<std::string> nics;
  for (size_t i = 0; i < rails.size(); ++i) {
    const SuRail rail = read_rail(r, rails[i], i, c, have, nics);
    c.rails[rail.gpu] = rail;
  }
}

// Every threshold is optional: a missing one keeps its default (su_config.h).
void read_thresholds(const ConfigReader& r, const json& j, SuThresholds& t) {
  const std::string w = "thresholds";
  r.only(j, w,
         {"bw_min_fraction",
          "bidir_min_fraction",
          "lat_p50_max_us",
          "lat_p99_max_us",
          "rel_bw_below_median",
          "rel_lat_above_median",
          "rel_lat_min_us",
          "mad_k",
          "spread_above_median",
          "link_downs_fail",
          "baseline_bw_below",
          "history_bw_below",
          "burn_in_below_median",
          "allreduce_busbw_min_fraction",
          "alltoall_busbw_min_fraction",
          "counter_errors_fail",
          "counter_drops_warn",
          "counter_retransmits_warn",
          "counter_rail_factor",
          "tenant_busbw_min_ratio",
          "bisection_min_fraction"});
  t.bw_min_fraction = r.number(j, w, "bw_min_fraction", t.bw_min_fraction, 0, 1);
  t.bidir_min_fraction = r.number(j, w, "bidir_min_fraction", t.bidir_min_fraction, 0, 1);
  t.lat_p50_max_us = r.number(j, w, "lat_p50_max_us", t.lat_p50_max_us, 0, 1e7);
  t.lat_p99_max_us = r.number(j, w, "lat_p99_max_us", t.lat_p99_max_us, 0, 1e7);
  t.rel_bw_below_median = r.number(j, w, "rel_bw_below_median", t.rel_bw_below_median, 0.01, 1);
  t.rel_lat_above_median = r.number(j, w, "rel_lat_above_median", t.rel_lat_above_median, 0.01, 1000);
  t.rel_lat_min_us = r.number(j, w, "rel_lat_min_us", t.rel_lat_min_us, 0, 1e7);
  t.mad_k = r.number(j, w, "mad_k", t.mad_k, 0, 100);
  t.spread_above_median = r.number(j, w, "spread_above_median", t.spread_above_median, 0.01, 1);
  t.link_downs_fail = r.integer(j, w, "link_downs_fail", t.link_downs_fail, 1, 1000000);
  t.baseline_bw_below = r.number(j, w, "baseline_bw_below", t.baseline_bw_below, 0.001, 1);
  t.history_bw_below = r.number(j, w, "history_bw_below", t.history_bw_below, 0.001, 1);
  t.counter_errors_fail = r.integer(j, w, "counter_errors_fail", t.counter_errors_fail, 0, 2000000000);
  t.counter_drops_warn = r.integer(j, w, "counter_drops_warn", t.counter_drops_warn, 0, 2000000000);
  t.counter_retransmits_warn = r.integer(j, w, "counter_retransmits_warn", t.counter_retransmits_warn, 0, 2000000000);
  t.counter_rail_factor = r.number(j, w, "counter_rail_factor", t.counter_rail_factor, 1, 1e6);
  t.burn_in_below_median = r.number(j, w, "burn_in_below_median", t.burn_in_below_median, 0.01, 1);
  t.allreduce_busbw_min_fraction =
      r.number(j, w, "allreduce_busbw_min_fraction", t.allreduce_busbw_min_fraction, 0, 10);
  t.alltoall_busbw_min_fraction = r.number(j, w, "alltoall_busbw_min_fraction", t.alltoall_busbw_min_fraction, 0, 10);
  t.tenant_busbw_min_ratio = r.number(j, w, "tenant_busbw_min_ratio", t.tenant_busbw_min_ratio, 0, 1);
  t.bisection_min_fraction = r.number(j, w, "bisection_min_fraction", t.bisection_min_fraction, 0, 1);
}

// Every test setting is optional too; the sizes are checked against each other after.
void read_tests(const ConfigReader& r, const json& j, SuTests& s) {
  const std::string w = "tests";
  r.only(j, w,
         {"bw_bytes", "bw_window", "bw_iters", "lat_bytes", "lat_iters", "collective_bytes", "collective_iters",
          "cross_rail", "collectives", "pair_timeout_s", "isolation", "isolation_timeout_s", "interference",
          "bisection", "bisection_cross_rail"});
  s.bw_bytes = r.size(j, w, "bw_bytes", s.bw_bytes);
  s.bw_window = r.integer(j, w, "bw_window", s.bw_window, 1, 1024);
  s.bw_iters = r.integer(j, w, "bw_iters", s.bw_iters, 1, 100000);
  s.lat_bytes = r.size(j, w, "lat_bytes", s.lat_bytes);
  s.lat_iters = r.integer(j, w, "lat_iters", s.lat_iters, 1, 10000000);
  s.collective_bytes = r.size(j, w, "collective_bytes", s.collective_bytes);
  s.collective_iters = r.integer(j, w, "collective_iters", s.collective_iters, 1, 100000);
  s.cross_rail = r.boolean(j, w, "cross_rail", s.cross_rail);
  s.collectives = r.boolean(j, w, "collectives", s.collectives);
  s.pair_timeout_s = r.number(j, w, "pair_timeout_s", s.pair_timeout_s, 0.1, 3600);
  s.isolation = r.boolean(j, w, "isolation", s.isolation);
  s.isolation_timeout_s = r.number(j, w, "isolation_timeout_s", s.isolation_timeout_s, 0.1, 60);
  s.interference = r.boolean(j, w, "interference", s.interference);
  s.bisection = r.boolean(j, w, "bisection", s.bisection);
  s.bisection_cross_rail = r.boolean(j, w, "bisection_cross_rail", s.bisection_cross_rail);
  if (s.bw_bytes == 0 || s.bw_bytes > (1ULL << 30)) r.fail("tests.bw_bytes", "use 1 byte .. 1G");
  if (s.lat_bytes == 0 || s.lat_bytes > s.bw_bytes) r.fail("tests.lat_bytes", "use 1 byte .. tests.bw_bytes");
  if (s.collective_bytes < 1024 || s.collective_bytes > (1ULL << 32)) r.fail("tests.collective_bytes", "use 1K .. 4G");
}

// "0x8001" or 32769: a 16-bit P_Key; bit 15 is the membership bit, the rest the key.
int read_pkey(const ConfigReader& r, const json& e, const std::string& where) {
  const json& v = e.at("pkey");
  long long key = -1;
  if (v.is_number_unsigned()) {
    key = v.get<long long>();
  } else if (v.is_string()) {
    const std::string t = v.get<std::string>();
    char* end = nullptr;
    key = std::strtoll(t.c_str(), &end, 0);
    if (t.empty() || *end != '\0') key = -1;
  }
  if (key < 1 || key > 0xffff || (key & 0x7fff) == 0 || (key & 0x7fff) == 0x7fff) {
    r.fail(where + ".pkey", fmt::format("expected a partition key such as \"0x8001\" (1..0x7ffe; 0x7fff is the default "
                                        "partition, which every port holds), got {}",
                                        cut_for_error(v.dump())));
  }
  return static_cast<int>(key & 0x7fff);
}

// tenants: {"a": "node[01-02]", "b": {"nodes": "node[03-04]", "pkey": "0x8002"}}. Every
// node of the SU is in exactly one tenant, each tenant has two nodes or more (a tenant
// of one has no pair to test), and there are two tenants or more.
void read_tenants(const ConfigReader& r, const json& j, SuConfig& c) {
  if (!j.is_object() || j.size() < 2) {
    r.fail("tenants",
           "expected an object of 2 or more tenants, name -> hostlist, e.g. {\"a\": \"node[01-02]\", "
           "\"b\": \"node[03-04]\"}; leave it out for a single-tenant SU");
  }
  std::map<std::string, std::string> owner;
  for (const auto& [name, v] : j.items()) {
    const std::string where = "tenants." + name;
    if (name.empty() || name.size() > 32 || name.find_first_of(" \t,/") != std::string::npos)
      r.fail(where, "a tenant name is 1..32 characters without spaces, commas or slashes");
    SuTenant t;
    t.name = name;
    if (v.is_string()) {
      t.nodes_expr = v.get<std::string>();
    } else {
      r.only(v, where, {"nodes", "pkey", "membership"});
      t.nodes_expr = r.string(v, where, "nodes", "", true);
      if (v.contains("pkey")) t.pkey = read_pkey(r, v, where);
      const std::string m = r.string(v, where, "membership", "full");
      if (m != "full" && m != "limited") r.fail(where + ".membership", "use \"full\" or \"limited\"");
      if (m == "limited" && t.pkey < 0) r.fail(where + ".membership", "needs a pkey: membership is the P_Key's bit 15");
      t.full_member = m == "full";
    }
    try {
      t.nodes = expand_hostlist(t.nodes_expr, kMaxSuNodes);
    } catch (const UsageError& e) {
      r.fail(where, e.what());
    }
    if (t.nodes.size() < 2) r.fail(where, "has one node: a tenant needs 2 or more (its nodes are tested in pairs)");
    for (const auto& n : t.nodes) {
      if (std::find(c.nodes.begin(), c.nodes.end(), n) == c.nodes.end())
        r.fail(where, fmt::format("node '{}' is not in the SU's nodes ({})", n, c.nodes_expr));
      const auto [it, added] = owner.emplace(n, name);
      if (!added) r.fail(where, fmt::format("node '{}' is also in tenant '{}': a node has one tenant", n, it->second));
    }
    c.tenants.push_back(std::move(t));
  }
  for (const auto& n : c.nodes) {
    if (!owner.count(n))
      r.fail("tenants", fmt::format("node '{}' is in no tenant: add it to one (a node outside every tenant would "
                                    "have no partner to be tested with)",
                                    n));
  }
  std::set<int> keys;
  for (const auto& t : c.tenants) {
    if (t.pkey >= 0 && !keys.insert(t.pkey).second)
      r.fail("tenants." + t.name + ".pkey", fmt::format("0x{:04x} is another tenant's partition key too", t.pkey));
  }
}

}  // namespace

std::vector<int> SuConfig::tenant_of(const std::vector<std::string>& node_names) const {
  if (tenants.empty()) return {};
  std::vector<int> out(node_names.size(), -1);
  for (size_t i = 0; i < node_names.size(); ++i)
    for (size_t t = 0; t < tenants.size(); ++t)
      for (const auto& n : tenants[t].nodes)
        if (n == node_names[i]) out[i] = static_cast<int>(t);
  return out;
}

TransportTraits SuConfig::traits_over(const std::string& form) const {
  std::vector<std::string> nics;
  for (const auto& r : rails) nics.push_back(r.nic);
  return transport_traits(form, nics);
}

SuConfig parse_su_config(const std::string& text, const std::string& path) {
  check_config_nesting(text, "config " + path);
  json doc;
  try {
    doc = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw UsageError(fmt::format("config {}: not valid JSON ({}); comments // and /* */ are allowed", path,
                                 cut_for_error(e.what(), 200)));
  }
  ConfigReader r(path);
  r.only(doc, "",
         {"name", "description", "nodes", "gpus_per_node", "transport", "gid_index", "qps_per_peer", "rails",
          "thresholds", "tests", "tenants", "fabric"});
  SuConfig c;
  c.path = path;
  read_top_level(r, doc, c);
  read_rails(r, doc, c);
  if (doc.contains("thresholds")) read_thresholds(r, doc.at("thresholds"), c.thresholds);
  if (doc.contains("tests")) read_tests(r, doc.at("tests"), c.tests);
  if (doc.contains("tenants")) read_tenants(r, doc.at("tenants"), c);
  if (doc.contains("fabric")) c.fabric = read_fabric(r, doc.at("fabric"), c.nodes, c.gpus_per_node);
  return c;
}

SuConfig load_su_config(const std::string& name_or_path) {
  const std::string path = resolve_config_path(name_or_path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw UsageError(
        fmt::format("config '{}': cannot read {}: give a path, or the name of a config in the configs "
                    "directory, e.g. su-h200-32x8-400g (looked in: {})",
                    name_or_path, path, find_config_dir().searched));
  }
  return parse_su_config(read_config_file(path, fmt::format("config '{}'", name_or_path)), path);
}

}  // namespace railbench
