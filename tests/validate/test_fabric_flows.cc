// validate's fabric phase, its pure parts: the config's fabric section, what a trace
// says about a flow's path, the measurement rounds, the coverage findings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bench/commands/validate/fabric_ecmp.h"
#include "bench/commands/validate/fabric_flows.h"
#include "bench/commands/validate/fabric_verdict.h"
#include "bench/commands/validate/rank_layout.h"
#include "bench/commands/validate/su_config.h"

using namespace railbench;

namespace {

// 2 SUs x 2 nodes x 2 rails, 2 spines; links listed with the addresses a probe sees.
std::string config_text(const std::string& fabric_extra = "", const std::string& first_leaf_su = "su1") {
  std::string links;
  for (int s = 1; s <= 2; ++s)
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < 2; ++k)
        links += fmt::format(
            R"({}{{"name": "su{}-leaf{}-spine{}", "leaf": "su{}-leaf{}", "leaf_port": "spine{}", "leaf_address": "10.9.{}.{}",
               "spine": "spine{}", "spine_port": "s{}l{}", "spine_address": "10.9.{}.{}"}})",
            links.empty() ? "" : ",", s, r, k, s, r, k, 128 + 8 * (s - 1) + r, 4 * k + 1, k, s, r,
            128 + 8 * (s - 1) + r, 4 * k + 2);
  return fmt::format(R"({{"nodes": "node[01-04]", "gpus_per_node": 2, "transport": "ofi:tcp",
    "rails": [{{"gpu": 0, "nic": "rail0", "speed_gbps": 10, "mtu": 1500}}, {{"gpu": 1, "nic": "rail1", "speed_gbps": 10, "mtu": 1500}}],
    "fabric": {{"sus": [{{"name": "su1", "nodes": "node[01-02]"}}, {{"name": "su2", "nodes": "node[03-04]"}}],
      "spines": ["spine0", "spine1"], "uplink_gbps": 1 {},
      "leaves": [{{"name": "su1-leaf0", "su": "{}", "rail": 0, "addresses": ["10.9.0.254"]}},
                 {{"name": "su1-leaf1", "su": "su1", "rail": 1, "addresses": ["10.9.1.254"]}},
                 {{"name": "su2-leaf0", "su": "su2", "rail": 0, "addresses": ["10.9.16.0/24"]}},
                 {{"name": "su2-leaf1", "su": "su2", "rail": 1, "addresses": ["10.9.17.254"]}}],
      "links": [{}]}}}})",
                     fabric_extra, first_leaf_su, links);
}

SuLayout layout() {
  SuLayout L;
  L.node_names = {"node01", "node02", "node03", "node04"};
  for (int n = 0; n < 4; ++n) {
    L.rank_of.push_back({2 * n, 2 * n + 1});
    for (int s = 0; s < 2; ++s) {
      L.node_of.push_back(n);
      L.slot_of.push_back(s);
    }
  }
  return L;
}

std::vector<FabricNic> nics(const SuFabric& f) {
  std::vector<std::string> ips;
  for (int n = 1; n <= 4; ++n)
    for (int r = 0; r < 2; ++r) ips.push_back(fmt::format("10.9.{}.{}", 16 * ((n - 1) / 2) + r, n));
  return fabric_nics(f, layout(), ips, std::vector<uint16_t>(8, 5000));
}

FlowTrace trace(std::vector<std::string> hops, bool reached) {
  FlowTrace t;
  for (size_t i = 0; i < hops.size(); ++i) t.hops.push_back({static_cast<int>(i + 1), hops[i], 10});
  t.reached = reached;
  return t;
}

}  // namespace

