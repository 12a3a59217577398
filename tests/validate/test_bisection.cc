// validate's bisection phase arithmetic (bench/commands/validate/bisection.h): the split, the
// ideal and the finding.
#include <catch2/catch.hpp>

#include "bench/commands/validate/bisection.h"
#include "bench/commands/validate/su_config.h"

using namespace railbench;

namespace {
SuConfig two_rails() {
  return parse_su_config(R"({"nodes": "n[1-5]", "gpus_per_node": 2, "transport": "ofi:tcp",
    "rails": [{"nic": "eth0", "speed_gbps": 400, "mtu": 9000}, {"nic": "eth1", "speed_gbps": 400, "mtu": 9000,
               "line_rate_gbps": 200, "leaf": "leafB"}],
    "tests": {"bisection": true}, "thresholds": {"bisection_min_fraction": 0.75}})");
}
const std::vector<std::string> kFiveNodes{"n1", "n2", "n3", "n4", "n5"};
}  // namespace

TEST_CASE("bisection: node i of the first half meets node i of the second, an odd one sits out", "[bisection]") {
  const auto even = bisection_split(4);
  CHECK(even.pairs == std::vector<std::pair<int, int>>{{0, 2}, {1, 3}});
  CHECK(even.rests == -1);
  const auto odd = bisection_split(5);
  CHECK(odd.pairs == std::vector<std::pair<int, int>>{{0, 2}, {1, 3}});
  CHECK(odd.rests == 4);
  CHECK(bisection_split(1).pairs.empty());
}

TEST_CASE("bisection: ideal is pairs x both ways x the slower rail's line rate", "[bisection]") {
  const SuConfig c = two_rails();
  CHECK(c.tests.bisection);
  CHECK(c.tests.bisection_cross_rail);
  CHECK(c.thresholds.bisection_min_fraction == Approx(0.75));
  // rail 0 at 400 Gb/s = 50 GB/s per direction; rail 1 at 200 = 25.
  const BisectionRail same = summarize_cut(c, BisectionCut::rail, 0, {{0, 2, 0, 0, 90}, {1, 3, 0, 0, 96}});
  CHECK(same.ideal == Approx(2 * 2 * 50));
  CHECK(same.achieved == Approx(186));
  CHECK(same.fraction() == Approx(0.93));
  const BisectionRail cross = summarize_cut(c, BisectionCut::cross_rail, 0, {{0, 2, 0, 1, 30}, {1, 3, 0, 1, 20}});
  CHECK(cross.ideal == Approx(2 * 2 * 25));  // the slower end, rail 1
  CHECK(cross.fraction() == Approx(0.5));
  CHECK(summarize_cut(c, BisectionCut::rail, 1, {}).fraction() == 0);
}

TEST_CASE("bisection: a cut below the fraction is a finding naming it and its weakest pair", "[bisection]") {
  const SuConfig c = two_rails();
  const BisectionRail same = summarize_cut(c, BisectionCut::rail, 0, {{0, 2, 0, 0, 90}, {1, 3, 0, 0, 96}});
  const BisectionRail cross = summarize_cut(c, BisectionCut::cross_rail, 0, {{0, 2, 0, 1, 30}, {1, 3, 0, 1, 20}});
  const auto found = judge_bisection(c, kFiveNodes, {same, cross});
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == FindingKind::bisection);
  CHECK(found[0].severity == Severity::fail);
  CHECK(found[0].node == -1);  // a cut is the fabric's: no node is drained for it
  CHECK(found[0].subject == "rail0 -> rail1 (through the spine) cross-rail cut");
  CHECK_THAT(found[0].reason, Catch::Contains("(50%, need 75%"));
  CHECK_THAT(found[0].reason, Catch::Contains("weakest n2 <-> n4 20.000 GB/s"));
  const auto j = to_json(c, kFiveNodes, cross);
  CHECK(j.at("cut") == "cross-rail");
  CHECK(j.at("pairs").size() == 2);
  CHECK(j.at("fraction").get<double>() == Approx(0.5));
}
