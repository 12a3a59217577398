#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "bench/commands/validate/drain_list.h"
#include "bench/commands/validate/plan.h"
#include "bench/commands/validate/report.h"
#include "bench/commands/validate/verdict.h"
#include "lib/core/errors.h"
#include "lib/core/schedule.h"

using namespace railbench;

// A failed CHECK prints the word, not the enum's number.
namespace Catch {
template <>
struct StringMaker<Severity> {
  static std::string convert(Severity v) { return to_string(v); }
};
template <>
struct StringMaker<FindingKind> {
  static std::string convert(FindingKind v) { return to_string(v); }
};
template <>
struct StringMaker<PairPhase> {
  static std::string convert(PairPhase v) { return to_string(v); }
};
}  // namespace Catch

namespace {

// 4 nodes x 2 rails at 0.4 Gb/s line rate (0.05 GB/s), the simulated SU's shape.
SuConfig su(int nodes = 4) {
  SuConfig c;
  c.name = "t";
  for (int n = 1; n <= nodes; ++n) c.nodes.push_back("node0" + std::to_string(n));
  c.gpus_per_node = 2;
  for (int r = 0; r < 2; ++r)
    c.rails.push_back({r, "rail" + std::to_string(r), "leaf" + std::to_string(r), 10, 0.4, 1500});
  c.thresholds.bw_min_fraction = 0.5;
  c.thresholds.bidir_min_fraction = 0.4;
  c.thresholds.rel_bw_below_median = 0.35;
  c.thresholds.rel_lat_above_median = 3;
  c.thresholds.rel_lat_min_us = 100;
  return c;
}

// Every node pair on every rail; `shape` may change a pair's figures.
template <class Shape>
std::vector<PairResult> all_pairs(const SuConfig& c, Shape&& shape) {
  std::vector<PairResult> out;
  int k = 0;
  for (int r = 0; r < c.num_rails(); ++r) {
    for (const auto& round : circle_schedule(static_cast<int>(c.nodes.size()))) {
      for (const auto& p : round) {
        // small, deterministic spread around 0.046 GB/s
        const double jitter = 0.001 * (k++ % 3);
        PairResult x{PairPhase::rail, p.a, p.b, r, r, true, "", 0.046 - jitter, 0.045 + jitter, 0.090, 12, 30, 60};
        shape(x);
        out.push_back(x);
      }
    }
  }
  return out;
}

bool touches(const PairResult& p, int node, int rail) {
  return p.rail_a == rail && (p.node_a == node || p.node_b == node);
}

std::vector<std::string> names(const SuConfig& c) {
  return c.nodes;
}

}  // namespace

TEST_CASE("verdict: a healthy SU has no suspects", "[validate]") {
  const SuConfig c = su();
  const auto stats = link_stats(c, 4, all_pairs(c, [](PairResult&) {}));
  CHECK(find_suspects(c, stats).empty());
  CHECK(judge_links(c, names(c), stats, {}, {}, {}).empty());
}

TEST_CASE("verdict: a degraded link is named, confirmed, and its partners are not blamed", "[validate]") {
  const SuConfig c = su();
  const auto rail = all_pairs(c, [](PairResult& p) {
    if (touches(p, 2, 1)) {  // node03 rail1 carries a quarter of its rate, both ways
      p.bw_ab = p.bw_ba = 0.012;
      p.bidir = 0.024;
    }
  });
  const auto stats = link_stats(c, 4, rail);
  const auto suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].link == LinkId{2, 1});
  CHECK(suspects[0].kind == FindingKind::bandwidth);
  CHECK(suspects[0].code == "RB-LINK-BW-LOW-BOTH");  // slow both ways

  const auto retests = plan_retests(suspects, stats);
  REQUIRE(retests.size() == 1);
  REQUIRE(retests[0].size() == 1);
  CHECK(retests[0][0].partner != 2);

  PairResult again{PairPhase::retest, 2, retests[0][0].partner, 1, 1, true, "", 0.012, 0.012, 0.024, 12, 30, 60};
  auto findings = judge_links(c, names(c), stats, suspects, {again}, {});
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].severity == Severity::fail);
  CHECK(findings[0].subject == "node03 rail1 (leaf1)");
  CHECK(findings[0].node == 2);
  CHECK(findings[0].rail == 1);
  CHECK_THAT(findings[0].reason, Catch::Contains("confirmed against"));
  CHECK(code_of(findings[0]) == "RB-LINK-BW-LOW-BOTH");

  // The same suspect passing its re-test is a warning, not a failure.
  PairResult fine{PairPhase::retest, 2, retests[0][0].partner, 1, 1, true, "", 0.046, 0.046, 0.09, 12, 30, 60};
  auto warned = judge_links(c, names(c), stats, suspects, {fine}, {});
  REQUIRE(warned.size() == 1);
  CHECK(warned[0].severity == Severity::warn);

  // Its bandwidth fine on the re-test, its latency far off (a shared host's scheduler):
  // the bandwidth suspicion is not confirmed by a latency, which is noted.
  PairResult slow_reply{
      PairPhase::retest, 2, retests[0][0].partner, 1, 1, true, "", 0.046, 0.046, 0.09, 50000, 80000, 90000};
  auto noted = judge_links(c, names(c), stats, suspects, {slow_reply}, {});
  REQUIRE(noted.size() == 1);
  CHECK(noted[0].severity == Severity::warn);
  CHECK_THAT(noted[0].reason, Catch::Contains("its re-test showed another problem, not confirming this one"));
}

