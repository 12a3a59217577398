// Result kinds: what the readers of a results file make of it, by its "command". A kind
// is a name and its parts: the --csv rows (bench/runner/results_csv.h), the figures
// `railbench compare` compares (bench/offline/compare/figures.h) and the section
// `railbench report` draws (bench/offline/report/kind_sections.h). Each command family
// registers its kinds in one file in its own folder (bench/commands/<family>/*_kind*.cc)
// from a static initializer; the readers look a kind up by name and list none by hand.
//
// This header sits below bench/runner and bench/offline, which call the parts, so it
// only declares the types their arguments use; the parts are defined where they are.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/csv.h"
#include "lib/results/metrics_text.h"

namespace railbench {

namespace compare {
struct Figure;  // bench/offline/compare/figures.h
}
namespace report {
struct RunContext;  // bench/offline/report/sections.h
}

struct ResultKind {
  std::string name;  // the results' "command": "sendrecv", "allreduce", ...
  // Each part may be null: that reader then refuses the file, naming the kinds it reads.
  // --csv: one table of the document's rows.
  CsvTable (*csv)(const nlohmann::json& doc) = nullptr;
  // compare: appends every figure of the document, each with its band of k (robust)
  // standard deviations; may throw nlohmann::json::exception for a missing field.
  void (*figures)(const nlohmann::json& doc, double k, std::vector<compare::Figure>& out) = nullptr;
  // report: the run's section after its header (HTML); may throw
  // nlohmann::json::exception for a field of an unexpected type.
  std::string (*report_section)(const report::RunContext& ctx) = nullptr;
  // export and --prometheus: the document's series (bench/runner/results_metrics.h),
  // beside the run's own (lib/results/metrics_text.h's run_metrics).
  void (*metrics)(const nlohmann::json& doc, const MetricsOptions& options, MetricsText& out) = nullptr;
};

// Called from a static initializer; returns true so it can initialize a namespace-scope
// constant. A second kind of the same name is a bug: std::logic_error.
bool register_result_kind(ResultKind kind);

// The part a reader needs.
enum class ResultPart { csv, figures, report_section, metrics };

// The kind called `name` when it has `part`, else null.
const ResultKind* find_result_kind(const std::string& name, ResultPart part);

// The names of the kinds that have `part`, sorted, ", " between them: for the error
// that names what a reader does read.
std::string result_kind_names(ResultPart part);

// The document as metrics: the run's series and its kind's. Throws UsageError naming
// `path` and the kinds that have metrics when its command has none.
std::string results_metrics_text(const nlohmann::json& doc, const MetricsOptions& options, MetricsFormat format,
                                 const std::string& path);

}  // namespace railbench
