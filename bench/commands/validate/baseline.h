// validate --baseline: each link judged against its own accepted figure, from the
// results file of an earlier validate run of the same SU that passed. A link well
// below it (thresholds.baseline_bw_below) is a finding even when it still passes the
// absolute threshold: what changed since acceptance, link by link.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"

namespace railbench {

struct AcceptedLink {
  double tx = 0, rx = 0;  // GB/s, the link's medians over its partners in the baseline
};

struct ValidateBaseline {
  std::string path;
  std::map<std::pair<std::string, int>, AcceptedLink> links;  // (node name, rail)
};

// Reads a validate results file as the accepted figures for `config`'s SU. Throws
// UsageError naming the file when it is not a validate run that passed, or has another
// number of rails.
ValidateBaseline load_validate_baseline(const std::string& path, const SuConfig& config);
ValidateBaseline validate_baseline_from_json(const nlohmann::json& doc, const std::string& path,
                                             const SuConfig& config);

// Adds a FAIL finding (kind baseline) for each measured link whose sending or receiving
// GB/s (the worse, as a fraction of its accepted figure) is more than
// thresholds.baseline_bw_below under its rail's median fraction; a link that already has
// a finding gets the comparison added to it instead (and WARN becomes FAIL). A rail whose
// median fraction is itself that far below gets one WARN for the rail.
// Returns how many links had an accepted figure to be judged against.
int judge_against_baseline(const SuConfig& config, const std::vector<std::string>& node_names,
                           const std::vector<std::vector<LinkStats>>& stats, const ValidateBaseline& baseline,
                           std::vector<Finding>& findings);

}  // namespace railbench