TEST_CASE("verdict: on a fabric a suspect is re-tested on its own leaf, and passing there points at the fabric",
          "[validate]") {
  SuConfig c = su();
  c.fabric.sus = {{"su1", "node[01-02]", {"node01", "node02"}}, {"su2", "node[03-04]", {"node03", "node04"}}};
  c.fabric.spines = {{"spine0", {}}, {"spine1", {}}};
  // node03 rail1's pairs are slow (those across the spines, here all of them).
  const auto rail = all_pairs(c, [](PairResult& p) {
    if (touches(p, 2, 1)) p.bw_ab = p.bw_ba = 0.012, p.bidir = 0.024;
  });
  auto stats = link_stats(c, 4, rail);
  const auto suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 1);
  stats[1][0].tx = 0.09;  // node01, in the other SU, is the rail's best sender
  const std::vector<int> su_of{0, 0, 1, 1};
  const auto across = plan_retests(suspects, stats);
  REQUIRE(across.size() == 1);
  CHECK(across[0][0].partner == 0);  // without the fabric: the best sender
  const auto own_leaf = plan_retests(suspects, stats, {}, su_of);
  REQUIRE(own_leaf.size() == 1);
  CHECK(own_leaf[0][0].partner == 3);  // node04: its own SU, so its own leaf on rail1

  PairResult fine{PairPhase::retest, 2, 3, 1, 1, true, "", 0.046, 0.046, 0.09, 12, 30, 60};
  const auto findings = judge_links(c, names(c), stats, suspects, {fine}, {});
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].severity == Severity::warn);
  CHECK_THAT(findings[0].reason, Catch::Contains("passed a re-test against node04 on its own leaf (no spine crossed)"));

  SECTION("a re-test across the spines past a link the fabric phase found bad confirms nothing") {
    for (const char* su : {"su1", "su2"})
      for (int r = 0; r < 2; ++r) {
        FabricLeaf leaf;
        leaf.name = fmt::format("{}-leaf{}", su, r);
        leaf.su = su;
        leaf.rails = {r};
        c.fabric.leaves.push_back(leaf);
        for (const char* spine : {"spine0", "spine1"})
          c.fabric.links.push_back({fmt::format("{}-{}", leaf.name, spine), leaf.name, spine, "", spine, "", ""});
      }
    const int bad = c.fabric.link_index("su1-leaf1", "spine1");
    PairResult slow{PairPhase::retest, 2, 0, 1, 1, true, "", 0.012, 0.012, 0.024, 12, 30, 60};  // node03 vs node01
    const auto confirmed = judge_links(c, names(c), stats, suspects, {slow}, {});
    REQUIRE(confirmed.size() == 1);
    CHECK(confirmed[0].severity == Severity::fail);  // no fabric finding: the re-test stands
    const auto past = judge_links(c, names(c), stats, suspects, {slow}, {}, {bad});
    REQUIRE(past.size() == 1);
    CHECK(past[0].severity == Severity::warn);
    CHECK_THAT(past[0].reason, Catch::Contains("found su1-leaf1-spine1 bad on the way between their leaves"));
    CHECK(find_bad_nodes(past, names(c)).hosts.empty());
    // A link of another rail's leaf is not on the way.
    const auto elsewhere =
        judge_links(c, names(c), stats, suspects, {slow}, {}, {c.fabric.link_index("su1-leaf0", "spine1")});
    CHECK(elsewhere[0].severity == Severity::fail);

    // Passed on its own leaf: the WARN names the link at fault on its rail's leaves, and
    // none of another rail's.
    const auto named = judge_links(c, names(c), stats, suspects, {fine}, {}, {bad});
    REQUIRE(named.size() == 1);
    CHECK(named[0].severity == Severity::warn);
    CHECK_THAT(named[0].reason, Catch::Contains("where the fabric phase found su1-leaf1-spine1 bad: most likely that"));
    const auto other_rail =
        judge_links(c, names(c), stats, suspects, {fine}, {}, {c.fabric.link_index("su2-leaf0", "spine0")});
    CHECK_THAT(other_rail[0].reason, Catch::Contains("where the fabric phase found no link bad"));
  }
}

TEST_CASE("verdict: one direction of a link is enough", "[validate]") {
  const SuConfig c = su();
  const auto rail = all_pairs(c, [](PairResult& p) {
    // node02 rail0 sends slowly (its transmit side), receives fine
    if (touches(p, 1, 0)) (p.node_a == 1 ? p.bw_ab : p.bw_ba) = 0.010;
  });
  const auto suspects = find_suspects(c, link_stats(c, 4, rail));
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].link == LinkId{1, 0});
  CHECK_THAT(suspects[0].reason, Catch::Contains("sending"));
  CHECK(suspects[0].code == "RB-LINK-BW-LOW-TX");  // one way only: another fault than both
}

