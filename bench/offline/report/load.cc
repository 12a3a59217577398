#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "bench/kinds/result_kind.h"
#include "bench/offline/report/report.h"
#include "bench/offline/report/sections.h"
#include "lib/core/config_path.h"
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

namespace {

// Past this size a results file is a large SU's validate run: its matrices are read as
// floats (matrix_store.h), which is what keeps a 1,024 x 8 report to seconds.
constexpr uintmax_t kLargeFileBytes = 16ULL << 20;
// lib/results' limit: read_results_file names it.
constexpr uintmax_t kMaxFileBytes = 512ULL << 20;

RunDocument read_large(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text;
  text.resize(std::filesystem::file_size(path));
  if (!in.read(text.data(), static_cast<std::streamsize>(text.size())))
    throw UsageError(
        fmt::format("{}: cannot read the results file: give the file a railbench run wrote with --json", path));
  RunDocument run{path, {}};
  auto store = std::make_shared<MatrixStore>();
  try {
    parse_with_matrices(text, run.doc, *store);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("{}: not JSON ({}); give the file a railbench run wrote with --json", path,
                                 cut_for_error(e.what(), 200)));
  }
  check_results_document(run.doc, path);
  run.matrices = std::move(store);
  return run;
}

}  // namespace

RunDocument load_run(const std::string& path) {
  std::error_code ec;
  const uintmax_t bytes = std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
  RunDocument run = !ec && bytes > kLargeFileBytes && bytes <= kMaxFileBytes
                        ? read_large(path)
                        : RunDocument{path, read_results_file(path)};
  report_kind(run.doc, path);
  attach_timeline(run);
  return run;
}

}  // namespace railbench::report
