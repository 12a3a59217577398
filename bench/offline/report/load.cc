#include <fmt/format.h>

#include "bench/kinds/result_kind.h"
#include "bench/offline/report/report.h"
#include "bench/offline/report/sections.h"
#include "lib/core/errors.h"
#include "lib/results/read.h"

namespace railbench::report {

// A results file of a command without a report section is refused, so a newer
// railbench's new command is named instead of rendered as an empty page.
const ResultKind& report_kind(const nlohmann::json& doc, const std::string& path) {
  const std::string command = doc.value("command", "");
  const ResultKind* kind = find_result_kind(command, ResultPart::report_section);
  if (kind == nullptr)
    throw UsageError(fmt::format("{}: unknown command '{}' in the results; report draws {}", path, command,
                                 result_kind_names(ResultPart::report_section)));
  return *kind;
}

void check_document(const nlohmann::json& doc, const std::string& path) {
  check_results_document(doc, path);
  report_kind(doc, path);
}

RunDocument load_run(const std::string& path) {
  RunDocument run{path, read_results_file(path)};
  report_kind(run.doc, path);
  attach_timeline(run);
  return run;
}

}  // namespace railbench::report
