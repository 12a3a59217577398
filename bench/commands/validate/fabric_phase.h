// Phase 1c, after the cabling check and before the pair tests, when the config has a
// fabric: validate looks inside the leaf-spine fabric. For every pair of leaves it
// opens TCP flows between their NICs with chosen source ports, learns each flow's
// switch path by the flow's own TTL-limited SYNs (lib/observe/flow_trace.h), adds flows
// until every spine is seen from every leaf (or says which cannot be reached), measures
// each flow alone on its path (rounds of flows that share no NIC and no fabric link),
// and names the leaf-spine links that explain the bad flows (fabric/localize.h). A NIC
// whose flows are bad on every path is the host's: left to the pair tests. A fabric
// finding names a switch link and both its ports and drains no host.
#pragma once

#include <string>
#include <vector>

#include "bench/commands/validate/rank_layout.h"
#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"
#include "bench/runner/results_run.h"
#include "bench/runner/run_context.h"

namespace railbench {

// Runs the phase on every rank (collective: every rank calls it). `port` is this rank's
// Ethernet interface ("" when it has none: it opens no flows, and says why in `why`).
// Returns the findings (the same on every rank) and sets `links_at_fault` to the
// leaf-spine links a FAIL finding names (indices into c.fabric.links), which the pair
// tests' verdict reads; the "fabric" section of the results is written as soon as it is
// measured.
std::vector<Finding> run_fabric_phase(RunContext& ctx, const SuConfig& c, const SuLayout& L, const std::string& port,
                                      const std::string& why, ResultsRun& results, std::vector<int>& links_at_fault);

}  // namespace railbench
