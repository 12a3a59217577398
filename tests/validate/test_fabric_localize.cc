// validate's fabric localization (bench/commands/validate/fabric/localize.h) over synthetic
// fabrics: 2 SUs x 2 rails = 4 leaves, 4 spines, 16 leaf-spine links; 2 NICs per leaf;
// flows from every NIC to every NIC on another leaf, each over a seeded random spine, so
// its path is [its leaf's uplink to that spine, the spine's link down to the far leaf].
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "bench/commands/validate/fabric/localize.h"
#include "lib/core/errors.h"

using namespace railbench;

namespace {
constexpr int kLeaves = 4, kSpines = 4, kLinks = kLeaves * kSpines, kNicsPerLeaf = 2;

int link(int leaf, int spine) {
  return leaf * kSpines + spine;
}
int leaf_of(int nic) {
  return nic / kNicsPerLeaf;
}

// Every flow good; `spines` are the ones the hash may pick (all four unless polarized).
std::vector<FlowObservation> fabric_flows(unsigned seed, int per_pair = 2, std::vector<int> spines = {0, 1, 2, 3}) {
  std::mt19937 rng(seed);
  std::vector<FlowObservation> flows;
  for (int src = 0; src < kLeaves * kNicsPerLeaf; ++src) {
    for (int dst = 0; dst < kLeaves * kNicsPerLeaf; ++dst) {
      if (leaf_of(src) == leaf_of(dst)) continue;
      for (int p = 0; p < per_pair; ++p) {
        const int spine = spines[rng() % spines.size()];
        FlowObservation f;
        f.label = "nic" + std::to_string(src) + " -> nic" + std::to_string(dst) + " #" + std::to_string(p);
        f.links = {link(leaf_of(src), spine), link(leaf_of(dst), spine)};
        f.src_nic = src, f.dst_nic = dst;
        f.retransmits = rng() % 3;  // a healthy flow's few
        flows.push_back(f);
      }
    }
  }
  return flows;
}

bool up_through(const FlowObservation& f, int l) {
  return !f.links.empty() && f.links.front() == l;
}
bool down_through(const FlowObservation& f, int l) {
  return f.links.size() == 2 && f.links[1] == l;
}
bool through(const FlowObservation& f, int l) {
  return up_through(f, l) || down_through(f, l);
}

int count(const std::vector<FlowObservation>& flows, const std::function<bool(const FlowObservation&)>& pred) {
  return static_cast<int>(std::count_if(flows.begin(), flows.end(), pred));
}

void slow(FlowObservation& f, double fraction) {
  f.health = FlowHealth::slow, f.fraction = fraction;
}

void degrade(std::vector<FlowObservation>& flows, int l, double fraction) {
  for (auto& f : flows) {
    if (through(f, l)) slow(f, fraction);
  }
}

void make_lossy(std::vector<FlowObservation>& flows, int l) {
  for (auto& f : flows) {
    if (!through(f, l)) continue;
    f.health = FlowHealth::lossy, f.fraction = 0.93, f.retransmits = 400;
  }
}

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

TEST_CASE("localize: a healthy fabric blames nothing, one noisy flow is left unexplained", "[fabric]") {
  auto flows = fabric_flows(1);
  const auto healthy = localize(kLinks, flows);
  CHECK(healthy.blamed.empty());
  CHECK(healthy.host_nics.empty());
  CHECK(healthy.ambiguous.empty());
  CHECK(healthy.unexplained_flows.empty());
  REQUIRE(healthy.links.size() == kLinks);
  for (const auto& e : healthy.links) {
    CHECK(e.votes == 0);
    CHECK(e.bad_flows == 0);
    CHECK(e.good_flows > 0);
    CHECK(e.median_fraction == 1);
  }
  // One slow flow among many good ones on both its links: no link has the evidence.
  slow(flows[5], 0.5);
  const auto noisy = localize(kLinks, flows);
  CHECK(noisy.blamed.empty());
  CHECK(noisy.unexplained_flows == std::vector<int>{5});
  CHECK(noisy.links[flows[5].links[0]].votes == Approx(0.5));
}

TEST_CASE("localize: a degraded uplink is named alone, with its evidence", "[fabric]") {
  auto flows = fabric_flows(2);
  const int bad = link(0, 2);  // su1-leaf0 to spine2
  const int through_bad = count(flows, [&](const auto& f) { return through(f, bad); });
  REQUIRE(through_bad >= 6);
  degrade(flows, bad, 0.2);
  const auto loc = localize(kLinks, flows);
  CHECK(loc.blamed == std::vector<int>{bad});
  CHECK(loc.host_nics.empty());
  CHECK(loc.ambiguous.empty());
  CHECK(loc.unexplained_flows.empty());
  const auto& e = loc.links[bad];
  CHECK(e.link == bad);
  CHECK(e.bad_flows == through_bad);
  CHECK(e.good_flows == 0);
  CHECK(e.votes == Approx(through_bad / 2.0));
  CHECK(e.median_fraction == Approx(0.2));
  // Every other link has fewer votes than the one at fault.
  for (int l = 0; l < kLinks; ++l) {
    if (l != bad) CHECK(loc.links[l].votes < e.votes);
  }
}

TEST_CASE("localize: a fault on one direction of a link (spine to leaf) is named", "[fabric]") {
  auto flows = fabric_flows(9);
  const int bad = link(3, 1);  // spine1 down to su2-leaf1
  const int down = count(flows, [&](const auto& f) { return down_through(f, bad); });
  const int up = count(flows, [&](const auto& f) { return up_through(f, bad); });
  REQUIRE(down >= up);  // else the link carries more good flows than bad: not blamed (below)
  for (auto& f : flows) {
    if (down_through(f, bad)) slow(f, 0.3);
  }
  const auto loc = localize(kLinks, flows);
  CHECK(loc.blamed == std::vector<int>{bad});
  CHECK(loc.unexplained_flows.empty());
  CHECK(loc.links[bad].bad_flows == down);
  CHECK(loc.links[bad].good_flows == up);

  // The same fault where the link's good flows outnumber its bad ones (4 to 3: its score,
  // 3 - 0.5 x 4, is still positive): no blame, and the bad flows are returned unexplained
  // rather than pinned on a link that carries more good ones.
  auto mostly_good = fabric_flows(9);
  int kept_down = 0;
  std::vector<FlowObservation> thinned;
  for (auto& f : mostly_good) {
    if (down_through(f, bad) && kept_down++ >= 3) continue;  // three flows down through it
    thinned.push_back(f);
  }
  REQUIRE(count(thinned, [&](const auto& f) { return up_through(f, bad); }) == 4);
  std::vector<int> bad_flows;
  for (int i = 0; i < static_cast<int>(thinned.size()); ++i) {
    if (down_through(thinned[i], bad)) slow(thinned[i], 0.3), bad_flows.push_back(i);
  }
  const auto weak = localize(kLinks, thinned);
  CHECK(weak.blamed.empty());
  CHECK(weak.unexplained_flows == bad_flows);
}

TEST_CASE("localize: a blackholed uplink, its flows dead with cut paths, is named", "[fabric]") {
  auto flows = fabric_flows(4);
  const int leaf = 1, spine = 3, bad = link(leaf, spine);
  const std::vector<int> uplinks{link(leaf, 0), link(leaf, 1), link(leaf, 2), link(leaf, 3)};
  int dead_up = 0, dead_down = 0;
  for (auto& f : flows) {
    if (!through(f, bad)) continue;
    f.health = FlowHealth::dead, f.fraction = 0;
    if (up_through(f, bad)) {
      // The leaf answered, nothing after it: one of its uplinks, unknown which.
      f.links = {}, f.next_candidates = uplinks, ++dead_up;
    } else {
      // Up to the spine, then silence: the spine's one link to that leaf.
      f.links = {f.links[0]}, f.next_candidates = {bad}, ++dead_down;
    }
  }
  REQUIRE(dead_up >= 3);
  REQUIRE(dead_down >= 3);
  // A good flow whose trace lost its hops (ICMP policed): it may have crossed any uplink,
  // so it clears none of them.
  for (auto& f : flows) {
    if (up_through(f, link(leaf, 0)) && f.health == FlowHealth::good) {
      f.links = {}, f.next_candidates = uplinks;
      break;
    }
  }
  const auto loc = localize(kLinks, flows);
  CHECK(loc.blamed == std::vector<int>{bad});
  CHECK(loc.host_nics.empty());
  CHECK(loc.unexplained_flows.empty());
  CHECK(loc.links[bad].bad_flows == dead_up + dead_down);
  CHECK(loc.links[bad].good_flows == 0);
  CHECK(loc.links[bad].median_fraction == 0);
  CHECK(loc.links[bad].votes == Approx(dead_up * 0.25 + dead_down * 0.5));
  // The leaf's other uplinks got a quarter vote per dead flow but carry good ones.
  for (int other : {uplinks[0], uplinks[1], uplinks[2]}) {
    CHECK(loc.links[other].votes == Approx(dead_up * 0.25));
    CHECK(loc.links[other].good_flows > 0);
  }
}

TEST_CASE("localize: a lossy link: its flows retransmit, bandwidth nearly whole", "[fabric]") {
  auto flows = fabric_flows(5);
  const int bad = link(2, 0);
  make_lossy(flows, bad);
  const auto loc = localize(kLinks, flows);
  CHECK(loc.blamed == std::vector<int>{bad});
  CHECK(loc.unexplained_flows.empty());
  const int n = count(flows, [&](const auto& f) { return through(f, bad); });
  CHECK(loc.links[bad].retransmits == 400u * static_cast<unsigned>(n));
  CHECK(loc.links[bad].median_fraction == Approx(0.93));
  CHECK(loc.links[link(2, 1)].retransmits < 100u);
}

TEST_CASE("localize: two faults at once, sharing a spine, are both named", "[fabric]") {
  auto flows = fabric_flows(6);
  const int degraded = link(0, 1), lossy = link(2, 1);
  // Some flows cross both (su1-leaf0 <-> su2-leaf0 through spine1).
  REQUIRE(count(flows, [&](const auto& f) { return through(f, degraded) && through(f, lossy); }) > 0);
  degrade(flows, degraded, 0.25);
  make_lossy(flows, lossy);
  const auto loc = localize(kLinks, flows);
  CHECK(sorted(loc.blamed) == std::vector<int>{degraded, lossy});
  CHECK(loc.links[loc.blamed[0]].votes >= loc.links[loc.blamed[1]].votes);  // most votes first
  CHECK(loc.unexplained_flows.empty());
  CHECK(loc.host_nics.empty());
  CHECK(loc.ambiguous.empty());
}

TEST_CASE("localize: a NIC bad on every path is host side and no link is blamed", "[fabric]") {
  auto flows = fabric_flows(7);
  const int nic = 0;
  std::vector<int> uplinks_used;
  for (auto& f : flows) {
    if (f.src_nic != nic && f.dst_nic != nic) continue;
    slow(f, 0.3);
    if (f.src_nic == nic) uplinks_used.push_back(f.links[0]);
  }
  std::sort(uplinks_used.begin(), uplinks_used.end());
  uplinks_used.erase(std::unique(uplinks_used.begin(), uplinks_used.end()), uplinks_used.end());
  REQUIRE(uplinks_used.size() == 4);  // its flows left over all four spines
  const auto loc = localize(kLinks, flows);
  CHECK(loc.host_nics == std::vector<int>{nic});
  CHECK(loc.blamed.empty());
  CHECK(loc.unexplained_flows.empty());
  for (const auto& e : loc.links) {
    CHECK(e.bad_flows == 0);  // the host's flows are out of the fabric's evidence
    CHECK(e.votes == 0);
  }

  // The same NIC's flows all through one uplink (and each down a different link): one
  // link is on every bad path, so it is not called host side, and that link is blamed
  // only if its evidence holds (here: it carries no good flow).
  std::vector<FlowObservation> one_path;
  for (auto f : fabric_flows(7)) {
    if (f.src_nic == nic || f.dst_nic == nic) {
      if (f.src_nic != nic) continue;
      f.links = {link(0, 2), link(leaf_of(f.dst_nic), 2)};
      slow(f, 0.3);
    } else if (through(f, link(0, 2))) {
      continue;
    }
    one_path.push_back(f);
  }
  const auto shared = localize(kLinks, one_path);
  CHECK(shared.host_nics.empty());
  CHECK(shared.blamed == std::vector<int>{link(0, 2)});

  // The same, but the uplink carried the other NICs' flows out of that leaf well: the
  // NIC's few flows hashed onto one spine, and the NIC explains them, not the link.
  std::vector<FlowObservation> kept_others;
  int others_up = 0;
  for (auto f : fabric_flows(7)) {
    if (f.src_nic == nic || f.dst_nic == nic) {
      if (f.src_nic != nic) continue;
      f.links = {link(0, 2), link(leaf_of(f.dst_nic), 2)};
      slow(f, 0.3);
    } else {
      others_up += f.links[0] == link(0, 2);
    }
    kept_others.push_back(f);
  }
  REQUIRE(others_up >= 1);
  const auto nic_side = localize(kLinks, kept_others);
  CHECK(nic_side.host_nics == std::vector<int>{nic});
  CHECK(nic_side.blamed.empty());
}

TEST_CASE("localize: two links no flow tells apart are returned as one ambiguous group", "[fabric]") {
  const int a = link(0, 0), b = link(3, 0);
  std::vector<FlowObservation> flows;
  for (const auto& f : fabric_flows(8)) {
    if (through(f, a) != through(f, b)) continue;  // a and b appear only together
    flows.push_back(f);
  }
  const int both = count(flows, [&](const auto& f) { return through(f, a); });
  REQUIRE(both >= 2);
  degrade(flows, b, 0.1);
  const auto loc = localize(kLinks, flows);
  CHECK(loc.blamed == std::vector<int>{a});  // one per group: its lowest index
  REQUIRE(loc.ambiguous.size() == 1);
  CHECK(loc.ambiguous[0] == std::vector<int>{a, b});
  CHECK(loc.unexplained_flows.empty());
}

TEST_CASE("localize: where greedy ties, the exact cover takes fewer links", "[fabric]") {
  // Links: 0 = X, 1 = A, 2 = B, 3 and 4 = P, Q (busy links with good flows). Bad flows
  // {A,P} {A,X} {B,X} {B,Q}: X, A and B each explain two, a tie; greedy takes X (lowest
  // index) and then needs A and B too; A and B alone explain all four.
  auto flow = [](std::vector<int> links, FlowHealth h) {
    FlowObservation f;
    f.links = std::move(links), f.health = h, f.fraction = h == FlowHealth::good ? 1 : 0.2;
    return f;
  };
  std::vector<FlowObservation> flows{flow({1, 3}, FlowHealth::slow), flow({1, 0}, FlowHealth::slow),
                                     flow({2, 0}, FlowHealth::slow), flow({2, 4}, FlowHealth::slow)};
  for (int i = 0; i < 3; ++i)
    flows.push_back(flow({3}, FlowHealth::good)), flows.push_back(flow({4}, FlowHealth::good));
  const auto loc = localize(5, flows);
  CHECK(sorted(loc.blamed) == std::vector<int>{1, 2});
  CHECK(loc.unexplained_flows.empty());
  CHECK(loc.ambiguous.empty());
}

TEST_CASE("localize: good flows through a link argue against it", "[fabric]") {
  // Links 0 = C and 1 = A share four bad flows; C has a fifth (with link 2, busy with good
  // flows) but also three good ones. Explaining more is not enough: A is the better answer,
  // and the fifth flow stays unexplained.
  std::vector<FlowObservation> flows;
  auto add = [&](std::vector<int> links, FlowHealth h) {
    FlowObservation f;
    f.links = std::move(links), f.health = h;
    flows.push_back(f);
  };
  for (int i = 0; i < 4; ++i) add({0, 1}, FlowHealth::slow);
  add({0, 2}, FlowHealth::slow);
  for (int i = 0; i < 3; ++i) add({0}, FlowHealth::good);
  for (int i = 0; i < 6; ++i) add({2}, FlowHealth::good);
  const auto loc = localize(3, flows);
  CHECK(loc.blamed == std::vector<int>{1});
  CHECK(loc.unexplained_flows == std::vector<int>{4});
}

TEST_CASE("localize: a bad flow only one link can explain blames it, good flows or not", "[fabric]") {
  // A dead flow whose trace stopped where only link 2 could come next; link 2 carries
  // more good flows than bad, yet nothing else explains that flow.
  std::vector<FlowObservation> flows(5);
  flows[0].health = FlowHealth::dead, flows[0].fraction = 0, flows[0].next_candidates = {2};
  for (int i = 1; i < 5; ++i) flows[i].links = {i % 2, 2};
  const auto loc = localize(3, flows);
  CHECK(loc.blamed == std::vector<int>{2});
  CHECK(loc.unexplained_flows.empty());
  CHECK(loc.links[2].bad_flows == 1);
  CHECK(loc.links[2].good_flows == 4);
}

TEST_CASE("localize: a path through a link the fabric does not have is a clear error", "[fabric]") {
  auto flows = fabric_flows(1);
  flows[3].links[1] = kLinks;
  CHECK_THROWS_AS(localize(kLinks, flows), UsageError);
  CHECK_THROWS_WITH(localize(kLinks, flows), Catch::Contains("crosses link 16, not one of the fabric's 16 links"));
}

TEST_CASE("ecmp_balance: polarized hashing uses 2 of 4 uplinks, at twice the mean", "[fabric]") {
  const std::vector<int> uplinks{link(0, 0), link(0, 1), link(0, 2), link(0, 3)};
  auto from_leaf0 = [](std::vector<FlowObservation> all) {
    std::vector<FlowObservation> mine;
    for (auto& f : all) {
      if (leaf_of(f.src_nic) == 0) mine.push_back(std::move(f));
    }
    return mine;
  };
  // Polarized: every flow on spine 0 or 2, alternately so the two carry the same count.
  auto polarized = from_leaf0(fabric_flows(9));
  for (size_t i = 0; i < polarized.size(); ++i) {
    const int spine = i % 2 ? 2 : 0;
    polarized[i].links = {link(0, spine), link(leaf_of(polarized[i].dst_nic), spine)};
  }
  const auto pol = ecmp_balance(uplinks, polarized);
  CHECK(pol.flows_per_link == std::vector<int>{12, 0, 12, 0});
  CHECK(pol.links_used == 2);
  CHECK(pol.max_over_mean == Approx(2));

  auto spread = from_leaf0(fabric_flows(9));
  const auto bal = ecmp_balance(uplinks, spread);
  int total = 0, most = 0;
  for (int u = 0; u < 4; ++u) {
    const int n = count(spread, [&](const auto& f) { return up_through(f, uplinks[u]); });
    CHECK(bal.flows_per_link[u] == n);
    total += n, most = std::max(most, n);
  }
  CHECK(total == 24);
  CHECK(bal.links_used == 4);
  CHECK(bal.max_over_mean == Approx(most / 6.0));
  CHECK(ecmp_balance(uplinks, {}).max_over_mean == 0);
}

TEST_CASE("binomial_tail: how often k or more of n flows are bad by chance", "[fabric]") {
  CHECK(binomial_tail(0, 5, 0.1) == 1);
  CHECK(binomial_tail(6, 5, 0.1) == 0);
  CHECK(binomial_tail(3, 3, 0.5) == Approx(0.125));
  CHECK(binomial_tail(1, 2, 0.5) == Approx(0.75));
  CHECK(binomial_tail(2, 4, 0.1) == Approx(1 - 0.9 * 0.9 * 0.9 * 0.9 - 4 * 0.1 * 0.9 * 0.9 * 0.9));
  CHECK(binomial_tail(1, 3, 0) == 0);
  CHECK(binomial_tail(40, 40, 0.5) == Approx(std::pow(0.5, 40)));
}

TEST_CASE("drop_chance_links: a link whose bad flows chance explains is not blamed, a fault's link is", "[fabric]") {
  // Every flow goes up one of links 0-2 and down link 3. Link 0 carries 2 flows, both
  // slow; link 1 (a real fault) 6, all slow; link 2 carries 40, of which 4 are slow: a
  // background of 10% bad flows (a busy, shared host). Both 0 and 1 explain their flows
  // with no good flow against them, so localize names both; 2 of 2 at 10% comes once
  // in 100 runs, 6 of 6 once in a million.
  std::vector<FlowObservation> flows;
  auto add = [&](int l, FlowHealth h) {
    FlowObservation f;
    f.label = "flow " + std::to_string(flows.size());
    f.links = {l, 3}, f.health = h, f.fraction = h == FlowHealth::good ? 1 : 0.3;
    flows.push_back(f);
  };
  for (int i = 0; i < 2; ++i) add(0, FlowHealth::slow);
  for (int i = 0; i < 6; ++i) add(1, FlowHealth::slow);
  for (int i = 0; i < 40; ++i) add(2, i % 10 == 3 ? FlowHealth::slow : FlowHealth::good);
  auto loc = localize(4, flows);
  REQUIRE(sorted(loc.blamed) == std::vector<int>{0, 1});
  drop_chance_links(flows, loc);
  CHECK(loc.blamed == std::vector<int>{1});
  REQUIRE(loc.by_chance.size() == 1);
  const ChanceLink& c = loc.by_chance[0];
  CHECK(c.link == 0);
  CHECK(c.bad == 2);
  CHECK(c.flows == 2);
  CHECK(c.background_bad == 4);
  CHECK(c.background_flows == 40);
  CHECK(c.p_value == Approx(0.01));
  // Its flows are now unexplained, beside the background's own.
  CHECK(std::count(loc.unexplained_flows.begin(), loc.unexplained_flows.end(), 0) == 1);
  CHECK(std::count(loc.unexplained_flows.begin(), loc.unexplained_flows.end(), 1) == 1);
  CHECK(loc.unexplained_flows.size() == 6);

  // A quiet run (no bad flow elsewhere) still allows for one: a link with its one flow
  // bad is not proof, a link with its 2 of 2 is (the background is 1 in 48 flows).
  for (auto& f : flows)
    if (f.links[0] == 2) f.health = FlowHealth::good, f.fraction = 1;
  auto quiet = localize(4, flows);
  drop_chance_links(flows, quiet);
  CHECK(sorted(quiet.blamed) == std::vector<int>{0, 1});
  flows[1].health = FlowHealth::good, flows[1].fraction = 1;  // link 0: 1 of 2 bad
  auto one = localize(4, flows);
  drop_chance_links(flows, one);
  CHECK(one.blamed == std::vector<int>{1});
}
