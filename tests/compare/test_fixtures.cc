// `railbench compare` and `validate --baseline` over real results files (fixtures/,
// written by real runs: see fixtures/README.md for the command lines).
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "bench/commands/validate/baseline.h"
#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"
#include "bench/offline/compare/diff.h"
#include "bench/offline/compare/figures.h"
#include "bench/offline/compare/load.h"
#include "lib/core/errors.h"

using namespace railbench;
using namespace railbench::compare;
using nlohmann::json;

namespace {

std::string fixture(const std::string& name) {
  return std::string(RAILBENCH_COMPARE_FIXTURES) + "/" + name;
}

json load(const std::string& name) {
  return load_results(fixture(name));
}

SuConfig netns_config() {
  const std::string path = std::string(RAILBENCH_COMPARE_FIXTURES) + "/../../../configs/netns-4x2.json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_su_config(text.str(), path);
}

// The per-link figures of a validate results file, as validate computed them.
std::vector<std::vector<LinkStats>> stats_of(const json& doc, const SuConfig& c) {
  std::vector<PairResult> pairs;
  for (const auto& p : doc.at("rail_pairs")) pairs.push_back(p.get<PairResult>());
  return link_stats(c, static_cast<int>(doc.at("rails")[0].at("nodes").size()), pairs);
}

std::vector<std::string> node_names(const json& doc) {
  return doc.at("rails")[0].at("nodes").get<std::vector<std::string>>();
}

// Every time in a collective's results `factor` times longer, every rate `factor` times lower.
json slowed(json doc, double factor) {
  for (auto& r : doc.at("results")) {
    for (const char* side : {"out_of_place", "in_place"}) {
      auto& s = r.at(side);
      for (const char* k : {"min", "max", "mean", "stdev", "p50", "p90", "p99", "p99_9"})
        s.at("iteration_us").at(k) = s.at("iteration_us").at(k).get<double>() * factor;
      s.at("time_us") = s.at("time_us").get<double>() * factor;
      s.at("busbw_gbps") = s.at("busbw_gbps").get<double>() / factor;
    }
  }
  return doc;
}

}  // namespace

TEST_CASE("compare: every figure of a real allreduce run lies inside its own band", "[compare]") {
  const auto figs = figures_of(load("allreduce-shm-a.json"), "a");
  CHECK(figs.size() == 44);  // 1K..1M: 11 sizes x 2 placements x (busbw, time p99)
  std::set<std::string> metrics;
  for (const auto& f : figs) {
    INFO(f.key());
    // busbw's band is the typical iteration's rate: the mean-based figure may lie below
    // it (stalls), never above.
    if (f.metric == "busbw") {
      CHECK(f.value <= f.hi);
    } else {
      CHECK(f.lo <= f.value);
      CHECK(f.value <= f.hi);
    }
    CHECK(f.value > 0);
    metrics.insert(f.metric);
  }
  CHECK(metrics == std::set<std::string>{"busbw", "time p99"});
  CHECK(only_metrics(figs, {"busbw"}).size() == 22);
  CHECK_THROWS_WITH(only_metrics(figs, {"tx"}),
                    Catch::Contains("no figure is called 'tx': this run has busbw, time p99"));
}

TEST_CASE("compare: two real runs of the same healthy allreduce show no regression", "[compare]") {
  const Diff d =
      diff(figures_of(load("allreduce-shm-a.json"), "a"), figures_of(load("allreduce-shm-b.json"), "b"), 0.05);
  CHECK(d.rows.size() == 44);
  CHECK(d.count(Verdict::regression) == 0);
  CHECK(d.only_base.empty());
  CHECK(d.only_new.empty());
}

TEST_CASE("compare: the same run 3x slower is a regression in every busbw, and faster an improvement", "[compare]") {
  const json a = load("allreduce-shm-a.json");
  const Diff worse = diff(figures_of(a, "a"), figures_of(slowed(a, 3), "slow"), 0.05);
  // The sizes whose iteration times spread widest (the smallest, latency bound, and the
  // largest, where this 2-core host stalls) may keep bands that overlap even at 3x.
  int busbw = 0, regressed = 0;
  for (const auto& r : worse.rows) {
    if (r.metric != "busbw") continue;
    ++busbw;
    INFO(r.subject);
    CHECK(r.verdict != Verdict::improvement);
    CHECK(r.change == Approx(1.0 / 3 - 1));
    regressed += r.verdict == Verdict::regression;
  }
  CHECK(busbw == 22);
  CHECK(regressed >= 16);
  const Diff better = diff(figures_of(slowed(a, 3), "slow"), figures_of(a, "a"), 0.05);
  CHECK(better.count(Verdict::regression) == 0);
  CHECK(better.count(Verdict::improvement) >= 16);
}