TEST_CASE("verdict: an unreachable link is named without blaming the partners that could not reach it", "[validate]") {
  const SuConfig c = su();
  const auto rail = all_pairs(c, [](PairResult& p) {
    if (touches(p, 1, 0)) {
      p = PairResult{PairPhase::rail, p.node_a, p.node_b, 0, 0, false, "no progress from rank 2 for 8 s"};
    }
  });
  const auto stats = link_stats(c, 4, rail);
  const auto suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].link == LinkId{1, 0});
  CHECK(suspects[0].kind == FindingKind::unreachable);
  CHECK(plan_retests(suspects, stats).empty());  // it was tried against everybody already
  auto findings = judge_links(c, names(c), stats, suspects, {}, {});
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].severity == Severity::fail);
  CHECK_THAT(findings[0].reason, Catch::Contains("fault is on this link"));
  CHECK(code_of(findings[0]) == "RB-LINK-UNREACHABLE");
}

TEST_CASE("verdict: two nodes cannot tell which end is bad, and say so", "[validate]") {
  const SuConfig c = su(2);
  const auto rail = all_pairs(c, [](PairResult& p) {
    if (p.rail_a == 0) p.bw_ab = p.bw_ba = 0.01;
  });
  const auto stats = link_stats(c, 2, rail);
  const auto suspects = find_suspects(c, stats);
  CHECK(suspects.size() == 2);
  CHECK(plan_retests(suspects, stats).empty());
  for (const auto& f : judge_links(c, names(c), stats, suspects, {}, {})) {
    CHECK(f.severity == Severity::fail);
    CHECK_THAT(f.reason, Catch::Contains("either end"));
  }
}

TEST_CASE("verdict: added latency on one link, relative to its rail", "[validate]") {
  const SuConfig c = su();
  const auto rail = all_pairs(c, [](PairResult& p) {
    if (touches(p, 3, 1)) p.lat_p50 = 12 + 5000;  // 5 ms each way
  });
  const auto suspects = find_suspects(c, link_stats(c, 4, rail));
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].link == LinkId{3, 1});
  CHECK(suspects[0].kind == FindingKind::latency);
  CHECK(suspects[0].code == "RB-LINK-LAT-P50-HIGH");
  // Noise below rel_lat_min_us is not a finding.
  const auto noisy = all_pairs(c, [](PairResult& p) {
    if (touches(p, 3, 1)) p.lat_p50 = 12 + 80;
  });
  CHECK(find_suspects(c, link_stats(c, 4, noisy)).empty());
}

TEST_CASE("verdict: cross-rail pairs are judged, unless a bad link already explains them", "[validate]") {
  const SuConfig c = su();
  const auto stats = link_stats(c, 4, all_pairs(c, [](PairResult&) {}));
  std::vector<PairResult> cross{{PairPhase::cross, 0, 1, 0, 1, true, "", 0.045, 0.046, 0.09, 12, 30, 60},
                                {PairPhase::cross, 0, 1, 1, 0, true, "", 0.044, 0.046, 0.09, 12, 30, 60},
                                {PairPhase::cross, 2, 3, 0, 1, true, "", 0.005, 0.046, 0.09, 12, 30, 60},
                                {PairPhase::cross, 2, 3, 1, 0, true, "", 0.046, 0.045, 0.09, 12, 30, 60}};
  auto findings = judge_links(c, names(c), stats, {}, {}, cross);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == FindingKind::cross_rail);
  CHECK_THAT(findings[0].subject, Catch::Contains("node03 rail0 -> node04 rail1"));
  CHECK(code_of(findings[0]) == "RB-CROSS-RAIL-BW-LOW");
  // node03 rail0 is already known bad: the slow cross pair is not a second finding.
  Suspect s{{2, 0}, FindingKind::bandwidth, "slow", 0.01, 0.05, "GB/s"};
  auto explained = judge_links(c, names(c), stats, {s}, {}, cross);
  CHECK(std::count_if(explained.begin(), explained.end(),
                      [](const Finding& f) { return f.kind == FindingKind::cross_rail; }) == 0);
}

namespace {

// The link stats of a healthy SU with node `node` rail `rail` having gone down `downs`
// times during its pair tests.
std::vector<std::vector<LinkStats>> went_down(const SuConfig& c, int node, int rail, int downs) {
  auto stats = link_stats(c, 4, all_pairs(c, [](PairResult&) {}));
  stats[rail][node].downs = downs;
  return stats;
}

}  // namespace