TEST_CASE("fabric config: SUs, spines, leaves and links are read and checked", "[validate][fabric]") {
  const SuConfig c = parse_su_config(config_text(), "t.json");
  const SuFabric& f = c.fabric;
  REQUIRE(f.present());
  CHECK(f.sus.size() == 2);
  CHECK(f.links.size() == 8);
  CHECK(f.su_of("node03") == 1);
  CHECK(f.leaves[f.leaf_index(1, 1)].name == "su2-leaf1");
  CHECK(f.switch_of("10.9.0.254") == "su1-leaf0");
  CHECK(f.switch_of("10.9.16.77") == "su2-leaf0");  // a prefix
  CHECK(f.switch_of("10.9.129.6") == "spine1");     // a link's spine end
  CHECK(f.switch_of("10.9.99.1").empty());
  CHECK_THROWS_WITH(parse_su_config(config_text(", \"color\": 1"), "t.json"),
                    Catch::Contains("fabric.color: unknown field"));
  CHECK_THROWS_WITH(parse_su_config(config_text("", "su2"), "t.json"), Catch::Contains("SU su2 rail 0 has two leaves"));
  // No links given: every leaf to every spine.
  std::string text = config_text();
  text = text.substr(0, text.find(",\n      \"links\"")) + "}}";
  CHECK(parse_su_config(text, "t.json").fabric.links.size() == 8);
}

TEST_CASE("fabric paths: a trace's hops name the spine and the two links", "[validate][fabric]") {
  const SuFabric f = parse_su_config(config_text(), "t.json").fabric;
  const auto n = nics(f);  // n[0]: node01 rail0 on su1-leaf0, n[4]: node03 rail0 on su2-leaf0
  REQUIRE(n[4].leaf == f.leaf_index(1, 0));
  const int up = f.link_index("su1-leaf0", "spine1"), down = f.link_index("su2-leaf0", "spine1");

  FlowPath p = map_path(f, n[0], n[4], trace({"10.9.0.254", "10.9.128.6", "10.9.136.5", "10.9.16.3"}, true));
  CHECK(p.spine == 1);
  CHECK(p.links == std::vector<int>{up, down});
  CHECK(p.next_candidates.empty());
  CHECK(p.mismatch.empty());

  SECTION("cut after the spine: the link down, or the way back from the destination leaf") {
    p = map_path(f, n[0], n[4], trace({"10.9.0.254", "10.9.128.6"}, false));
    CHECK(p.links == std::vector<int>{up});
    std::set<int> want;
    for (size_t i = 0; i < f.links.size(); ++i)
      if (f.links[i].leaf == "su1-leaf0" || f.links[i].leaf == "su2-leaf0") want.insert(static_cast<int>(i));
    CHECK(std::set<int>(p.next_candidates.begin(), p.next_candidates.end()) == want);
    CHECK(want.count(down) == 1);
  }
  SECTION("cut after the leaf: one of the leaf's uplinks") {
    p = map_path(f, n[0], n[4], trace({"10.9.0.254"}, false));
    CHECK(p.links.empty());
    CHECK(p.next_candidates == std::vector<int>{f.link_index("su1-leaf0", "spine0"), up});
  }
  SECTION("an address in no switch, a first hop on the wrong leaf: the config is named") {
    p = map_path(f, n[0], n[4], trace({"10.9.0.254", "10.7.7.7", "10.9.136.5", "10.9.16.3"}, true));
    CHECK_THAT(p.mismatch, Catch::Contains("10.7.7.7, which is in no switch"));
    p = map_path(f, n[0], n[4], trace({"10.9.1.254", "10.9.128.6", "10.9.136.5", "10.9.16.3"}, true));
    CHECK_THAT(p.mismatch,
               Catch::Contains("the first hop is su1-leaf1, but the config puts node01 rail0 under su1-leaf0"));
  }
}

TEST_CASE("fabric flows: every leaf pair's NICs take turns, rounds share no NIC and no link", "[validate][fabric]") {
  const SuFabric f = parse_su_config(config_text(), "t.json").fabric;
  const auto n = nics(f);
  int next_id = 0;
  std::vector<uint16_t> next_port(n.size(), 61000);
  std::map<std::pair<int, int>, int> used;
  const auto flows = plan_leaf_pair(n, f.leaf_index(0, 0), f.leaf_index(1, 0), 4, next_id, next_port, used);
  REQUIRE(flows.size() == 4);
  std::set<std::pair<int, int>> pairs;
  for (const auto& x : flows) {
    CHECK(n[x.src].leaf == f.leaf_index(0, 0));
    CHECK(n[x.dst].leaf == f.leaf_index(1, 0));
    pairs.insert({x.src, x.dst});
  }
  CHECK(pairs.size() == 4);  // 2 sources x 2 destinations, each once
  CHECK(next_id == 4);

  std::vector<FlowPath> paths(4);
  const int a = f.link_index("su1-leaf0", "spine0"), b = f.link_index("su2-leaf0", "spine0");
  const int c = f.link_index("su1-leaf0", "spine1"), d = f.link_index("su2-leaf0", "spine1");
  paths[0].links = {a, b};
  paths[1].links = {c, d};
  paths[2].links = {a, b};
  paths[3].links = {c, d};
  const auto rounds = measurement_rounds(flows, paths, {true, true, true, false});
  size_t scheduled = 0;
  for (const auto& r : rounds) {
    std::set<int> nic_used, link_used;
    for (int i : r) {
      CHECK(nic_used.insert(flows[i].src).second);
      CHECK(nic_used.insert(flows[i].dst).second);
      for (int l : paths[i].links) CHECK(link_used.insert(l).second);
    }
    scheduled += r.size();
  }
  CHECK(scheduled == 3);  // the unconnected flow is left out
}

