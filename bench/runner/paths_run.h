// --paths N: before it measures, every rank learns the switch path of each IP flow its
// transport opened to the next N ranks (Transport::network_flows: a RoCE v2 queue pair
// is UDP from its own source port to 4791), by TTL-limited probes that carry the flow's
// own addresses and ports (lib/observe/flow_trace.h). The switches' ECMP hashes those
// fields, so a probe takes the queue pair's path, and the hop where its TTL runs out
// answers. A slow pair can then be laid beside the spines its queue pairs crossed.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/runtime/bootstrap.h"
#include "lib/transport/transport.h"

namespace railbench {

// Each rank's peers for --paths N: the next N ranks after it, wrapping, itself left out.
std::vector<int> paths_peers(int rank, int world_size, int n);

// Probes per second one rank may send when `world_size` ranks trace at once and a switch
// should be asked at most `switch_rate` times a second (its CPU polices ICMP): the worst
// case, every rank behind one switch, a trace asking each of about three hops once.
double paths_probe_rate(double switch_rate, int world_size);

// This rank's flows that --paths N traces: those to paths_peers(), not to its own address.
std::vector<NetworkFlow> paths_flows(const Transport& t, int n);
// "# paths: tracing 16 flow(s) a rank at 100.0 probes/s a rank: about 2 s".
std::string paths_plan_line(size_t flows, double rate);

struct PathsResult {
  nlohmann::json flows;            // rank 0: every rank's traced flows, rank order; elsewhere []
  std::vector<std::string> lines;  // rank 0: what to print
};

// Throws UsageError when the transport knows none of its flows' headers (-t ofi,
// InfiniBand, shared memory): run it under RunContext::agree, before the trace.
void check_paths_supported(const Transport& t);

// Collective: every rank calls it after the transport connected, with its paths_flows()
// and the paths_probe_rate() a rank. `rail_names` names each rail in the lines.
PathsResult trace_transport_paths(const Transport& t, Bootstrap& b, const std::vector<NetworkFlow>& flows, double rate,
                                  const std::vector<std::string>& rail_names);

}  // namespace railbench
