// The fabric phase's judgment (pure, the same on every rank): each flow's health from
// its figures, then the findings: leaf-spine links the bad flows point at
// (fabric/localize.h), links no flow could cross (down, or a route withdrawn), and a
// config that disagrees with what the traces saw.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/validate/fabric/localize.h"
#include "bench/commands/validate/fabric_flows.h"
#include "bench/commands/validate/verdict.h"

namespace railbench {

// One flow, traced and measured.
struct FabricFlow {
  PlannedFlow plan;
  FlowTrace trace;
  FlowPath path;
  bool skipped = false;    // never opened (its source port was taken): no evidence either way
  bool completed = false;  // every byte arrived by its deadline
  double gbps = 0;         // at the receiver
  unsigned retransmits = 0;
  double rtt_us = 0;
};

// What a healthy flow carries: the median of the completed flows' rates (`carried`),
// never above `expected_gbps`, the line rate. One TCP flow often cannot fill a path (a
// 400G NIC's single stream, a host whose cores carry the packets): judged against the
// line rate every flow would be slow and no link would stand out; judged against its
// peers a link still does, by how far its flows fall below the others. With fewer than
// 8 flows there are too few to tell: `expected_gbps`.
double healthy_flow_gbps(std::vector<double> carried, double expected_gbps);

// Health against `expected_gbps` (what one healthy flow alone on its path carries: the
// line rate, or the median flow where one flow cannot fill a path).
std::vector<FlowObservation> observe_flows(const SuFabric& f, const std::vector<FabricFlow>& flows,
                                           double expected_gbps);

struct FabricJudgment {
  std::vector<Finding> findings;
  std::vector<std::string> lines;  // what the run prints under the phase's line
  nlohmann::json links = nlohmann::json::array(), ecmp = nlohmann::json::array();
  nlohmann::json host_side = nlohmann::json::array();  // NICs bad on every path: "node03 rail1"
  std::vector<int> links_at_fault;  // the links a FAIL finding names (blamed, down, withdrawn), by index
};

// Source ports probed at the spine hop only, beyond the flows, when a leaf's flows
// missed a spine (fabric_phase.cc's search): per leaf, how many out of it and into it
// had a spine answer. A link that they missed too is missed by more than the flows, which
// the down and withdrawn findings count.
struct FabricSearch {
  std::vector<int> out, in;  // by leaf; empty: no search
};

FabricJudgment judge_fabric(const SuFabric& f, const std::vector<FabricNic>& nics, const std::vector<FabricFlow>& flows,
                            const std::vector<FlowObservation>& observed, double expected_gbps,
                            const FabricSearch& search = {});

}  // namespace railbench
