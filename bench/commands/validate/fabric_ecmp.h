// The fabric phase's ECMP sweep: a cross-SU all-to-all run with 1, 2, 4, 8... flows per
// connection (a RoCE job's QPs per peer; here TCP flows with their own source ports,
// which is all the hash sees), each flow's path traced by its own SYNs, all flows of a
// step at once. Per step: how the flows spread over the leaves' uplinks (max / mean),
// the aggregate rate against the fabric's ideal (every resource pooled: what a perfect
// spread would carry), what the traced paths allow (the fluid model,
// fabric/ecmp_model.h: the ECMP share of the loss, whatever the hosts carry), and the
// smallest flow count that reaches 90% of the ideal. A leaf whose flows of one
// connection always take one spine, whatever their source ports, hashes on addresses
// only: more QPs cannot spread RoCE there, a finding.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/validate/fabric_flows.h"
#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"

namespace railbench {

class RunContext;
class FlowListener;
class ProbePacer;

// One step's flows: each NIC to `peers` NICs of its rail in other SUs (a ring shifted
// past its own SU, so each NIC receives about as many connections as it sends),
// `per_connection` flows each, source ports from next_port (per NIC), ids from next_id.
std::vector<PlannedFlow> plan_cross_su(const SuFabric& f, const std::vector<FabricNic>& nics, int peers,
                                       int per_connection, int& next_id, std::vector<uint16_t>& next_port);

// One step, judged (pure): its flows with their paths and what they moved.
struct EcmpStep {
  int per_connection = 0, connections = 0, flows = 0, traced = 0;  // traced: reached, spine known
  double bytes_per_flow = 0;
  double max_over_mean = 0;  // flows per uplink, over the uplinks of the leaves that send
  int uplinks_used = 0, uplinks = 0;
  double ideal_s = 0;      // every NIC and every leaf's uplinks pooled: a perfect spread
  double predicted_s = 0;  // the traced paths, max-min fair (fabric/ecmp_model.h)
  double measured_s = 0;   // the last flow's last byte; 0: not every flow completed
  double total_bytes = 0;
  double fraction(double s) const { return s > 0 ? ideal_s / s : 0; }
};

EcmpStep judge_ecmp_step(const SuFabric& f, const std::vector<FabricNic>& nics, const std::vector<double>& nic_gbps,
                         int per_connection, const std::vector<PlannedFlow>& flows, const std::vector<FlowPath>& paths,
                         double bytes_per_flow, double measured_s);

// The leaves whose flows of one connection always took one spine, over every step with
// 2 or more flows per connection, where that would happen by chance under an L4 hash
// with probability below 1e-3: WARN findings naming the leaf.
std::vector<Finding> ports_ignored(const SuFabric& f, const std::vector<FabricNic>& nics,
                                   const std::vector<PlannedFlow>& flows, const std::vector<FlowPath>& paths);

// The smallest flows per connection whose fraction of the ideal is 0.9 or more (-1: none).
int smallest_reaching(const std::vector<EcmpStep>& steps, bool predicted, double fraction = 0.9);

// Runs the sweep (collective: every rank calls it) with the listener this rank's flows
// arrive on (nullptr: it has no NIC in the fabric). Appends its printed lines to `lines`,
// its findings to `findings`; returns the results' "ecmp_sweep" object.
nlohmann::json run_ecmp_sweep(RunContext& ctx, const SuConfig& c, const std::vector<FabricNic>& nics,
                              FlowListener* listener, ProbePacer& pacer, std::vector<std::string>& lines,
                              std::vector<Finding>& findings);

}  // namespace railbench
