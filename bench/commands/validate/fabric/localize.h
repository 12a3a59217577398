// From flows to the switch link at fault. Each flow has its path (the fabric links it
// crossed, from its trace) and its health (measured against what its path should
// carry). A fault inside the fabric hurts only the flows the ECMP hash put on it, so:
//  1. host side first: a NIC whose flows are bad on every path is the NIC's (or its
//     cable's) fault, as validate's pair tests already say; its flows are set aside;
//  2. each remaining bad flow votes 1/h for each of the h links of its path (007);
//  3. the smallest set of links that explains every bad flow while carrying few good
//     ones (greedy hitting set; an exact ILP where greedy has ties);
//  4. links that every flow crosses together cannot be told apart: they are returned
//     as ambiguous, so the caller opens flows that separate them and measures again.
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

struct Localization {
  std::vector<LinkEvidence> links;          // every link, in link order
  std::vector<int> blamed;                  // the explaining set, most votes first
  std::vector<std::vector<int>> ambiguous;  // groups of links no flow tells apart
  std::vector<int> host_nics;               // NICs bad on every path (host side)
  std::vector<int> unexplained_flows;       // bad flows no blamed link covers
};

struct LocalizeOptions {
  int min_flows_per_nic = 3;       // a NIC needs this many flows to be called host side
  double host_bad_fraction = 0.9;  // ...and this share of them bad, across 2+ paths
  double good_penalty = 0.5;       // a link's score: bad flows it explains - penalty x good flows
};

Localization localize(int link_count, const std::vector<FlowObservation>& flows, const LocalizeOptions& options = {});

// ECMP balance of one group of flows (e.g. one source leaf's): flows per uplink.
struct EcmpBalance {
  std::vector<int> flows_per_link;  // index: position in `uplinks`
  double max_over_mean = 0;
  int links_used = 0;
};
EcmpBalance ecmp_balance(const std::vector<int>& uplinks, const std::vector<FlowObservation>& flows);

}  // namespace railbench