TEST_CASE("verdict: a link that went down during its pair tests is intermittent, and its re-test decides",
          "[validate][robustness]") {
  const SuConfig c = su();
  const auto stats = went_down(c, 1, 1, 1);  // node02 rail1 lost its carrier once, its figures fine
  const auto suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].link == LinkId{1, 1});
  CHECK(suspects[0].kind == FindingKind::intermittent);
  CHECK_THAT(suspects[0].reason, Catch::Contains("went down 1 time"));
  const auto rounds = plan_retests(suspects, stats);
  REQUIRE(rounds.size() == 1);
  REQUIRE(rounds[0].size() == 1);
  const int partner = rounds[0][0].partner;
  CHECK(partner != 1);

  // Passed its re-test: WARN intermittent, the SU still passes.
  const PairResult fine{PairPhase::retest, 1, partner, 1, 1, true, "", 0.046, 0.046, 0.09, 12, 30, 60};
  auto warned = judge_links(c, names(c), stats, suspects, {fine}, {});
  REQUIRE(warned.size() == 1);
  CHECK(warned[0].severity == Severity::warn);
  CHECK(warned[0].kind == FindingKind::intermittent);
  CHECK(warned[0].subject == "node02 rail1 (leaf1)");

  // Failed its re-test: FAIL.
  PairResult cut = fine;
  cut.ok = false;
  cut.error = "no progress from rank 3 for 8 s";
  auto failed = judge_links(c, names(c), stats, suspects, {cut}, {});
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].severity == Severity::fail);
  CHECK(failed[0].kind == FindingKind::intermittent);
  CHECK_THAT(failed[0].reason, Catch::Contains("failed too"));

  // Went down again while it was re-tested: FAIL, whatever the figures.
  auto again = stats;
  again[1][1].retest_downs = 1;
  auto down_again = judge_links(c, names(c), again, suspects, {fine}, {});
  REQUIRE(down_again.size() == 1);
  CHECK(down_again[0].severity == Severity::fail);
  CHECK_THAT(down_again[0].reason, Catch::Contains("during its re-test"));

  // Went down link_downs_fail (2) times: flapping, FAIL even after a good re-test.
  const auto flap = went_down(c, 1, 1, 3);
  auto flapping = judge_links(c, names(c), flap, find_suspects(c, flap), {fine}, {});
  REQUIRE(flapping.size() == 1);
  CHECK(flapping[0].severity == Severity::fail);
  CHECK_THAT(flapping[0].reason, Catch::Contains("flapping"));
}

TEST_CASE("verdict: a pair cut off in one round but not another is the intermittent link's, not its partner's",
          "[validate][robustness]") {
  const SuConfig c = su();
  // node02 rail1 and node03 rail1 did not finish their pair test; both finished with
  // their other partners.
  const auto rail = all_pairs(c, [](PairResult& p) {
    if (p.rail_a == 1 && std::min(p.node_a, p.node_b) == 1 && std::max(p.node_a, p.node_b) == 2) {
      p = PairResult{PairPhase::rail, p.node_a, p.node_b, 1, 1, false, "no progress from rank 5 for 8 s"};
    }
  });
  auto stats = link_stats(c, 4, rail);
  CHECK(stats[1][1].failed_with == std::vector<int>{2});
  // Nothing tells the two ends apart: both are suspects, the re-tests decide.
  auto suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 2);
  for (const auto& s : suspects) {
    CHECK(s.kind == FindingKind::intermittent);
    CHECK_THAT(s.reason, Catch::Contains("reachable in one round, not in another"));
  }
  // node02's counters say it went down: the cut-off pair is its, node03 is not named.
  stats[1][1].downs = 1;
  suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].link == LinkId{1, 1});
  // The same when node03's own figures are bad (a lossy cable: slow with every partner):
  // the pair test it did not finish is its, and node02 is not a suspect.
  stats[1][1].downs = 0;
  stats[1][2].rx = stats[1][2].tx = 0.016;
  suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].link == LinkId{2, 1});
  CHECK(suspects[0].kind == FindingKind::bandwidth);
  CHECK_THAT(suspects[0].reason, Catch::Contains("reachable in one round, not in another"));
}

TEST_CASE("verdict: a link whose windows vary far more than its rail's is intermittent", "[validate][robustness]") {
  const SuConfig c = su();
  int k = 0;
  const auto noisy_rail = [&](PairResult& p) { p.bw_spread = 0.2 + 0.05 * (k++ % 4); };  // all a bit unsteady
  CHECK(find_suspects(c, link_stats(c, 4, all_pairs(c, noisy_rail))).empty());
  const auto rail = all_pairs(c, [&](PairResult& p) {
    noisy_rail(p);
    if (touches(p, 3, 0)) p.bw_spread = 0.97;  // node04 rail0 stalls: one window at 3% of the others
  });
  const auto stats = link_stats(c, 4, rail);
  const auto suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].link == LinkId{3, 0});
  CHECK(suspects[0].kind == FindingKind::intermittent);
  CHECK_THAT(suspects[0].reason, Catch::Contains("unsteady"));
  // Unsteady again in its re-test: confirmed.
  const PairResult rt{PairPhase::retest, 3, 0, 0, 0, true, "", 0.046, 0.046, 0.09, 12, 30, 60, 0.95};
  auto found = judge_links(c, names(c), stats, suspects, {rt}, {});
  REQUIRE(found.size() == 1);
  CHECK(found[0].severity == Severity::fail);
  CHECK_THAT(found[0].reason, Catch::Contains("unsteady again"));
}

TEST_CASE("verdict: stalls in pair tests with a partner that went down are the partner's, not unsteadiness",
          "[validate][robustness]") {
  const SuConfig c = su();
  int k = 0;
  const auto rail = all_pairs(c, [&](PairResult& p) {
    p.bw_spread = 0.2 + 0.05 * (k++ % 4);
    const auto pair_is = [&](int x, int y) {
      return p.rail_a == 1 && std::min(p.node_a, p.node_b) == x && std::max(p.node_a, p.node_b) == y;
    };
    if (pair_is(0, 1)) p.bw_spread = 0.97;  // node02 rail1 went down during its test with node01
    if (pair_is(0, 2)) p.bw_spread = 0.9;   // and node01 had one poor test of its own, with node03
  });
  auto stats = link_stats(c, 4, rail);
  // Without the link-down counters, node01 rail1 is the unsteady one (two poor tests of three).
  auto suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].link == LinkId{0, 1});
  CHECK_THAT(suspects[0].reason, Catch::Contains("unsteady"));
  // With them, the stall with node02 is node02's: node01's other tests are steady enough.
  stats[1][1].downs = 2;
  suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].link == LinkId{1, 1});
}

