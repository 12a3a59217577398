// validate's burn-in (--duration / --cycles): phase 2, every node pair on every rail,
// once per window. Each link's window figure is the median, over its pair tests in that
// window, of their effective rate: the bytes the bandwidth streams moved over the seconds
// the streams took plus the longest round trip of its ping-pong (PairResult's test_s),
// so a link that stalls in a test, not only in its median stream window, shows in that
// window; the median over its partners keeps a partner's stall off it. A pair test that
// did not finish counts 0. A window in which the link's NIC counted a link down is low
// whatever its figure (flag_link_downs): a flap between two tests slows none of them.
#pragma once

#include <string>
#include <vector>

#include "bench/commands/validate/inventory.h"
#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"
#include "bench/runner/burn_in.h"

namespace railbench {

// The figure of every link (node, rail) that took part in `window`'s rail pair tests.
// Returns the window's line: "links 0.031 .. 0.045 GB/s, lowest node02 rail1".
std::string log_rail_window(BurnInLog& log, const SuConfig& c, const std::vector<std::string>& node_names,
                            const std::vector<PairResult>& window);

// Flags the current window of every link whose NIC counted a link down between `from`
// and `to` (each link's counters [node][rail], read before and after the window).
void flag_link_downs(BurnInLog& log, const std::vector<std::string>& node_names,
                     const std::vector<std::vector<LinkCounters>>& from,
                     const std::vector<std::vector<LinkCounters>>& to);

// A FAIL finding (kind intermittent) for each link whose windows fell below the rail's
// median only some of the time: "node02 rail1 (leaf1): 3 of 12 windows below 80% ...".
std::vector<Finding> burn_in_findings(const BurnInLog& log, const SuConfig& c,
                                      const std::vector<std::string>& node_names);

}  // namespace railbench
