// One measuring run's results, from the header to the verdict, the same for every command:
// the results file (--json, rank 0) with its --csv rows, fabric counters around each
// measurement, burn-in windows, and at the end every rank's channel counters, the
// --timeline, the verdict and rank 0's "# results: PATH" line. A command adds what it
// measured and never writes the epilogue itself. An error during the measurement marks
// the file failed with its message and keeps what was added; any other way out before
// finish() (an unexpected exception, a signal) is marked failed by ResultsFile itself.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/runner/burn_in.h"
#include "bench/runner/run_context.h"
#include "lib/results/results.h"

namespace railbench {

// What a command's epilogue holds besides the verdict.
struct ResultsEpilogue {
  bool channels = true;  // every rank's per-channel counters ("channels"): needs the open transport
};

class ResultsRun {
 public:
  // Opens the results file with `ctx`'s header around `config`, and the --csv beside it:
  // rank 0 writes them, the other ranks keep the document in memory. No communication.
  ResultsRun(RunContext& ctx, nlohmann::json config, ResultsEpilogue epilogue = {});
  ResultsRun(const ResultsRun&) = delete;
  ResultsRun& operator=(const ResultsRun&) = delete;

  // Runs the measurement. A railbench Error thrown from it marks the run failed with its
  // message (what was added so far stays) and goes on to the caller.
  void measure(const std::function<void()>& body);

  // One measurement into "results" (rewrites the file and the CSV).
  void add(nlohmann::json entry) { file_.add(std::move(entry)); }
  // A top-level field ("what_if", "burn_in", ...); rewrites the file.
  void set(const std::string& key, nlohmann::json value) { file_.set(key, std::move(value)); }
  // A top-level array made one element at a time as the file is written (ResultsFile::set_array).
  void set_array(const std::string& key, size_t count, std::function<nlohmann::json(size_t)> element) {
    file_.set_array(key, count, std::move(element));
  }
  void set_with_arrays(const std::string& key, nlohmann::json value, StreamedArrays arrays) {
    file_.set_with_arrays(key, std::move(value), std::move(arrays));
  }
  const nlohmann::json& doc() const { return file_.doc(); }

  // Fabric counters around one measurement (bench/runner/fabric_counters.h): begin
  // snapshots this rank's rails; add_counters (collective) puts every rank's deltas into
  // `entry` as "counters" when any moved and --no-counters is off.
  void counters_begin() { ctx_.counters_begin(); }
  void add_counters(nlohmann::json& entry);

  // Burn-in (--duration / --cycles, bench/runner/burn_in.h): runs `pass` once per window
  // (once when `plan` is off; the first window's clock says windows_started() == 1),
  // each pass adding its figures to `log`. After each window `window_done(clock,
  // rewrite_due)` may print its line; the "burn_in" field is rewritten when due and after
  // the last window. Collective: every rank follows rank 0's clock.
  void burn_in(const BurnInPlan& plan, BurnInLog& log, const std::function<void(const BurnInClock&)>& pass,
               const std::function<void(const BurnInClock&, bool rewrite_due)>& window_done = {});

  // The epilogue, collective: "channels" (unless the epilogue leaves them out), the
  // --timeline file and its summary, the verdict "complete" and rank 0's "# results:
  // PATH". An error on the way marks the run failed before it goes on.
  void finish();

 private:
  RunContext& ctx_;
  ResultsEpilogue epilogue_;
  ResultsFile file_;
};

}  // namespace railbench
