// --csv: the rows of a results document (lib/results/results.h), one table per command, for
// spreadsheets and pandas. Each command's result kind (bench/kinds/result_kind.h) names
// its table among those below. Every row is derived from the same JSON document that --json
// writes, so the two never disagree; the file is rewritten with the JSON after every size.
//   sendrecv                           one row per size x pair x rail
//   allreduce, allgather, reducescatter one row per size x placement (out_of_place, in_place)
//   alltoall                           the same, plus one row per size x link src -> dst
//                                      (column "row": "collective" or "link")
//   kvcache                            one row per token count x mode
//   congestion                         one row per victim placement x metric x aggressor
//                                      (figures in the row's "unit": us or GB/s)
//   validate                           one row per link (node x rail): inventory, figures, verdict
// Column names carry their unit: _us microseconds, _gbps GB/s (1e9 bytes/s, as in the JSON),
// _gbit_s Gb/s (line rates and port speeds), bytes in bytes. A distribution (a JSON
// summary) becomes NAME_min, _p50, _p90, _p99, _p99_9, _max, _mean, _stdev, each with its unit.
#pragma once

#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "lib/core/csv.h"

namespace railbench {

CsvTable sendrecv_csv(const nlohmann::json& doc);
CsvTable collective_csv(const nlohmann::json& doc);  // allreduce, allgather, reducescatter
CsvTable alltoall_csv(const nlohmann::json& doc);
CsvTable kvcache_csv(const nlohmann::json& doc);
// workload: one row per iteration or window of iterations (step, exposed, compute, time per group kind).
CsvTable workload_csv(const nlohmann::json& doc);
CsvTable congestion_csv(const nlohmann::json& doc);
CsvTable validate_csv(const nlohmann::json& doc);

// validate's findings per link, keyed by (node index, rail) as the findings name them
// (node index: the order nodes first appear in the inventory).
struct LinkVerdict {
  std::string verdict;  // FAIL, WARN, PASS, or empty (not measured, nothing found)
  std::string kinds;    // the findings' kinds, ';' between them
};
std::map<std::pair<int, int>, LinkVerdict> validate_link_verdicts(const nlohmann::json& doc);

// The table of the document's result kind (its "command"); std::invalid_argument for a
// command whose kind has none.
CsvTable results_csv(const nlohmann::json& doc);
// results_csv as text (lib/core/csv.h's to_csv), what ResultsFile writes beside the JSON.
std::string results_csv_text(const nlohmann::json& doc);

}  // namespace railbench