TEST_CASE("fabric verdict: a leaf that never sends through a spine it receives from has a withdrawn route",
          "[validate][fabric]") {
  const SuFabric f = parse_su_config(config_text(", \"tests\": {\"flows_per_spine\": 4}"), "t.json").fabric;
  const auto n = nics(f);
  std::vector<FabricFlow> flows;
  // Every NIC pair of different leaves, 3 flows each; su1-leaf0's own flows all take spine0,
  // everything else alternates.
  int id = 0;
  for (size_t s = 0; s < n.size(); ++s)
    for (size_t t = 0; t < n.size(); ++t) {
      if (n[s].leaf == n[t].leaf) continue;
      for (int k = 0; k < 3; ++k) {
        FabricFlow x;
        x.plan = {id, static_cast<int>(s), static_cast<int>(t), static_cast<uint16_t>(61000 + id)};
        const int spine = n[s].leaf == 0 ? 0 : id % 2;
        x.path.spine = spine;
        x.path.links = {f.link_index(f.leaves[n[s].leaf].name, f.spines[spine].name),
                        f.link_index(f.leaves[n[t].leaf].name, f.spines[spine].name)};
        x.trace.reached = x.completed = true;
        x.gbps = 0.95;
        flows.push_back(x);
        ++id;
      }
    }
  const auto observed = observe_flows(f, flows, 1.0);
  const FabricJudgment j = judge_fabric(f, n, flows, observed, 1.0);
  REQUIRE(j.findings.size() == 1);
  CHECK(j.findings[0].kind == FindingKind::fabric);
  CHECK_THAT(j.findings[0].subject, Catch::Contains("su1-leaf0 port spine1 <-> spine1 port s1l0"));
  CHECK_THAT(j.findings[0].reason, Catch::Contains("its route via spine1 is withdrawn"));
  CHECK(j.findings[0].fabric_link == "su1-leaf0-spine1");

  SECTION("two flows that missed a spine prove nothing; source ports probed beyond them do") {
    std::vector<FabricFlow> few;
    int kept = 0;
    for (const auto& x : flows)
      if (n[x.plan.src].leaf != 0 || kept++ < 2) few.push_back(x);
    CHECK(judge_fabric(f, n, few, observe_flows(f, few, 1.0), 1.0).findings.empty());
    FabricSearch search;
    search.out.assign(f.leaves.size(), 0);
    search.in.assign(f.leaves.size(), 0);
    search.out[0] = 10;  // ten more ports out of su1-leaf0 answered at the spine, none at spine1
    const FabricJudgment js = judge_fabric(f, n, few, observe_flows(f, few, 1.0), 1.0, search);
    REQUIRE(js.findings.size() == 1);
    CHECK_THAT(js.findings[0].reason, Catch::Contains("2 flows and 10 probed source ports left it"));
  }

  SECTION("and a slow spine link among healthy ones is named with its flows") {
    const int bad = f.link_index("su2-leaf1", "spine1");
    for (auto& x : flows)
      if (std::find(x.path.links.begin(), x.path.links.end(), bad) != x.path.links.end()) x.gbps = 0.2;
    const auto o2 = observe_flows(f, flows, 1.0);
    const FabricJudgment j2 = judge_fabric(f, n, flows, o2, 1.0);
    bool named = false;
    for (const auto& x : j2.findings)
      named =
          named || (x.subject.find("(su2-leaf1-spine1)") != std::string::npos && x.fabric_link == "su2-leaf1-spine1");
    CHECK(named);
    CHECK(j2.findings.size() == 2);
  }

  SECTION("where one flow fills under half a path, the slow link is named against the median flow") {
    // Every healthy flow at 45% of the line rate (one TCP stream on a fast NIC), the bad
    // link's at 10%: against the line rate all are slow and no link stands out.
    const int bad = f.link_index("su2-leaf1", "spine1");
    std::vector<double> carried;
    for (auto& x : flows) {
      const bool through = std::find(x.path.links.begin(), x.path.links.end(), bad) != x.path.links.end();
      x.gbps = through ? 0.1 : 0.45;
      carried.push_back(x.gbps);
    }
    const double reference = healthy_flow_gbps(carried, 1.0);
    CHECK(reference == Approx(0.45));
    const auto o3 = observe_flows(f, flows, reference);
    const FabricJudgment j3 = judge_fabric(f, n, flows, o3, reference);
    std::set<std::string> named;
    for (const auto& x : j3.findings) named.insert(x.subject);
    CHECK(j3.findings.size() == 2);
    CHECK(std::any_of(named.begin(), named.end(),
                      [](const std::string& x) { return x.find("(su2-leaf1-spine1)") != std::string::npos; }));
    const auto against_line = observe_flows(f, flows, 1.0);
    CHECK(std::all_of(against_line.begin(), against_line.end(),
                      [](const FlowObservation& o) { return o.health == FlowHealth::slow; }));
  }
}