TEST_CASE("verdict: a link that went down after its pair tests is still named", "[validate][robustness]") {
  const SuConfig c = su();
  auto stats = link_stats(c, 4, all_pairs(c, [](PairResult&) {}));
  std::vector<Finding> findings;
  judge_link_downs(c, names(c), stats, findings);
  CHECK(findings.empty());
  stats[0][2].late_downs = 1;  // node03 rail0, during the collectives
  judge_link_downs(c, names(c), stats, findings);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].severity == Severity::warn);
  CHECK(findings[0].kind == FindingKind::intermittent);
  CHECK(findings[0].node == 2);
  CHECK(findings[0].rail == 0);
  // Down again: twice in the run is flapping, the warning becomes a failure.
  stats[0][2].late_downs = 2;
  judge_link_downs(c, names(c), stats, findings);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].severity == Severity::fail);
}

TEST_CASE("verdict: a cross-rail pair through an intermittent link is not a second finding", "[validate]") {
  const SuConfig c = su();
  const auto stats = went_down(c, 2, 0, 1);
  const std::vector<PairResult> cross{{PairPhase::cross, 2, 3, 0, 1, false, "no progress for 8 s"}};
  const PairResult fine{PairPhase::retest, 2, 0, 0, 0, true, "", 0.046, 0.046, 0.09, 12, 30, 60};
  const auto findings = judge_links(c, names(c), stats, find_suspects(c, stats), {fine}, cross);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == FindingKind::intermittent);
  CHECK(findings[0].severity == Severity::warn);
}

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every NIC of `nodes` x 2 rails present and up at the config's speed and MTU.
std::vector<std::vector<NicReport>> healthy_inventory(const SuConfig& c) {
  NicReport ok;
  ok.kind = "netdev", ok.found = true, ok.up = true, ok.state = "up", ok.speed_gbps = 10, ok.mtu = 1500;
  return std::vector<std::vector<NicReport>>(c.nodes.size(), std::vector<NicReport>(2, ok));
}

}  // namespace

TEST_CASE("drain list: a healthy SU drains nothing", "[validate][drain]") {
  const SuConfig c = su();
  bool blocking = true;
  auto findings = judge_inventory(c, names(c), healthy_inventory(c), blocking);
  CHECK_FALSE(blocking);
  const auto stats = link_stats(c, 4, all_pairs(c, [](PairResult&) {}));
  const auto links = judge_links(c, names(c), stats, find_suspects(c, stats), {}, {});
  findings.insert(findings.end(), links.begin(), links.end());
  const BadNodes bad = find_bad_nodes(findings, names(c));
  CHECK(bad.hosts.empty());
  CHECK(bad.hostlist.empty());
  CHECK(bad.suspect_links.empty());
  CHECK(nlohmann::json(bad) ==
        nlohmann::json::parse(
            R"({"hosts": [], "hostlist": "", "reasons": {}, "codes": {}, "suspect_links": [], "switch_ports": [],
                "switch_port_codes": [], "switch_port_links": []})"));
}

TEST_CASE("drain list: a fabric link's finding lists its switch ports and drains no host", "[validate][drain]") {
  const SuConfig c = su();
  Finding f;
  f.kind = FindingKind::fabric;
  f.subject = "su1-leaf0 port spine2 <-> spine2 port s1l0 (su1-leaf0-spine2)";
  f.fabric_link = "su1-leaf0-spine2";
  f.reason = "20% of the expected 0.4 Gb/s";
  const BadNodes bad = find_bad_nodes({f}, names(c));
  CHECK(bad.hosts.empty());
  CHECK(bad.suspect_links.empty());
  REQUIRE(bad.switch_ports.size() == 1);
  CHECK(bad.switch_ports[0] == f.subject + ": " + f.reason);
  CHECK(bad.switch_port_links == std::vector<std::string>{"su1-leaf0-spine2"});
}

TEST_CASE("drain list: one bad node among four is drained, its partners are not", "[validate][drain]") {
  const SuConfig c = su();
  // node03 rail1 at a quarter of its rate, confirmed against a good partner.
  const auto rail = all_pairs(c, [](PairResult& p) {
    if (touches(p, 2, 1)) p.bw_ab = p.bw_ba = 0.012, p.bidir = 0.024;
  });
  const auto stats = link_stats(c, 4, rail);
  const auto suspects = find_suspects(c, stats);
  const auto rounds = plan_retests(suspects, stats);
  REQUIRE(rounds.size() == 1);
  const PairResult again{PairPhase::retest, 2, rounds[0][0].partner, 1, 1, true, "", 0.012, 0.012, 0.024, 12, 30, 60};
  const BadNodes bad = find_bad_nodes(judge_links(c, names(c), stats, suspects, {again}, {}), names(c));
  CHECK(bad.hosts == std::vector<std::string>{"node03"});
  CHECK(bad.hostlist == "node03");
  CHECK(bad.suspect_links.empty());
  REQUIRE(bad.reasons.count("node03"));
  REQUIRE(bad.reasons.at("node03").size() == 1);
  CHECK_THAT(bad.reasons.at("node03")[0], Catch::StartsWith("bandwidth node03 rail1 (leaf1): "));
  CHECK_THAT(bad.reasons.at("node03")[0], Catch::Contains("confirmed against"));

  // The same link passing its re-test is a WARN: nothing to drain.
  const PairResult fine{PairPhase::retest, 2, rounds[0][0].partner, 1, 1, true, "", 0.046, 0.046, 0.09, 12, 30, 60};
  CHECK(find_bad_nodes(judge_links(c, names(c), stats, suspects, {fine}, {}), names(c)).hosts.empty());
}

