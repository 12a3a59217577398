// The fabric phase's pure parts (fabric_phase.h runs them on every rank alike): which
// flows to open so that every leaf pair's paths cover every spine, what a flow's trace
// says about its path (switches, then leaf-spine links), and which flows can be
// measured at once without sharing a NIC or a fabric link.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/commands/validate/fabric/flow_probe.h"
#include "bench/commands/validate/fabric_config.h"

namespace railbench {

struct SuLayout;

// One rank's NIC as the fabric sees it.
struct FabricNic {
  int rank = -1, node = -1, rail = -1;
  int leaf = -1;      // index into SuFabric::leaves
  std::string ip;     // its rail address ("" when it has none: it opens no flows)
  uint16_t port = 0;  // its flow listener's port
  std::string label;  // "node01 rail0"
};

struct PlannedFlow {
  int id = 0;
  int src = -1, dst = -1;  // indexes into the NICs
  uint16_t src_port = 0;
};

// The NICs of every rank, in rank order (ips and ports: per rank, gathered).
std::vector<FabricNic> fabric_nics(const SuFabric& f, const SuLayout& L, const std::vector<std::string>& ips,
                                   const std::vector<uint16_t>& ports);

// `count` more flows from leaf a to leaf b, spread over their NICs (each source in turn,
// each a destination it had least), with source ports from `next_port` (per NIC).
std::vector<PlannedFlow> plan_leaf_pair(const std::vector<FabricNic>& nics, int a, int b, int count, int& next_id,
                                        std::vector<uint16_t>& next_port, std::map<std::pair<int, int>, int>& used);

// What a trace says: the switches that answered, which spine the flow crossed, the
// links it crossed (up, down), or, for a path cut short, which links it may have taken
// next. `mismatch` says where the trace disagrees with the config (an address in no
// switch, a first hop that is not the source's leaf): a config to fix, not a fault.
struct FlowPath {
  std::vector<std::string> switches;  // per hop, "" for a silent hop or the destination
  int spine = -1;                     // index into SuFabric::spines, -1: not seen
  std::vector<int> links;             // known links, up then down
  std::vector<int> next_candidates;   // a cut path: one of these was next
  bool reached = false;
  std::string mismatch;
};
FlowPath map_path(const SuFabric& f, const FabricNic& src, const FabricNic& dst, const FlowTrace& trace);

// Rounds of flows (indexes into `flows`) that share no NIC and no fabric link, at most
// `max_per_round` in one (0: no cap), so each
// is measured alone on its path. Flows with no connection are left out.
std::vector<std::vector<int>> measurement_rounds(const std::vector<PlannedFlow>& flows,
                                                 const std::vector<FlowPath>& paths, const std::vector<bool>& connected,
                                                 int max_per_round = 0);

}  // namespace railbench