TEST_CASE("fabric verdict: a healthy flow's rate is the median flow, never above the line rate, from 8 flows",
          "[validate][fabric]") {
  CHECK(healthy_flow_gbps({0.2, 0.18, 0.19, 0.05, 0.21, 0.17, 0.2, 0.19}, 0.4) == Approx(0.19));
  CHECK(healthy_flow_gbps({0.2, 0.18, 0.19}, 0.4) == Approx(0.4));  // too few to tell
  CHECK(healthy_flow_gbps(std::vector<double>(10, 0.5), 0.4) == Approx(0.4));
  CHECK(healthy_flow_gbps({}, 0.4) == Approx(0.4));
}

namespace {

// A path over `spine` for flow p: up from its source's leaf, down to its destination's.
FlowPath path_over(const SuFabric& f, const std::vector<FabricNic>& n, const PlannedFlow& p, int spine) {
  FlowPath path;
  path.reached = true;
  path.spine = spine;
  path.links = {f.link_index(f.leaves[n[p.src].leaf].name, f.spines[spine].name),
                f.link_index(f.leaves[n[p.dst].leaf].name, f.spines[spine].name)};
  return path;
}

}  // namespace

TEST_CASE("fabric ECMP sweep: each NIC meets NICs of its rail in other SUs, k flows a connection, as many in as out",
          "[validate][fabric]") {
  const SuConfig c = parse_su_config(config_text(), "t.json");
  const SuFabric& f = c.fabric;
  const auto n = nics(f);
  int next_id = 100;
  std::vector<uint16_t> next_port(n.size(), 62000);
  // 8 peers asked, 2 there (the other SU's two NICs on the rail).
  const auto flows = plan_cross_su(f, n, 8, 3, next_id, next_port);
  CHECK(flows.size() == 8 * 2 * 3);
  CHECK(next_id == 100 + 48);
  std::map<int, int> in, out;
  std::set<std::pair<int, uint16_t>> ports;
  for (const auto& p : flows) {
    CHECK(n[p.src].rail == n[p.dst].rail);
    CHECK(f.leaves[n[p.src].leaf].su != f.leaves[n[p.dst].leaf].su);
    CHECK(ports.insert({p.src, p.src_port}).second);  // each flow its own source port
    ++out[p.src];
    ++in[p.dst];
  }
  for (size_t i = 0; i < n.size(); ++i) {
    CHECK(out[static_cast<int>(i)] == 6);
    CHECK(in[static_cast<int>(i)] == 6);
  }
  // One peer: each NIC one connection, and each receives one.
  const auto one = plan_cross_su(f, n, 1, 1, next_id, next_port);
  in.clear();
  for (const auto& p : one) ++in[p.dst];
  CHECK(one.size() == 8);
  CHECK(in.size() == 8);
}

