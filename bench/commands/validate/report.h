// The outputs of `validate`: the summary table (worst first), the per-rail lines and
// the JSON sections (inventory, per-rail pair matrices, findings).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/validate/inventory.h"
#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"
#include "lib/results/json_stream.h"

namespace railbench {

// The inventory of every (node, slot) against the config. `blocking` is set when a NIC
// is missing or its port is down: traffic cannot run on it.
std::vector<Finding> judge_inventory(const SuConfig& config, const std::vector<std::string>& node_names,
                                     const std::vector<std::vector<NicReport>>& nics, bool& blocking);

// Per rail: matrices indexed [a][b] over the run's nodes (a -> b GB/s, both ways GB/s,
// latency p50/p99/p99.9 us; null where not measured), and the link figures.
nlohmann::json rail_matrices(const SuConfig& config, const std::vector<std::string>& node_names,
                             const std::vector<PairResult>& rail, const std::vector<std::vector<LinkStats>>& stats);

// rail_matrices for the results file: the rails without their matrices (empty arrays), and
// each matrix ("/rails/R/bw_gbs", ...) as rows made from `rail` when the file is written
// (ResultsFile::set_with_arrays), the same figures: a 1,024 x 8 run's 40 M figures
// would take GBs as JSON values.
struct StreamedRails {
  nlohmann::json rails;
  StreamedArrays matrices;
};
StreamedRails rail_matrices_streamed(const SuConfig& config, const std::vector<std::string>& node_names,
                                     std::shared_ptr<const std::vector<PairResult>> rail,
                                     const std::vector<std::vector<LinkStats>>& stats);

// Lines of the summary table.
std::vector<std::string> summary_lines(const SuConfig& config, const std::vector<std::string>& node_names,
                                       const std::vector<Finding>& findings,
                                       const std::vector<std::vector<LinkStats>>& stats);

}  // namespace railbench
