// The acceptance test itself, after the ranks are mapped onto the SU: inventory (no
// traffic), rail checks (every node pair on every rail, all rails at once), cross-rail
// spot checks, re-tests of suspects against a good partner, collectives over all ranks,
// then the verdict. Every phase's results go to the JSON file as soon as they exist,
// and a pair that stops answering is a finding, not a hang.
#pragma once

#include <string>

#include "bench/commands/validate/baseline.h"
#include "bench/commands/validate/fleet_history.h"
#include "bench/commands/validate/rank_layout.h"
#include "bench/commands/validate/su_config.h"
#include "bench/runner/burn_in.h"
#include "bench/runner/results_run.h"
#include "bench/runner/run_context.h"
#include "lib/results/results.h"

namespace railbench {

struct ValidateRun {
  std::string transport;  // what the ranks run over (config or -t)
  bool inventory_only = false;
  std::string drain_path;                      // --drain-list: the bad nodes as one hostlist, written by rank 0
  const ValidateBaseline* baseline = nullptr;  // --baseline: each link against its accepted figure
  const FleetHistory* history = nullptr;       // --db: each link against the run store's history
  BurnInPlan burn_in;                          // --duration / --cycles: phase 2 repeated in windows
  std::string note;                            // a line printed under the header (a check left out, and why)
  bool fabric_only = false;                    // --fabric-only: stop after the fabric phase
};

// Returns the exit code: 0 PASS, 1 FAIL, with the verdict and the epilogue written
// (ResultsRun::finish). Throws on an error that ends the run; what was measured by then
// is already in `results`, and the bad nodes found by then in the drain list.
int validate_phases(RunContext& ctx, const SuConfig& c, const SuLayout& L, const ValidateRun& run, ResultsRun& results);

}  // namespace railbench
