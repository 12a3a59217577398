// validate's judgement of fabric counters, on pair results alone: each side's counters
// go to its own link, error counters fail a link whose bandwidth passed, drops far above
// the rail warn, and a link's finding names its counters against its partners'.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "bench/commands/validate/counter_findings.h"
#include "bench/commands/validate/su_config.h"

using namespace railbench;
using nlohmann::json;

namespace {

SuConfig su4x2() {
  SuConfig c;
  c.nodes = {"node01", "node02", "node03", "node04"};
  c.gpus_per_node = 2;
  c.rails.push_back({0, "rail0", "leaf0", 10, 0.4, 1500});
  c.rails.push_back({1, "rail1", "leaf1", 10, 0.4, 1500});
  return c;
}

// What FabricCounters::end_local() gives for one rail: {} when nothing moved.
json side(const json& kinds, const json& deltas) {
  return json{{"rail", 0}, {"rail_name", "rail"}, {"kinds", kinds}, {"deltas", deltas}};
}

// Every node pair on every rail; every side saw a few drops, as a shallow queue makes.
std::vector<PairResult> pairs_with(const std::function<void(PairResult&)>& shape) {
  std::vector<PairResult> out;
  for (int r = 0; r < 2; ++r)
    for (int a = 0; a < 4; ++a)
      for (int b = a + 1; b < 4; ++b) {
        PairResult p{PairPhase::rail, a, b, r, r};
        p.bw_ab = p.bw_ba = 0.05;
        p.counters_a = side({{"drop", 3}}, {{"qdisc/drops", 3}, {"net/tx_bytes", 1000}});
        p.counters_b = json::object();
        shape(p);
        out.push_back(p);
      }
  return out;
}

}  // namespace

TEST_CASE("counters: each side's counters go to its own link, the other side's to its partners", "[counters]") {
  const auto pairs = pairs_with([](PairResult&) {});
  const auto lc = link_counters(2, 4, pairs);
  // node01 is side a of its 3 pairs on each rail: 9 drops; node04 always side b.
  CHECK(lc[0][0].read);
  CHECK(lc[0][0].tests == 3);
  CHECK(lc[0][0].kinds.at("drop") == 9);
  CHECK(lc[0][0].deltas.at("qdisc/drops") == 9);
  CHECK(lc[0][0].partner_kinds.empty());
  CHECK(lc[0][3].kinds.empty());
  CHECK(lc[0][3].partner_kinds.at("drop") == 9);
  CHECK(describe_counters(lc[0][0].kinds, lc[0][0].deltas) == "9 drop (qdisc/drops 9)");
  CHECK(describe_counters(lc[0][3].kinds, lc[0][3].deltas) == "none");
  // --no-counters: nothing read, nothing judged.
  auto off = pairs_with([](PairResult& p) { p.counters_a = p.counters_b = nullptr; });
  CHECK_FALSE(link_counters(2, 4, off)[0][0].read);
  std::vector<Finding> findings;
  judge_counters(su4x2(), su4x2().nodes, link_counters(2, 4, off), findings);
  CHECK(findings.empty());
}

TEST_CASE("counters: a clean SU has no counter finding, error counters fail a link that passed", "[counters]") {
  const SuConfig c = su4x2();
  std::vector<Finding> findings;
  judge_counters(c, c.nodes, link_counters(2, 4, pairs_with([](PairResult&) {})), findings);
  CHECK(findings.empty());

  // node03 rail1 (side b against node01 and node02, side a against node04): symbol errors.
  auto pairs = pairs_with([](PairResult& p) {
    if (p.rail_a != 1) return;
    if (p.node_b == 2) p.counters_b = side({{"error", 2}}, {{"port/symbol_error", 2}});
    if (p.node_a == 2) p.counters_a = side({{"error", 1}, {"drop", 3}}, {{"port/symbol_error", 1}, {"qdisc/drops", 3}});
  });
  judge_counters(c, c.nodes, link_counters(2, 4, pairs), findings);
  REQUIRE(findings.size() == 1);
  const Finding& f = findings[0];
  CHECK(f.severity == Severity::fail);
  CHECK(f.kind == FindingKind::counters);
  CHECK(f.node == 2);
  CHECK(f.rail == 1);
  CHECK(f.subject == "node03 rail1 (leaf1)");
  CHECK(f.measured == 5);
  CHECK(f.reason ==
        "its NIC counted 5 error(s) during its pair tests (limit 1): 5 error (port/symbol_error 5), 3 drop "
        "(qdisc/drops 3); partners: 6 drop (qdisc/drops 6)");

  // counter_errors_fail 0: not judged.
  SuConfig off = c;
  off.thresholds.counter_errors_fail = 0;
  findings.clear();
  judge_counters(off, off.nodes, link_counters(2, 4, pairs), findings);
  CHECK(findings.empty());
}