TEST_CASE("compare: a real sendrecv run gives bandwidth and latency per pair, and equals itself", "[compare]") {
  const auto figs = figures_of(load("sendrecv-shm.json"), "s");
  std::set<std::string> metrics;
  for (const auto& f : figs) metrics.insert(f.metric);
  CHECK(metrics ==
        std::set<std::string>{"bw a->b p50", "bw b->a p50", "bw bidir p50", "lat p50", "lat p99", "lat p99.9"});
  CHECK(figs.front().subject.find("rank0<->rank1 rail0") != std::string::npos);
  const Diff d = diff(figs, figs, 0.05);
  CHECK(d.count(Verdict::same) == static_cast<int>(figs.size()));
}

TEST_CASE("compare: files of different commands cannot be compared", "[compare]") {
  try {
    check_comparable(load("allreduce-shm-a.json"), "a.json", load("sendrecv-shm.json"), "s.json");
    FAIL("no error");
  } catch (const UsageError& e) {
    CHECK_THAT(e.what(), Catch::Contains("command: allreduce in a.json, sendrecv in s.json"));
  }
  json three = load("allreduce-shm-b.json");
  three["world"]["size"] = 3;
  CHECK_THROWS_WITH(check_comparable(load("allreduce-shm-a.json"), "a", three, "b"),
                    Catch::Contains("world size: 2 in a, 3 in b"));
  CHECK_THROWS_AS(load_results(fixture("nosuch.json")), UsageError);
}

TEST_CASE("compare: on the simulated SU, the slowed link is the only regression", "[compare]") {
  CHECK(figures_of(load("validate-netns-healthy.json"), "h").size() == 32);  // 4 x 2 links x tx, rx, lat p50, p99
  // Bandwidth beyond 15%, as tests/compare/netns_case.sh: on the simulated SU latency is
  // scheduler noise.
  const Diff d = diff(only_metrics(figures_of(load("validate-netns-healthy.json"), "h"), {"tx", "rx"}),
                      only_metrics(figures_of(load("validate-netns-slow.json"), "s"), {"tx", "rx"}), 0.15);
  CHECK(d.rows.size() == 16);
  std::set<std::string> regressed;
  for (const auto& r : d.rows)
    if (r.verdict == Verdict::regression) regressed.insert(r.subject);
  CHECK(regressed == std::set<std::string>{"node03 rail1"});
}

namespace {

// The subjects of a diff's regressions, each with its metric.
std::set<std::string> regressions(const Diff& d) {
  std::set<std::string> out;
  for (const auto& r : d.rows)
    if (r.verdict == Verdict::regression) out.insert(r.subject + " | " + r.metric);
  return out;
}

}  // namespace

TEST_CASE("compare: on the simulated multi-spine fabric, the degraded link and the lossy link are the only regressions",
          "[compare][fabric]") {
  const auto healthy = figures_of(load("validate-fabric-healthy-a.json"), "h");
  // Every leaf-spine link a flow crossed, its rate and its retransmits; no host link (a
  // --fabric-only run has no pair tests).
  const json links = load("validate-fabric-healthy-a.json").at("fabric").at("links");
  CHECK(healthy.size() == 2 * links.size());
  std::set<std::string> names;
  for (const auto& l : links) names.insert(l.at("link").get<std::string>());
  for (const auto& f : healthy) CHECK(names.count(f.subject) == 1);

  CHECK(regressions(diff(healthy, figures_of(load("validate-fabric-healthy-b.json"), "b"), 0.05)).empty());
  CHECK(regressions(diff(healthy, figures_of(load("validate-fabric-degraded.json"), "d"), 0.05)) ==
        std::set<std::string>{"su1-leaf0-spine2 | flow Gb/s", "su1-leaf0-spine2 | flow retransmits"});
  // A link that drops 2% keeps its rate on the simulated fabric: its retransmits say it.
  CHECK(regressions(diff(healthy, figures_of(load("validate-fabric-lossy.json"), "l"), 0.05)) ==
        std::set<std::string>{"su1-leaf1-spine3 | flow retransmits"});
}

