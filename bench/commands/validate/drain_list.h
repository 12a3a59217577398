// From findings to action: which nodes a scheduler should drain, and which links are
// suspect but cannot be pinned on one node. A node is bad when a FAIL finding is its
// own: its NIC missing, down or mis-set (inventory), or one of its links confirmed bad,
// unreachable from partners that reach everyone else, or flapping by its own counters.
// A FAIL whose fault may lie at either end (no good partner left to re-test against, as
// in a two-node run) or on the path between (cross-rail) drains nothing: it is listed
// with its ends. WARN findings, collectives and config nodes no rank ran on drain nothing.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/validate/verdict.h"

namespace railbench {

struct SuspectLink {
  std::string subject;  // the finding's subject: "node01 rail0 (leaf0)"
  FindingKind kind = FindingKind::unreachable;
  std::vector<std::string> ends;  // the nodes the fault may lie with, in node order
  std::string reason;
  std::string code;  // the finding's reason code (reason_codes.h)
};

struct BadNodes {
  std::vector<std::string> hosts;                           // in hostlist order (what expanding `hostlist` gives)
  std::string hostlist;                                     // compressed: "gpu[003,017-018]"; "" when none
  std::map<std::string, std::vector<std::string>> reasons;  // host -> "kind subject: reason" per finding
  std::map<std::string, std::vector<std::string>> codes;    // host -> the reason code of each, in that order
  std::vector<SuspectLink> suspect_links;
  // Fabric findings (a leaf-spine link): the switch ports to take out of service, never
  // a host. "su1-leaf0 port spine2 / spine2 port s1l0 (su1-leaf0-spine2): reason".
  std::vector<std::string> switch_ports;
  std::vector<std::string> switch_port_codes;  // the reason code of each
  std::vector<std::string> switch_port_links;  // the link of each ("su1-leaf0-spine2"; "" for none)
};

BadNodes find_bad_nodes(const std::vector<Finding>& findings, const std::vector<std::string>& node_names);

// {"hosts": [...], "hostlist": "...", "reasons": {host: [...]}, "codes": {host: [...]},
// "suspect_links": [{"subject", "kind", "code", "ends", "reason"}], "switch_ports": [...],
// "switch_port_codes": [...], "switch_port_links": [...]}: the results file's "bad_nodes".
void to_json(nlohmann::json& j, const BadNodes& b);

// The --drain-list file of rank 0 (an empty path on the other ranks: nothing is written).
// It is emptied when the run starts, so a list from an earlier run is never mistaken for
// this one's, and rewritten whenever findings are added, so a run that ends early still
// leaves the nodes found by then. Its text: the hostlist and a newline, or nothing at all
// (0 bytes) when no node is bad, so `test -s FILE` guards a scheduler command. A device
// or fifo (/dev/stdout) gets the text once, at the end.
class DrainListFile {
 public:
  explicit DrainListFile(std::string path);
  void write(const BadNodes& bad, bool final);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace railbench
