// The cabling check of `validate`: does each rail's NIC reach the leaf the SU config
// says it must (GPU i's NIC to leaf i)? A swapped pair of cables passes a link-up check
// and, left to the pair tests, reads as two unreachable links, which sends a technician
// to replace two good cables. Each port asks at layer 2 (ARP) for every other node's
// address on every rail and notes whose port answered; the rails whose ports answer are
// the leaf the cable really goes to. The judgement is kept apart from the probe
// (bench/commands/validate/arp_probe.h) so it is tested on reach matrices alone.
#pragma once

#include <string>
#include <vector>

#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"

namespace railbench {

// What one port heard: answered[b] is how many other nodes' rail-b ports answered for
// their own address (their own MAC, so a host answering for all its addresses on
// every port, Linux's default, is not mistaken for a cable to that rail's leaf).
struct PortReach {
  bool probed = false;        // the probe ran on this port (false: skipped, or not this run's)
  std::vector<int> answered;  // index: rail of the answering port
};
using ReachMatrix = std::vector<std::vector<PortReach>>;  // [node][rail]

// FAIL findings (kind cabling, blaming the node): two ports of one node that each reach
// only the other's leaf are swapped ("rail0 and rail1 appear swapped"); one port that
// reaches only another rail's leaf is cabled to that leaf. A port that reaches nothing
// is not judged here: a dead link is the link checks' to name. A port that reaches its
// own rail's nodes is cabled right, whatever else it hears.
std::vector<Finding> judge_cabling(const SuConfig& config, const std::vector<std::string>& node_names,
                                   const ReachMatrix& reach);

// The rail's leaf as the findings name it: its config name, else "rail B's leaf".
std::string leaf_name(const SuConfig& config, int rail);

}  // namespace railbench