TEST_CASE("drain list: a link unreachable from partners that reach everyone else is its node's", "[validate][drain]") {
  const SuConfig c = su();
  const auto rail = all_pairs(c, [](PairResult& p) {
    if (touches(p, 1, 0)) p = PairResult{PairPhase::rail, p.node_a, p.node_b, 0, 0, false, "no progress for 8 s"};
  });
  const auto stats = link_stats(c, 4, rail);
  const BadNodes bad = find_bad_nodes(judge_links(c, names(c), stats, find_suspects(c, stats), {}, {}), names(c));
  CHECK(bad.hosts == std::vector<std::string>{"node02"});
  CHECK(bad.suspect_links.empty());
}

TEST_CASE("drain list: a NIC down or mis-set in the inventory drains its node", "[validate][drain]") {
  const SuConfig c = su();
  auto nics = healthy_inventory(c);
  nics[3][1].up = false, nics[3][1].state = "down";  // node04 rail1
  nics[0][0].mtu = 9000;                             // node01 rail0
  bool blocking = false;
  const auto findings = judge_inventory(c, names(c), nics, blocking);
  CHECK(blocking);
  const BadNodes bad = find_bad_nodes(findings, names(c));
  CHECK(bad.hostlist == "node[01,04]");
  CHECK(bad.hosts == std::vector<std::string>{"node01", "node04"});
  CHECK_THAT(bad.reasons.at("node04")[0], Catch::Contains("inventory node04 rail1 (leaf1): port rail1 is not up"));
}

TEST_CASE("drain list: a rail failing on every node is the rail's, not every node's", "[validate][drain]") {
  const SuConfig c = su();
  auto nics = healthy_inventory(c);
  for (auto& node : nics) node[1].found = false, node[1].up = false;  // rail1 missing everywhere
  nics[2][0].mtu = 9000;                                              // and node03 rail0 mis-set
  bool blocking = false;
  const BadNodes bad = find_bad_nodes(judge_inventory(c, names(c), nics, blocking), names(c));
  CHECK(bad.hostlist == "node03");
  REQUIRE(bad.suspect_links.size() == 1);
  CHECK(bad.suspect_links[0].subject == "rail1 (every node)");
  CHECK(bad.suspect_links[0].ends == names(c));
  CHECK_THAT(bad.suspect_links[0].reason, Catch::Contains("rail-wide"));
  // Three of four nodes failing stays three nodes' fault.
  nics = healthy_inventory(c);
  for (int n = 0; n < 3; ++n)
    nics[static_cast<size_t>(n)][1].up = false, nics[static_cast<size_t>(n)][1].state = "down";
  CHECK(find_bad_nodes(judge_inventory(c, names(c), nics, blocking), names(c)).hostlist == "node[01-03]");
}

TEST_CASE("drain list: a two-node run's bad link is a suspect at either end, not drained", "[validate][drain]") {
  const SuConfig c = su(2);
  for (const bool unreachable : {false, true}) {
    const auto rail = all_pairs(c, [&](PairResult& p) {
      if (p.rail_a != 0) return;
      if (unreachable) {
        p = PairResult{PairPhase::rail, p.node_a, p.node_b, 0, 0, false, "no progress for 8 s"};
      } else {
        p.bw_ab = p.bw_ba = 0.01;
      }
    });
    const auto stats = link_stats(c, 2, rail);
    const auto findings = judge_links(c, names(c), stats, find_suspects(c, stats), {}, {});
    REQUIRE(findings.size() == 2);
    const BadNodes bad = find_bad_nodes(findings, names(c));
    CHECK(bad.hosts.empty());
    CHECK(bad.hostlist.empty());
    REQUIRE(bad.suspect_links.size() == 2);
    for (const auto& l : bad.suspect_links) {
      CHECK(l.ends == std::vector<std::string>{"node01", "node02"});
      CHECK_THAT(l.reason, Catch::Contains("either end"));
    }
    const auto j = nlohmann::json(bad);
    CHECK(j.at("suspect_links")[0].at("kind") == (unreachable ? "unreachable" : "bandwidth"));
    CHECK(j.at("suspect_links")[0].at("ends") == nlohmann::json::array({"node01", "node02"}));
  }
}