TEST_CASE("fabric ECMP sweep: an even spread reaches the ideal, every flow on one spine half of it",
          "[validate][fabric]") {
  const SuConfig c = parse_su_config(config_text(), "t.json");
  const SuFabric& f = c.fabric;  // 2 spines, 1 Gb/s uplinks: a leaf's 2 NICs at 1 Gb/s fill its 2 uplinks
  const auto n = nics(f);
  const std::vector<double> nic_gbps(n.size(), 1.0);
  int next_id = 0;
  std::vector<uint16_t> next_port(n.size(), 62000);
  const auto flows = plan_cross_su(f, n, 2, 1, next_id, next_port);
  std::vector<FlowPath> even, one_spine;
  for (const auto& p : flows) {
    even.push_back(path_over(f, n, p, n[p.dst].node % 2));  // each NIC's two flows on two spines
    one_spine.push_back(path_over(f, n, p, 0));
  }
  const double bytes = 1e6;
  const EcmpStep a = judge_ecmp_step(f, n, nic_gbps, 1, flows, even, bytes, 0);
  CHECK(a.connections == 16);
  CHECK(a.traced == 16);
  CHECK(a.uplinks == 8);
  CHECK(a.uplinks_used == 8);
  CHECK(a.max_over_mean == Approx(1));
  CHECK(a.ideal_s == Approx(2 * bytes * 8 / 1e9));  // each NIC sends two flows' bytes at 1 Gb/s
  CHECK(a.fraction(a.predicted_s) == Approx(1));
  CHECK(a.fraction(0) == 0);  // not measured
  const EcmpStep b = judge_ecmp_step(f, n, nic_gbps, 1, flows, one_spine, bytes, 4 * bytes * 8 / 1e9);
  CHECK(b.uplinks_used == 4);
  CHECK(b.max_over_mean == Approx(2));
  CHECK(b.fraction(b.predicted_s) == Approx(0.5));
  CHECK(b.fraction(b.measured_s) == Approx(0.5));
  CHECK(smallest_reaching({b, a}, true) == 1);
  CHECK(smallest_reaching({b}, true) == -1);
}

TEST_CASE("fabric ECMP sweep: a leaf that keeps every connection's flows on one spine ignores the ports",
          "[validate][fabric]") {
  const SuConfig c = parse_su_config(config_text(), "t.json");
  const SuFabric& f = c.fabric;
  const auto n = nics(f);
  int next_id = 0;
  std::vector<uint16_t> next_port(n.size(), 62000);
  const auto flows = plan_cross_su(f, n, 2, 4, next_id, next_port);  // 4 connections a leaf, 4 flows each
  // su1-leaf0 hashes addresses only: a connection's flows on one spine (the connections
  // on both spines between them); every other leaf spreads a connection's flows.
  const int l3 = f.leaf_index(0, 0);
  std::vector<FlowPath> paths;
  for (size_t i = 0; i < flows.size(); ++i) {
    const PlannedFlow& p = flows[i];
    paths.push_back(path_over(f, n, p, n[p.src].leaf == l3 ? n[p.dst].node % 2 : static_cast<int>(i % 2)));
  }
  auto found = ports_ignored(f, n, flows, paths);
  REQUIRE(found.size() == 1);
  CHECK(found[0].subject == "su1-leaf0");
  CHECK(found[0].code == "RB-FABRIC-ECMP-PORTS-IGNORED");
  CHECK(found[0].severity == Severity::warn);
  // One connection of that leaf spread over both spines: the hash reads the ports.
  for (size_t i = 0; i < flows.size(); ++i)
    if (n[flows[i].src].leaf == l3 && flows[i].src == flows.front().src && flows[i].dst == flows.front().dst)
      paths[i] = path_over(f, n, flows[i], static_cast<int>(i % 2));
  if (n[flows.front().src].leaf == l3) CHECK(ports_ignored(f, n, flows, paths).empty());
  // Two flows a connection over 2 spines: each pinned by chance with p 1/2, 4 connections
  // 1/16: not enough to say.
  next_id = 0;
  const auto two = plan_cross_su(f, n, 2, 2, next_id, next_port);
  std::vector<FlowPath> pinned;
  for (const auto& p : two) pinned.push_back(path_over(f, n, p, n[p.dst].node % 2));
  CHECK(ports_ignored(f, n, two, pinned).empty());
}
