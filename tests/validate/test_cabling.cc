#include <catch2/catch.hpp>

#include "bench/commands/validate/arp_probe.h"
#include "bench/commands/validate/cabling.h"

using namespace railbench;

namespace {

SuConfig four_by_two() {
  SuConfig c;
  c.gpus_per_node = 2;
  c.rails = {SuRail{0, "rail0", "leaf0", 10, 0.4, 1500}, SuRail{1, "rail1", "leaf1", 10, 0.4, 1500}};
  return c;
}

const std::vector<std::string> kNodes{"node01", "node02", "node03", "node04"};

// What a healthy 4-node, 2-rail SU hears: every port reaches the 3 other nodes on its rail.
ReachMatrix healthy() {
  ReachMatrix m(4, std::vector<PortReach>(2));
  for (auto& node : m) {
    node[0] = {true, {3, 0}};
    node[1] = {true, {0, 3}};
  }
  return m;
}

}  // namespace

TEST_CASE("cabling: a healthy SU has no finding", "[cabling]") {
  CHECK(judge_cabling(four_by_two(), kNodes, healthy()).empty());
}

TEST_CASE("cabling: two swapped ports of one node are one swap, blamed on the node", "[cabling]") {
  ReachMatrix m = healthy();
  // node03's rail0 cable goes to leaf1 and its rail1 cable to leaf0: each of its ports
  // hears the other rail's 3 nodes; the other nodes' ports still hear 2 of their own
  // rail's, and node03's crossed port besides (which must not count against them).
  m[2][0] = {true, {0, 3}};
  m[2][1] = {true, {3, 0}};
  for (int n : {0, 1, 3}) {
    m[n][0] = {true, {2, 1}};
    m[n][1] = {true, {1, 2}};
  }
  const auto f = judge_cabling(four_by_two(), kNodes, m);
  REQUIRE(f.size() == 1);
  CHECK(f[0].severity == Severity::fail);
  CHECK(f[0].kind == FindingKind::cabling);
  CHECK(f[0].node == 2);
  CHECK(f[0].rail == 0);
  CHECK(f[0].ends.empty());
  CHECK(f[0].subject == "node03");
  CHECK(f[0].reason.rfind("rail0 and rail1 appear swapped (rail0 reaches leaf1's nodes, rail1 reaches leaf0's)", 0) ==
        0);
  CHECK(std::string(to_string(f[0].kind)) == "cabling");
  CHECK(parse_finding_kind("cabling", "kind") == FindingKind::cabling);
}

TEST_CASE("cabling: one port on another rail's leaf is cabled to that leaf", "[cabling]") {
  ReachMatrix m = healthy();
  m[2][0] = {true, {0, 3}};  // node03 rail0 on leaf1; its rail1 still on leaf1 too
  const auto f = judge_cabling(four_by_two(), kNodes, m);
  REQUIRE(f.size() == 1);
  CHECK(f[0].node == 2);
  CHECK(f[0].rail == 0);
  CHECK(f[0].subject == "node03 rail0 (leaf0)");
  CHECK(f[0].reason.rfind("cabled to leaf1 (expected leaf0)", 0) == 0);
}

TEST_CASE("cabling: a dead port, or one not probed, is left to the link checks", "[cabling]") {
  ReachMatrix m = healthy();
  m[3][1] = {true, {0, 0}};   // node04 rail1 reaches nobody: dead, not miscabled
  m[1][0] = {false, {0, 0}};  // node02 rail0: probe skipped
  CHECK(judge_cabling(four_by_two(), kNodes, m).empty());
  // A port that hears its own rail and another's is cabled right (a host answering on
  // the wrong port is the other end's business).
  m[0][0] = {true, {3, 1}};
  CHECK(judge_cabling(four_by_two(), kNodes, m).empty());
}

TEST_CASE("cabling: MAC addresses parse, and only MAC addresses", "[cabling]") {
  MacAddress m{};
  REQUIRE(parse_mac("02:ab:00:10:ff:7e", m));
  CHECK(m == MacAddress{0x02, 0xab, 0x00, 0x10, 0xff, 0x7e});
  CHECK_FALSE(parse_mac("", m));
  CHECK_FALSE(parse_mac("02:ab:00:10:ff", m));
  CHECK_FALSE(parse_mac("02:ab:00:10:ff:7e:01", m));
}