TEST_CASE("drain list: a slow cross-rail path names both ends and drains neither", "[validate][drain]") {
  const SuConfig c = su();
  const auto stats = link_stats(c, 4, all_pairs(c, [](PairResult&) {}));
  const std::vector<PairResult> cross{{PairPhase::cross, 0, 1, 0, 1, true, "", 0.045, 0.046, 0.09, 12, 30, 60},
                                      {PairPhase::cross, 2, 3, 0, 1, true, "", 0.005, 0.046, 0.09, 12, 30, 60}};
  const BadNodes bad = find_bad_nodes(judge_links(c, names(c), stats, {}, {}, cross), names(c));
  CHECK(bad.hosts.empty());
  REQUIRE(bad.suspect_links.size() == 1);
  CHECK(bad.suspect_links[0].kind == FindingKind::cross_rail);
  CHECK(bad.suspect_links[0].ends == std::vector<std::string>{"node03", "node04"});
}

TEST_CASE("drain list: a flapping link drains its node, one that went down once does not", "[validate][drain]") {
  const SuConfig c = su();
  auto stats = link_stats(c, 4, all_pairs(c, [](PairResult&) {}));
  stats[1][2].late_downs = 1;  // node03 rail1, once, after its pair tests: WARN
  std::vector<Finding> findings;
  judge_link_downs(c, names(c), stats, findings);
  REQUIRE(findings.size() == 1);
  CHECK(find_bad_nodes(findings, names(c)).hosts.empty());
  stats[1][2].late_downs = 3;  // flapping: FAIL, its own counters say which end
  findings.clear();
  judge_link_downs(c, names(c), stats, findings);
  CHECK(find_bad_nodes(findings, names(c)).hosts == std::vector<std::string>{"node03"});
}

TEST_CASE("drain list: findings about no one node drain nothing, several nodes compress", "[validate][drain]") {
  std::vector<std::string> nodes;
  for (int n = 1; n <= 20; ++n) nodes.push_back(fmt::format("gpu{:03d}", n));
  std::vector<Finding> findings{
      {Severity::fail, FindingKind::inventory, "gpu021", "in the config but not part of this run", 0, 1, ""},
      {Severity::fail, FindingKind::collective, "allreduce (ring)", "busbw low", 0.01, 0.04, "GB/s"},
      {Severity::warn, FindingKind::bandwidth, "gpu005 rail0 (leaf0)", "passed a re-test", 0.01, 0.04, "GB/s", 4, 0},
  };
  CHECK(find_bad_nodes(findings, nodes).hosts.empty());
  for (int n : {17, 2, 16, 2}) {
    findings.push_back({Severity::fail, FindingKind::bandwidth, fmt::format("{} rail1 (leaf1)", nodes[n]), "slow", 0.01,
                        0.04, "GB/s", n, 1});
  }
  const BadNodes bad = find_bad_nodes(findings, nodes);
  CHECK(bad.hostlist == "gpu[003,017-018]");
  CHECK(bad.hosts == std::vector<std::string>{"gpu003", "gpu017", "gpu018"});
  CHECK(bad.reasons.at("gpu003").size() == 2);  // both of its findings
}

