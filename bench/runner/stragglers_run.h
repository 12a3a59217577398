// The end of a run that recorded stragglers (lib/observe/straggler_recording.h), the same
// for every command: rank 0 analyses what was collected, prints the blame table and
// writes the results' "stragglers" section.
#pragma once

#include <string>
#include <vector>

#include "bench/runner/results_run.h"
#include "bench/runner/run_context.h"
#include "lib/observe/straggler_recording.h"

namespace railbench {

// Rank 0 only (no communication): `node_of_rank` names each rank's node in the tables.
// Should the analysis fail, the figures already written stay and the section says why.
void write_stragglers(RunContext& ctx, ResultsRun& results, const StragglerRecording& recording,
                      const std::vector<std::string>& node_of_rank, const StragglerThreshold& threshold);

}  // namespace railbench
