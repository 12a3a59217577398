// --db [PATH]: a measuring run's results into the run store (lib/store/store.h) when it
// ends, from rank 0. The results file stays the record of truth: a store that cannot be
// written changes neither the file nor the run's exit code, and says in one line how to
// ingest the file later.
#pragma once

#include <string>

#include "bench/runner/options.h"

namespace railbench {

// Before the run: with --db and no --json, the results file goes beside the store, as
// <store folder>/results/<command>-<UTC time>-<pid>.json, so the store has a file to be
// built from. Returns the store's path ("" without --db). Throws UsageError where no
// store path can be made (no --db PATH, RAILBENCH_DB, XDG_DATA_HOME or HOME).
std::string prepare_run_store(CommonOptions& options, const std::string& command);

// After the run, whatever its ending but a signal: on the rank that wrote the results
// file, ingests it. Prints one line either way; never throws.
void ingest_into_run_store(const CommonOptions& options, const std::string& store);

}  // namespace railbench
