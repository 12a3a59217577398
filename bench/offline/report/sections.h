// What the report's sections share: the run they draw, the header every run gets and
// helpers. Internal to bench/offline/report: render_report (page.cc) is the entry point,
// and the sections themselves are in kind_sections.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/kinds/result_kind.h"
#include "bench/offline/report/kind_sections.h"
#include "bench/offline/report/report.h"

namespace railbench::report {

struct RunContext {
  const RunDocument& run;
  const RunDocument* baseline;  // the same command's baseline, or null
  const ReportOptions& options;
  std::string id;  // prefix of every HTML id in this run's section ("run1")
};

std::string run_header(const RunContext& ctx);
// The document's result kind; UsageError naming `path` and the kinds report draws when
// its "command" has no report section (load.cc).
const ResultKind& report_kind(const nlohmann::json& doc, const std::string& path);

// Helpers the sections share (runs.cc).
// The results entry at `bytes` (0: the largest); `note` says when another was taken.
const nlohmann::json* entry_at_size(const nlohmann::json& results, uint64_t bytes, std::string& note);
// The entry of `results` whose "bytes" (and, when given, other key) equals this one's.
const nlohmann::json* same_size(const nlohmann::json& results, uint64_t bytes);
// Per rank "r3 node02" labels and where each new host begins (for matrix group lines).
std::vector<std::string> rank_labels(const nlohmann::json& world, int ranks);
std::vector<int> host_starts(const nlohmann::json& world, int ranks);
// "+4.1%" / "-23%" for now against base; "" when either is missing.
std::string change(double now, double base);
// A summary's field (p50, p99, p99_9, ...) or NaN.
double stat(const nlohmann::json& summary, const char* field);
// The run's --timeline (timeline.cc): "" when it has none.
std::string timeline_section(const RunContext& ctx);
// report --db: the things' histories from the run store (history.cc); "" without --db.
std::string history_section(const ReportOptions& options);
// Reads the timeline file the results name, beside the results file if moved (load.cc).
void attach_timeline(RunDocument& run);

}  // namespace railbench::report
