// From flows to the switch link at fault. Each flow has its path (the fabric links it
// crossed, from its trace) and its health (measured against what its path should
// carry). A fault inside the fabric hurts only the flows the ECMP hash put on it, so:
//  1. host side first: a NIC whose flows are bad on every path is the NIC's (or its
//     cable's) fault, as validate's pair tests already say; its flows are set aside;
//  2. each remaining bad flow votes 1/h for each of the h links of its path (007);
//  3. the smallest set of links that explains every bad flow while carrying few good
//     ones (greedy hitting set; an exact ILP where greedy has ties);
//  4. links that every flow crosses together cannot be told apart: they are returned
//     as ambiguous, so the caller opens flows that separate them and measures again;
//  5. drop_chance_links, after: a blamed link whose bad flows chance explains (as many
//     of its n flows bad as the run's background rate of bad flows would make likely)
//     is not blamed: a shared, busy host slows a few flows anywhere, a fault slows the
//     flows of its link. Separate, since it needs a run's worth of flows to judge by.
// Pure: no I/O, the same answer on every rank.
#pragma once

#include <string>
#include <vector>

namespace railbench {

// One leaf-spine link of the fabric (both directions; a flow crosses it up or down).
struct FabricLinkRef {
  std::string name;  // "su1-leaf0-spine2"
  std::string leaf, leaf_port, spine, spine_port;
};

enum class FlowHealth { good, slow, lossy, dead };

struct FlowObservation {
  std::string label;       // "node01 rail0 -> node05 rail0, port 40123"
  std::vector<int> links;  // fabric links (indexes) the path is known to cross
  // A path cut short (a hop that never answered; a flow that died): one of these links
  // is the next one it took, unknown which. Empty when the path is complete.
  std::vector<int> next_candidates;
  int src_nic = -1, dst_nic = -1;  // the caller's NIC ids (host side), -1: none
  FlowHealth health = FlowHealth::good;
  double fraction = 1;  // measured / expected bandwidth (0 when dead)
  unsigned retransmits = 0;
};

struct LinkEvidence {
  int link = -1;
  double votes = 0;  // sum of 1/h over the bad flows through it
  int bad_flows = 0, good_flows = 0;
  double median_fraction = 1;  // of the flows through it
  unsigned retransmits = 0;    // of the flows through it
};

// A link the cover chose and chance explains (step 5): k of its n flows bad, where the
// flows through no blamed link were bad at `background` (bad / flows there).
struct ChanceLink {
  int link = -1;
  int bad = 0, flows = 0;
  int background_bad = 0, background_flows = 0;
  double p_value = 1;  // P(k or more of n bad) at the background rate
};

struct Localization {
  std::vector<LinkEvidence> links;          // every link, in link order
  std::vector<int> blamed;                  // the explaining set, most votes first
  std::vector<std::vector<int>> ambiguous;  // groups of links no flow tells apart
  std::vector<int> host_nics;               // NICs bad on every path (host side)
  std::vector<int> unexplained_flows;       // bad flows no blamed link covers
  std::vector<ChanceLink> by_chance;        // chosen, then dropped: chance explains them
};

struct LocalizeOptions {
  int min_flows_per_nic = 3;       // a NIC needs this many flows to be called host side
  double host_bad_fraction = 0.9;  // ...and this share of them bad, across 2+ paths
  double good_penalty = 0.5;       // a link's score: bad flows it explains - penalty x good flows
  // A blamed link stays blamed only if its count of bad flows would come by chance less
  // often than this at the background rate (a one-sided binomial test). With 16-64
  // links a run tests each: about 1 false blame in 60-1000 healthy runs at worst, and a
  // fault's link (every one of its 4+ flows bad) passes it whatever the noise.
  double chance_alpha = 1e-3;
};

// Whether a flow may have crossed `link`: on its known path or among its next candidates.
bool crosses(const FlowObservation& f, int link);

// Step 5 on localize's answer: moves each blamed link chance explains to `by_chance`
// (least likely blame first), its bad flows to `unexplained_flows`.
void drop_chance_links(const std::vector<FlowObservation>& flows, Localization& loc,
                       const LocalizeOptions& options = {});

// P(X >= k) for X ~ Binomial(n, p): how often k or more of n flows come out bad by chance.
double binomial_tail(int k, int n, double p);

Localization localize(int link_count, const std::vector<FlowObservation>& flows, const LocalizeOptions& options = {});

// ECMP balance of one group of flows (e.g. one source leaf's): flows per uplink.
struct EcmpBalance {
  std::vector<int> flows_per_link;  // index: position in `uplinks`
  double max_over_mean = 0;
  int links_used = 0;
};
EcmpBalance ecmp_balance(const std::vector<int>& uplinks, const std::vector<FlowObservation>& flows);

}  // namespace railbench
