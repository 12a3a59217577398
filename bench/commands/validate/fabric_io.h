// What the fabric phase's steps (fabric_phase.cc: discovery and the flows measured one
// at a time; fabric_ecmp.cc: the all-to-all sweep) do alike on each rank: trace this
// rank's flows by their own SYNs and keep the connections, accept the flows it
// receives (each known by the id its first bytes carry), and pass traces between ranks.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/validate/fabric/flow_probe.h"
#include "bench/commands/validate/fabric_config.h"
#include "bench/commands/validate/fabric_flows.h"

namespace railbench {

// How long a rank waits for the connections of the flows it receives, after their traces.
inline constexpr auto kFlowAcceptDeadline = std::chrono::seconds(10);

// The sockets of this rank's flows, closed with their owner. `abort` closes them with
// a reset (no TIME_WAIT), for flows whose source ports are used again at once.
struct FlowSockets {
  std::map<int, int> out, in;  // flow id -> connected socket (this rank sends / receives)
  bool abort = false;
  FlowSockets() = default;
  FlowSockets(const FlowSockets&) = delete;
  FlowSockets& operator=(const FlowSockets&) = delete;
  ~FlowSockets();
};

nlohmann::json trace_json(int id, const FlowTrace& t);
FlowTrace trace_from_json(const nlohmann::json& j);

// Traces this rank's flows of `batch` (the ones it is the source of), several at once
// (each its own socket and source port; the pacer keeps the switches' rate). A flow
// that reaches its destination keeps its connection (in sockets.out), which first
// carries the flow's id. Returns this rank's traces (trace_json each).
nlohmann::json trace_mine(const std::vector<PlannedFlow>& batch, const std::vector<FabricNic>& nics, int me,
                          const FabricTests& t, ProbePacer& pacer, FlowSockets& sockets);

// Probes only: for each of this rank's flows of `batch` (the ones it is the source of),
// the address that answers at TTL 2 (a leaf-spine fabric's spine; "" when none did),
// one SYN each that dies there. Returns [{"id", "address"}].
nlohmann::json probe_spines_mine(const std::vector<PlannedFlow>& batch, const std::vector<FabricNic>& nics, int me,
                                 ProbePacer& pacer);

// Accepts connections until every id in `expected` has one (in sockets.in) or the
// deadline; a connection whose id is not expected is closed.
void accept_ids(FlowListener& listener, const std::set<int>& expected, std::chrono::steady_clock::time_point deadline,
                FlowSockets& sockets);

}  // namespace railbench