TEST_CASE("counters: drops far above the rail's warn, a link's own finding names its counters", "[counters]") {
  const SuConfig c = su4x2();
  // node02 rail0 drops 1,500 packets in each of its tests (side b against node01, side a
  // against node03 and node04); every other link 3 per test.
  auto lossy = [](PairResult& p) {
    if (p.rail_a != 0) return;
    const json heavy = side({{"drop", 1500}}, {{"qdisc/drops", 1500}});
    if (p.node_a == 1) p.counters_a = heavy;
    if (p.node_b == 1) p.counters_b = heavy;
  };
  std::vector<Finding> findings;
  judge_counters(c, c.nodes, link_counters(2, 4, pairs_with(lossy)), findings);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].severity == Severity::warn);
  CHECK(findings[0].kind == FindingKind::counters);
  CHECK(findings[0].subject == "node02 rail0 (leaf0)");
  CHECK(findings[0].unit == "drops");
  CHECK(findings[0].measured == 4500);
  CHECK(findings[0].reason ==
        "4,500 drops during its pair tests (rail median 6): 4,500 drop (qdisc/drops 4,500); partners: 3 drop "
        "(qdisc/drops 3)");

  // The same link already found slow: no second finding, its finding says what the
  // counters showed.
  findings = {
      Finding{Severity::fail, FindingKind::bandwidth, "node02 rail0 (leaf0)", "0.01 GB/s", 0.01, 0.05, "GB/s", 1, 0}};
  judge_counters(c, c.nodes, link_counters(2, 4, pairs_with(lossy)), findings);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].reason ==
        "0.01 GB/s; counters during its tests: 4,500 drop (qdisc/drops 4,500); partners: 3 drop (qdisc/drops 3)");

  // Drops every link of the rail has are the fabric's: no link is singled out.
  auto everywhere = pairs_with([](PairResult& p) {
    const json heavy = side({{"drop", 1500}}, {{"qdisc/drops", 1500}});
    p.counters_a = heavy, p.counters_b = heavy;
  });
  findings.clear();
  judge_counters(c, c.nodes, link_counters(2, 4, everywhere), findings);
  CHECK(findings.empty());
}

TEST_CASE("counters: pair results keep each side's counters through JSON, older files have none", "[counters]") {
  PairResult p{PairPhase::rail, 0, 1, 0, 0};
  p.counters_a = side({{"drop", 2}}, {{"qdisc/drops", 2}});
  p.counters_b = json::object();
  const PairResult back = json(p).get<PairResult>();
  CHECK(back.counters_a == p.counters_a);
  CHECK(back.counters_b == json::object());
  json old = json(PairResult{});
  CHECK_FALSE(old.contains("counters_a"));
  CHECK(old.get<PairResult>().counters_a.is_null());
}

TEST_CASE("counters: the SU config's counter thresholds, their defaults and bad values", "[counters]") {
  const std::string base = R"({"name": "t", "nodes": "n[1-2]", "gpus_per_node": 1, "transport": "ofi:tcp",
    "rails": [{"gpu": 0, "nic": "eth0", "speed_gbps": 400, "mtu": 9000}])";
  const SuConfig d = parse_su_config(base + "}", "t.json");
  CHECK(d.thresholds.counter_errors_fail == 1);
  CHECK(d.thresholds.counter_drops_warn == 100);
  CHECK(d.thresholds.counter_retransmits_warn == 1000);
  CHECK(d.thresholds.counter_rail_factor == 4);
  const SuConfig c = parse_su_config(base + R"(, "thresholds": {"counter_errors_fail": 0, "counter_drops_warn": 20,
    "counter_retransmits_warn": 50, "counter_rail_factor": 10}})",
                                     "t.json");
  CHECK(c.thresholds.counter_errors_fail == 0);
  CHECK(c.thresholds.counter_drops_warn == 20);
  CHECK(c.thresholds.counter_retransmits_warn == 50);
  CHECK(c.thresholds.counter_rail_factor == 10);
  CHECK_THROWS_WITH(parse_su_config(base + R"(, "thresholds": {"counter_drops_warn": -1}})", "t.json"),
                    Catch::Contains("thresholds.counter_drops_warn"));
  CHECK_THROWS_WITH(parse_su_config(base + R"(, "thresholds": {"counter_rail_factor": 0.5}})", "t.json"),
                    Catch::Contains("thresholds.counter_rail_factor"));
  CHECK_THROWS_WITH(parse_su_config(base + R"(, "thresholds": {"counter_drop_warn": 5}})", "t.json"),
                    Catch::Contains("counter_drop_warn: unknown field"));
}