TEST_CASE("drain list: the file is emptied at the start and holds one hostlist line", "[validate][drain]") {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("rb-drain-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const auto path = dir / "drain.txt";
  {
    std::ofstream(path) << "node01\n";  // a list left by an earlier run
  }
  DrainListFile file(path.string());
  CHECK(std::filesystem::file_size(path) == 0);  // `test -s` is false: nothing to drain yet
  BadNodes bad;
  bad.hostlist = "gpu[003,017-018]";
  file.write(bad, false);
  CHECK(read_file(path) == "gpu[003,017-018]\n");
  file.write(BadNodes{}, true);
  CHECK(std::filesystem::file_size(path) == 0);
  // Another rank (no path) writes nothing.
  DrainListFile none("");
  none.write(bad, true);
  CHECK(read_file(path).empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("verdict: window spread", "[validate]") {
  CHECK(window_spread({}) == 0);
  CHECK(window_spread({0.05}) == 0);
  CHECK(window_spread({0.05, 0.05, 0.05}) == 0);
  CHECK(window_spread({0.05, 0.05, 0.005, 0.05}) == Approx(0.9));
}

TEST_CASE("verdict: findings sort worst first", "[validate]") {
  std::vector<Finding> f{{Severity::warn, FindingKind::bandwidth, "a", "", 0.01, 0.05, "GB/s"},
                         {Severity::fail, FindingKind::bandwidth, "b", "", 0.04, 0.05, "GB/s"},
                         {Severity::fail, FindingKind::latency, "c", "", 500, 10, "us"},
                         {Severity::fail, FindingKind::bandwidth, "d", "", 0.01, 0.05, "GB/s"}};
  sort_findings(f);
  CHECK(f[0].subject == "c");  // 50x the expected latency
  CHECK(f[1].subject == "d");
  CHECK(f[2].subject == "b");
  CHECK(f[3].subject == "a");  // warnings last
}

TEST_CASE("verdict: severity, kind and phase keep the words of the results file", "[validate]") {
  CHECK(std::string(to_string(Severity::fail)) == "FAIL");
  CHECK(std::string(to_string(Severity::warn)) == "WARN");
  const std::vector<std::pair<FindingKind, std::string>> kinds{
      {FindingKind::inventory, "inventory"},   {FindingKind::unreachable, "unreachable"},
      {FindingKind::bandwidth, "bandwidth"},   {FindingKind::bidirectional, "bidirectional"},
      {FindingKind::latency, "latency"},       {FindingKind::cross_rail, "cross-rail"},
      {FindingKind::collective, "collective"}, {FindingKind::intermittent, "intermittent"}};
  for (const auto& [kind, word] : kinds) {
    CHECK(to_string(kind) == word);
    CHECK(parse_finding_kind(word, "kind") == kind);
  }
  CHECK(parse_severity("WARN", "severity") == Severity::warn);
  for (const auto& [phase, word] : {std::pair{PairPhase::rail, "rail"}, std::pair{PairPhase::cross, "cross"},
                                    std::pair{PairPhase::retest, "retest"}})
    CHECK(parse_pair_phase(word, "phase") == phase);

  const Finding f{Severity::warn, FindingKind::cross_rail, "x", "y", 1, 2, "GB/s", 3, 1};
  const nlohmann::json fj = f;
  CHECK(fj.at("severity") == "WARN");
  CHECK(fj.at("kind") == "cross-rail");
}

TEST_CASE("verdict: a pair result reads back from JSON, and an unknown phase names the field", "[validate]") {
  const PairResult p{PairPhase::retest, 2, 0, 1, 1, true, "", 0.04, 0.03, 0.07, 12, 30, 60};
  nlohmann::json j = p;
  CHECK(j.at("phase") == "retest");
  const auto back = j.get<PairResult>();
  CHECK(back.phase == PairPhase::retest);
  CHECK(back.node_a == 2);
  CHECK(back.bw_ba == 0.03);
  PairResult unsteady = p;
  unsteady.bw_spread = 0.8;
  CHECK(nlohmann::json(unsteady).get<PairResult>().bw_spread == 0.8);
  nlohmann::json older = p;  // written before bw_spread existed
  older.erase("bw_spread");
  CHECK(older.get<PairResult>().bw_spread == 0);

  j["phase"] = "spine";
  CHECK_THROWS_AS(j.get<PairResult>(), IoError);
  CHECK_THROWS_WITH(j.get<PairResult>(), Catch::Contains("phase") && Catch::Contains("\"spine\""));
  CHECK_THROWS_AS(parse_severity("fail", "severity"), IoError);  // the words are exact
  CHECK_THROWS_AS(parse_finding_kind("cross_rail", "kind"), IoError);
}

// How long a plan of a large SU takes is robustness: validate --plan ... stays quick
// (tests/robustness), alone; a unit test under a sanitizer at idle priority has no clock.
TEST_CASE("plan: the 32 x 8 H200 SU, and 1024 nodes x 8 rails", "[validate]") {
  SuConfig c = su();
  c.nodes.clear();
  for (int n = 0; n < 32; ++n) c.nodes.push_back("gpu" + std::to_string(n));
  c.gpus_per_node = 8;
  c.rails.clear();
  for (int r = 0; r < 8; ++r) c.rails.push_back({r, "mlx5_" + std::to_string(r), "leaf", 400, 400, 4096});
  ValidatePlan p = make_validate_plan(c);
  CHECK(p.rounds.size() == 31);
  CHECK(p.rail_pair_tests == 31u * 16 * 8);
  CHECK(p.cross.size() == 16);
  CHECK(p.total_s > 0);
  CHECK(describe_plan(c, p).size() > 10);

  c.nodes.clear();
  for (int n = 0; n < 1024; ++n) c.nodes.push_back("gpu" + std::to_string(n));
  ValidatePlan big = make_validate_plan(c);
  CHECK(big.rounds.size() == 1023);
  CHECK(big.rail_pair_tests == 1023u * 512 * 8);
  CHECK(describe_plan(c, big).size() > 10);
}

TEST_CASE("verdict: on a rail over several leaves a link is named with its node's leaf", "[validate]") {
  SuConfig c = su();
  c.rails[1].node_leaf = {{"node01", "l1a"}, {"node02", "l1a"}, {"node03", "l1b"}, {"node04", "l1b"}};
  c.rails[1].leaf_names = {"l1a", "l1b"};
  c.rails[1].leaf = "l1a..l1b";
  const auto rail = all_pairs(c, [](PairResult& p) {
    if (touches(p, 2, 1)) {
      p.bw_ab = p.bw_ba = 0.012;
      p.bidir = 0.024;
    }
  });
  const auto stats = link_stats(c, 4, rail);
  const auto suspects = find_suspects(c, stats);
  REQUIRE(suspects.size() == 1);
  const auto retests = plan_retests(suspects, stats);
  PairResult again{PairPhase::retest, 2, retests[0][0].partner, 1, 1, true, "", 0.012, 0.012, 0.024, 12, 30, 60};
  const auto findings = judge_links(c, names(c), stats, suspects, {again}, {});
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].subject == "node03 rail1 (l1b)");
  // The results name each node's leaf, parallel to the rail's nodes; a one-leaf rail none.
  const auto matrices = rail_matrices(c, names(c), rail, stats);
  CHECK(matrices[1]["node_leaves"] == nlohmann::json({"l1a", "l1a", "l1b", "l1b"}));
  CHECK_FALSE(matrices[0].contains("node_leaves"));
}
