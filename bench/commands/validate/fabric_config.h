// The fabric above the leaves, as the SU config's "fabric" section describes it: which
// nodes form each SU, the spine switches, each leaf (one per SU and rail) and each
// leaf-spine link with its ports and the addresses a probe sees on it. validate's
// fabric phase (fabric_phase.h) maps every hop a flow's trace answers from to a switch
// and every leaf-spine step to one of these links, so a finding can name the link and
// both its ports. See "The fabric" in this folder's README.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace railbench {

class ConfigReader;

struct FabricSu {
  std::string name;        // "su1"
  std::string nodes_expr;  // "node[01-04]"
  std::vector<std::string> nodes;
};

struct FabricSwitch {
  std::string name;                    // "su1-leaf0", "spine2"
  std::vector<std::string> addresses;  // dotted IPv4, or a.b.c.d/len prefixes
};

struct FabricLeaf : FabricSwitch {
  std::string su;
  std::vector<int> rails;  // the rails cabled to it (one, or several on a wide leaf)
};

struct FabricLink {
  std::string name;  // "su1-leaf0-spine2"
  std::string leaf, leaf_port, leaf_address;
  std::string spine, spine_port, spine_address;
};

// How the fabric phase probes and measures (all optional in the config).
struct FabricTests {
  bool enabled = true;             // run the phase when the config has a fabric
  int flows_per_spine = 4;         // first flows out of each leaf: spines x this
  int max_flows_per_spine = 8;     // ...then more until every spine is seen both ways, up to spines x this
  double probe_rate = 100;         // ICMP answers per second asked of any one switch (its CPU polices them)
  uint64_t flow_bytes = 1 << 20;   // bytes each measured flow moves
  double flow_min_fraction = 0.6;  // a flow below this share of its expected rate is slow
  int retransmits_lossy = 20;      // ...one with this many retransmits (and k MADs above the median) lossy
  int max_ttl = 6;
  int max_flows_per_round = 0;  // flows measured at once (0: as many as share no NIC or link)
  // The ECMP sweep (fabric_ecmp.h): a cross-SU all-to-all with each of these flows per
  // connection (empty: no sweep), each NIC to ecmp_peers NICs of its rail in other SUs,
  // ecmp_bytes per connection (0: flow_bytes), split over its flows.
  std::vector<int> ecmp_sweep;
  int ecmp_peers = 8;
  uint64_t ecmp_bytes = 0;
};

// "1,2,4,8" as the ECMP sweep's flows per connection; throws UsageError naming the text.
std::vector<int> parse_ecmp_sweep(const std::string& text, const std::string& where);

struct SuFabric {
  std::vector<FabricSu> sus;
  std::vector<FabricSwitch> spines;
  std::vector<FabricLeaf> leaves;
  std::vector<FabricLink> links;
  double uplink_gbps = 0;  // what one leaf-spine link carries each way
  FabricTests tests;

  bool present() const { return !spines.empty(); }
  int su_of(const std::string& node) const;                                 // index into sus, -1: none
  int leaf_index(int su, int rail) const;                                   // index into leaves, -1: none
  int link_index(const std::string& leaf, const std::string& spine) const;  // -1: none
  // The switch an address belongs to ("" when none): a link end's address, or an
  // address or prefix listed on a leaf or spine.
  std::string switch_of(const std::string& address) const;
  bool is_spine(const std::string& name) const;
  int spine_index(const std::string& name) const;  // index into spines, -1: none ("" included)
  int leaf_named(const std::string& name) const;   // index into leaves, -1: none
  int su_named(const std::string& name) const;     // index into sus, -1: none
};

// Probes per second one rank may send so that no switch is asked for more than
// tests.probe_rate answers a second: a trace asks each of its ~3 hops once, a leaf
// hears from its own NICs, a spine from every NIC over the spine count.
double probe_rate_per_rank(const SuFabric& f, int nics);

// What the fabric phase will do at this size (validate --plan): flows, probes, time.
struct FabricPlan {
  long long flows = 0, max_flows = 0, probes = 0;
  double per_rank_probe_rate = 0;
  double discovery_s = 0, measure_rounds = 0, measure_s = 0;
  // The ECMP sweep, when the config asks for one: its flows over every step, their probes,
  // and the time to trace them and to move the steps' bytes at the line rate.
  long long sweep_peers = 0, sweep_flows = 0, sweep_probes = 0;
  double sweep_trace_s = 0, sweep_move_s = 0;
};
FabricPlan plan_fabric(const SuFabric& f, int nics, double flow_gbps);

// Reads doc["fabric"] into c's fabric, against the SU's nodes and rails (node_names: the
// config's nodes, rails: gpus_per_node). Throws UsageError naming the field.
SuFabric read_fabric(const ConfigReader& r, const nlohmann::json& j, const std::vector<std::string>& node_names,
                     int rails);

}  // namespace railbench
