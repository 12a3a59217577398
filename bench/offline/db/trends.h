// What `railbench db trends` finds in a store's series (pure: no database here).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/store/store.h"

namespace railbench::db {

struct TrendOptions {
  int window = 20;           // the last runs of a thing that are judged
  int min_runs = 4;          // fewer runs: no trend is judged
  double noise_k = 3;        // the least z (slope over its standard error) a drift needs
  double min_change = 0.02;  // ... and this fraction of the thing's level
};

struct Drift {
  store::ThingRef thing;
  std::string metric, unit;
  int runs = 0;                           // in the window
  double first = 0, last = 0;             // the fitted line's values at the window's ends
  double per_week = 0;                    // the fitted slope, in the metric's unit per week
  double per_run = 0;                     // ... per run
  double noise = 0;                       // the run-to-run noise it is judged against
  double change = 0;                      // (last - first) / first
  std::optional<double> crosses_in_days;  // when the line reaches `limit`, if one is known and ahead
};

// Things whose metric moved the wrong way over their last window of runs, each of which
// passed (no FAIL finding named the thing): the Theil-Sen slope over the runs' order is more
// than z standard errors from flat, the error taken with the larger of the window's own
// residual noise (scaled MAD) and the median run-to-run noise of every thing of the metric,
// and z large enough that a fleet without drift is named by chance in 1 call of 100
// (Bonferroni over the things judged; at least noise_k); and it moved by more than
// min_change of its level.
// `higher_better`: which way is wrong. `limit`: the value a finding starts at, if known.
std::vector<Drift> drifting(const std::vector<store::Series>& series, bool higher_better, std::optional<double> limit,
                            const TrendOptions& opt);

struct Flaky {
  store::ThingRef thing;
  int runs = 0, failed = 0, changes = 0;
  std::string pattern;  // oldest first: "PFPFP"
};
// Things that alternate between passing and failing over their last window of runs: at
// least two of each and three changes.
std::vector<Flaky> flaky(const std::vector<store::Series>& series, const TrendOptions& opt);

// ▁▂▃▄▅▆▇█ for the values, scaled between their min and max.
std::string sparkline(const std::vector<double>& values);

}  // namespace railbench::db