TEST_CASE("validate --baseline: the slowed link is found against its accepted figure, a healthy run is not",
          "[compare]") {
  const SuConfig c = netns_config();
  const json healthy = load("validate-netns-healthy.json");
  const json slow = load("validate-netns-slow.json");
  const ValidateBaseline b = validate_baseline_from_json(healthy, "base.json", c);
  CHECK(b.links.size() == 8);

  std::vector<Finding> none;
  CHECK(judge_against_baseline(c, node_names(healthy), stats_of(healthy, c), b, none) == 8);
  CHECK(none.empty());

  std::vector<Finding> found;
  judge_against_baseline(c, node_names(slow), stats_of(slow, c), b, found);
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == FindingKind::baseline);
  CHECK(found[0].severity == Severity::fail);
  CHECK(found[0].subject == "node03 rail1 (leaf1)");
  // The rail's median ratio is the mean of its two middle links, both healthy here, so
  // the reason may add their few percent of noise as "its rail moved".
  CHECK_THAT(found[0].reason, Catch::Matches(".*GB/s, [0-9]+% below its accepted 0\\.0[0-9]+ GB/s "
                                             "\\(base\\.json(; its rail moved -[0-9]%)?\\)"));
  CHECK(found[0].measured < found[0].expected * (1 - c.thresholds.baseline_bw_below));
}

TEST_CASE("validate --baseline: a rail that moved as a whole is one WARN, its links are judged against it",
          "[compare]") {
  const SuConfig c = netns_config();
  const json healthy = load("validate-netns-healthy.json");
  const ValidateBaseline b = validate_baseline_from_json(healthy, "base.json", c);
  // A uniformly slower rerun (a busier host): no link is singled out.
  auto stats = stats_of(healthy, c);
  for (auto& rail : stats)
    for (auto& l : rail) l.tx *= 0.7, l.rx *= 0.7;
  std::vector<Finding> found;
  judge_against_baseline(c, node_names(healthy), stats, b, found);
  REQUIRE(found.size() == 2);
  for (const auto& f : found) {
    CHECK(f.severity == Severity::warn);
    CHECK(f.node == -1);
    CHECK_THAT(f.reason, Catch::Contains("30% below") && Catch::Contains("the whole rail changed"));
  }
  // One link far below and its partners a little: only that link, against its rail.
  stats = stats_of(healthy, c);
  for (auto& l : stats[1]) {
    const double f = l.link.node == 2 ? 0.4 : 0.93;
    l.tx *= f, l.rx *= f;
  }
  found.clear();
  judge_against_baseline(c, node_names(healthy), stats, b, found);
  REQUIRE(found.size() == 1);
  CHECK(found[0].subject == "node03 rail1 (leaf1)");
  CHECK(found[0].severity == Severity::fail);
  CHECK_THAT(found[0].reason, Catch::Contains("60% below") && Catch::Contains("its rail moved -7%"));
}

TEST_CASE("validate --baseline: a finding already on the link gets the comparison, and WARN becomes FAIL",
          "[compare]") {
  const SuConfig c = netns_config();
  const json slow = load("validate-netns-slow.json");
  const ValidateBaseline b = validate_baseline_from_json(load("validate-netns-healthy.json"), "base.json", c);
  std::vector<Finding> found{
      {Severity::warn, FindingKind::bandwidth, "node03 rail1 (leaf1)", "passed a re-test", 1, 1, "GB/s", 2, 1}};
  judge_against_baseline(c, node_names(slow), stats_of(slow, c), b, found);
  REQUIRE(found.size() == 1);
  CHECK(found[0].severity == Severity::fail);
  CHECK_THAT(found[0].reason, Catch::Contains("; also receiving") || Catch::Contains("; also sending"));
}

TEST_CASE("validate --baseline: a baseline that did not pass, or of another shape, is refused", "[compare]") {
  const SuConfig c = netns_config();
  json failed = load("validate-netns-healthy.json");
  failed["verdict"] = "FAIL";
  CHECK_THROWS_WITH(validate_baseline_from_json(failed, "b.json", c), Catch::Contains("verdict is FAIL, not PASS"));
  json three = load("validate-netns-healthy.json");
  three["rails"].push_back(three["rails"][0]);
  CHECK_THROWS_WITH(validate_baseline_from_json(three, "b.json", c), Catch::Contains("it has 3 rails"));
  CHECK_THROWS_WITH(validate_baseline_from_json(load("allreduce-shm-a.json"), "b.json", c),
                    Catch::Contains("holds results of 'allreduce', not of validate"));
}

TEST_CASE("validate --baseline: thresholds.baseline_bw_below has a default and is range-checked", "[compare]") {
  const std::string base = R"({"nodes": "n[1-2]", "gpus_per_node": 1, "transport": "ofi:tcp",
    "rails": [{"nic": "eth0", "speed_gbps": 100, "mtu": 1500}])";
  CHECK(parse_su_config(base + "}").thresholds.baseline_bw_below == Approx(0.1));
  CHECK(parse_su_config(base + R"(, "thresholds": {"baseline_bw_below": 0.2}})").thresholds.baseline_bw_below ==
        Approx(0.2));
  CHECK_THROWS_WITH(parse_su_config(base + R"(, "thresholds": {"baseline_bw_below": 2}})"),
                    Catch::Contains("thresholds.baseline_bw_below: 2 is outside"));
}
