// railbench congestion's pure parts: where the victims and aggressors go on a
// rail-optimized layout, what each aggressor does, and GPCNeT's impact factor.
#include <map>

#include <catch2/catch.hpp>

#include "bench/commands/congestion/impact.h"
#include "bench/commands/congestion/placement.h"
#include "lib/core/errors.h"

using namespace railbench;
using namespace railbench::congestion;

namespace {
// 4 nodes x 2 slots, as mpirun --map-by ppr:2:node lays them out: node-major.
std::vector<std::string> hosts_4x2() {
  return {"n1", "n1", "n2", "n2", "n3", "n3", "n4", "n4"};
}
}  // namespace

TEST_CASE("congestion: ranks sharing a host name are a node, slots in rank order", "[congestion]") {
  const auto spots = layout_ranks({"a", "b", "a", "b"}, 0);
  CHECK(spots == std::vector<RankSpot>{{0, 0}, {1, 0}, {0, 1}, {1, 1}});
  // --ranks-per-node splits one host's ranks into nodes (a laptop run).
  const auto split = layout_ranks({"h", "h", "h", "h", "h", "h"}, 2);
  CHECK(split == std::vector<RankSpot>{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}});
  CHECK_THROWS_AS(layout_ranks({"h", "h", "h"}, 2), UsageError);
  CHECK_THROWS_AS(layout_ranks({"h"}, -1), UsageError);
}

TEST_CASE("congestion: same-leaf victims share a slot, cross-spine victims do not", "[congestion]") {
  const auto spots = layout_ranks(hosts_4x2(), 0);
  const Placement leaf = place(spots, VictimPath::same_leaf);
  CHECK(leaf.victims == std::pair{0, 2});  // node 1 slot 0 and node 2 slot 0: rail 0's leaf
  CHECK(leaf.aggressors == std::vector<int>{1, 3, 4, 5, 6, 7});
  const Placement spine = place(spots, VictimPath::cross_spine);
  CHECK(spine.victims == std::pair{0, 3});  // node 1 slot 0 and node 2 slot 1: the spine
  CHECK(spine.aggressors == std::vector<int>{1, 2, 4, 5, 6, 7});
}

TEST_CASE("congestion: placements the job cannot make are usage errors naming the fix", "[congestion]") {
  // One rank per node: no second slot for a cross-spine pair.
  const auto one_per_node = layout_ranks({"a", "b", "c", "d"}, 0);
  CHECK_NOTHROW(place(one_per_node, VictimPath::same_leaf));
  CHECK_THROWS_WITH(place(one_per_node, VictimPath::cross_spine), Catch::Contains("--victims same-leaf"));
  // One node: no pair crosses a link.
  CHECK_THROWS_WITH(place(layout_ranks({"a", "a", "a", "a"}, 0), VictimPath::same_leaf),
                    Catch::Contains("2 or more nodes"));
  // Victims and a single aggressor: nothing to congest with.
  CHECK_THROWS_WITH(place(layout_ranks({"a", "b", "c"}, 0), VictimPath::same_leaf),
                    Catch::Contains("2 or more aggressor ranks"));
  CHECK_THROWS_WITH(parse_victim_path("spine"), Catch::Contains("same-leaf or cross-spine"));
  CHECK_THROWS_WITH(parse_pattern("bisection"), Catch::Contains("incast, broadcast, alltoall or cross-rail"));
}

TEST_CASE("congestion: cross-rail pairs are on two nodes and, where they can be, two slots", "[congestion]") {
  const auto spots = layout_ranks(hosts_4x2(), 0);
  const std::vector<int> aggressors{1, 2, 4, 5, 6, 7};
  const auto pairs = cross_rail_pairs(aggressors, spots);
  REQUIRE(pairs.size() == 3);
  for (const auto& [x, y] : pairs) {
    CHECK(spots[x].node != spots[y].node);
    CHECK(spots[x].slot != spots[y].slot);
  }
  // Every rank of the pattern sends to and receives from exactly its partner.
  for (int r : aggressors) {
    const AggressorRole role = aggressor_role(Pattern::cross_rail, r, aggressors, spots);
    REQUIRE(role.send_to.size() == 1);
    CHECK(role.send_to == role.recv_from);
  }
  // A victim rank does nothing in any pattern.
  for (Pattern p : {Pattern::incast, Pattern::broadcast, Pattern::alltoall, Pattern::cross_rail}) {
    const AggressorRole none = aggressor_role(p, 0, aggressors, spots);
    CHECK(none.send_to.empty());
    CHECK(none.recv_from.empty());
  }
}

TEST_CASE("congestion: incast, broadcast and alltoall roles match sends with receives", "[congestion]") {
  const auto spots = layout_ranks(hosts_4x2(), 0);
  const std::vector<int> aggressors{1, 2, 4, 5, 6, 7};
  for (Pattern p : {Pattern::incast, Pattern::broadcast, Pattern::alltoall, Pattern::cross_rail}) {
    // Every send a rank posts to a peer is a receive that peer posts from it, or the
    // aggressor round would never finish.
    std::map<std::pair<int, int>, int> sends, recvs;
    for (int r : aggressors) {
      const AggressorRole role = aggressor_role(p, r, aggressors, spots);
      for (int to : role.send_to) ++sends[{r, to}];
      for (int from : role.recv_from) ++recvs[{from, r}];
    }
    CHECK(sends == recvs);
    CHECK(!sends.empty());
  }
  const AggressorRole target = aggressor_role(Pattern::incast, 1, aggressors, spots);
  CHECK(target.recv_from.size() == 5);
  CHECK(target.send_to.empty());
  const AggressorRole root = aggressor_role(Pattern::broadcast, 1, aggressors, spots);
  CHECK(root.send_to.size() == 5);
  CHECK(aggressor_role(Pattern::alltoall, 4, aggressors, spots).send_to.size() == 5);
}

TEST_CASE("congestion: impact is above 1 when worse, for latency and for bandwidth", "[congestion]") {
  std::vector<double> lat_iso(1000, 10.0), lat_con(1000, 10.0);
  for (int i = 0; i < 20; ++i) lat_con[i] = 500.0;  // 2% of samples stuck in a queue
  const Tail li = tail_of(lat_iso, Better::lower), lc = tail_of(lat_con, Better::lower);
  CHECK(li.p50 == Approx(10));
  CHECK(lc.p99 == Approx(500));
  const Impact lat = impact_of(li, lc, Better::lower);
  CHECK(lat.p50 == Approx(1.0));
  CHECK(lat.p99 == Approx(50.0));
  // Bandwidth: the bad tail is the low one, and halving it is an impact of 2.
  std::vector<double> bw_iso(100, 12.0), bw_con(100, 12.0);
  bw_con[0] = 6.0;
  bw_con[1] = 6.0;
  const Tail bi = tail_of(bw_iso, Better::higher), bc = tail_of(bw_con, Better::higher);
  CHECK(bc.p99 == Approx(6.0));
  const Impact bw = impact_of(bi, bc, Better::higher);
  CHECK(bw.p50 == Approx(1.0));
  CHECK(bw.p99 == Approx(2.0));
  // Nothing measured is not an impact of 0 or infinity: it is reported as 0.
  CHECK(impact_of(Tail{}, bc, Better::higher).p50 == 0);
}
