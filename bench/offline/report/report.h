// railbench report: results files (--json of any command) -> one self-contained HTML
// page. Pure: documents in, a string out; the subcommand (bench/offline/report/cmd_report.cc) reads
// the files and writes the page. Charts are inline SVG generated here, so the page
// needs no network, no script library and prints as it looks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/offline/report/matrix_store.h"
#include "lib/observe/timeline.h"
#include "lib/store/store.h"

namespace railbench::report {

// One results document and the file it came from (named in the page and in errors).
struct RunDocument {
  std::string path;
  nlohmann::json doc;
  // The run's --timeline file, read by load_run when the results name one and it is
  // there; otherwise a note saying where it was expected.
  std::shared_ptr<const TimelineData> timeline;
  std::string timeline_note;
  // A large validate file's matrices, read as floats (null in `doc`); null for a file
  // read whole into `doc`.
  std::shared_ptr<const MatrixStore> matrices;
};

// Reads and checks one results file (lib/results/read.h), then its kind: throws
// UsageError naming the file and the problem (missing, not JSON, not a railbench results
// document, a schema version this build does not read, a command whose result kind has
// no report section, naming those that have one).
RunDocument load_run(const std::string& path);

// Checks an already parsed document the same way (`path` only names it in errors).
void check_document(const nlohmann::json& doc, const std::string& path);

struct ReportOptions {
  // The size at which pair and step-time matrices are drawn; 0: the largest measured.
  uint64_t matrix_bytes = 0;
  // A link or a size is marked as a regression when it is below (1 - this) of the
  // baseline's figure (bandwidth) or above (1 + this) (time).
  double regression_fraction = 0.10;
  // validate: how many links the worst-links table lists.
  int worst_links = 20;
  // report --db: the history section, each thing's runs in the run store (oldest first),
  // drawn after the runs; none when `history_store` is empty.
  std::string history_store;
  std::vector<std::pair<store::ThingRef, std::vector<store::HistoryRun>>> history;
};

// The page: one section per run, in the order given; each run is compared with the
// first baseline of the same command, if any.
std::string render_report(const std::vector<RunDocument>& runs, const std::vector<RunDocument>& baselines,
                          const ReportOptions& options = {});

}  // namespace railbench::report
