// The judgement of `railbench compare`: each figure of the new run against the same
// figure of the baseline. A change is a regression only when it is beyond the threshold
// AND beyond the noise both runs show (their bands do not overlap), so rerunning the same
// healthy job does not report one; the same rule the other way is an improvement.
#pragma once

#include <string>
#include <vector>

#include "bench/offline/compare/figures.h"

namespace railbench::compare {

enum class Verdict {
  regression,   // worse by more than the threshold, and the bands do not overlap
  noise,        // beyond the threshold, but within the noise the runs show
  same,         // within the threshold
  improvement,  // better by more than the threshold, and the bands do not overlap
};
const char* to_string(Verdict v);  // "regression", "noise", "same", "improvement"

struct DiffRow {
  std::string subject, metric, unit;
  bool higher_better = true;
  double old_value = 0, new_value = 0;
  double old_lo = 0, old_hi = 0, new_lo = 0, new_hi = 0;
  double change = 0;  // (new - old) / old; 0 when old is 0
  // How much worse, as a fraction (change with the sign turned so that worse is
  // positive): the sort key, worst first.
  double worse = 0;
  Verdict verdict = Verdict::same;
};

struct Diff {
  std::vector<DiffRow> rows;                     // worst first: regressions, noise, same, improvements
  std::vector<std::string> only_base, only_new;  // keys found in one run only
  int count(Verdict v) const;
};

// `threshold` is a fraction (0.05 for 5%).
DiffRow judge(const Figure& old_f, const Figure& new_f, double threshold);
Diff diff(const std::vector<Figure>& base, const std::vector<Figure>& next, double threshold);

// "5%", "5", "0.5%": the threshold as a fraction. Throws UsageError for anything else
// or a value outside (0, 1000%].
double parse_threshold(const std::string& text);

}  // namespace railbench::compare
