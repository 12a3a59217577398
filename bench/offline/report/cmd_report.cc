// railbench report: results files -> one self-contained HTML page (bench/report). Needs
// no ranks and no transport: it runs before any bootstrap, like `info`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/offline/report/report.h"
#include "lib/core/errors.h"
#include "lib/core/sizes.h"
#include "lib/store/store.h"

namespace railbench {

namespace {

struct ReportArgs {
  std::vector<std::string> runs;
  std::vector<std::string> baselines;
  std::string output;
  std::string size;
  std::string threshold = "10%";
  std::optional<std::string> db;     // --db [PATH]: add the history section from the run store
  std::vector<std::string> history;  // --history THING: the things it draws
};

// The things the history section draws when none is named: those the page's runs have
// findings on (a NIC, a link, a node), at most this many.
constexpr size_t kHistoryThings = 8;
constexpr int kHistoryRuns = 30;

// --db / --history: each thing's runs from the store, into `options`. Throws UsageError
// for a thing the store does not know, IoError for a store it cannot read.
void load_history(const ReportArgs& args, const std::vector<report::RunDocument>& runs,
                  report::ReportOptions& options) {
  if (!args.db && args.history.empty()) return;
  const std::string path = store::store_path(args.db.value_or(""));
  const store::Store s(path, store::Store::Mode::read);
  options.history_store = store::store_name(path);
  std::vector<store::ThingRef> things;
  for (const auto& name : args.history) {
    const auto found = s.find_things(name);
    if (found.empty())
      throw UsageError(fmt::format(
          "--history {}: the run store {} knows no such thing: name a node (node03), a NIC (node03:rail1), a pair "
          "link (node03:rail1-node07:rail1), a fabric link or a collective ('allreduce 1M'), as railbench history "
          "takes them",
          name, options.history_store));
    things.insert(things.end(), found.begin(), found.end());
  }
  if (args.history.empty()) {
    for (const auto& run : runs)
      for (const auto& f : store::rows_of(run.doc, run.path).findings)
        if (!f.thing_kind.empty() && things.size() < kHistoryThings &&
            std::none_of(things.begin(), things.end(), [&](const auto& t) { return t.name == f.thing; }))
          things.push_back({f.thing_kind, f.thing});
  }
  for (const auto& t : things) options.history.emplace_back(t, s.history(t, kHistoryRuns));
}

// "10%", "10" (percent) or "0.1" (a fraction below 1).
double parse_threshold(const std::string& text) {
  std::string t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  double v = NAN;
  try {
    size_t used = 0;
    v = std::stod(t, &used);
    if (used != t.size()) v = NAN;
  } catch (const std::exception&) {
  }
  if (!percent && v < 1) v *= 100;
  if (!(v > 0 && v < 100))
    throw UsageError(
        fmt::format("--threshold '{}': give a percentage above 0 and below 100, e.g. --threshold 10%", text));
  return v / 100;
}

// The page is written beside its name and renamed, so a reader never sees half a page.
void write_page(const std::string& path, const std::string& html) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw UsageError(fmt::format("-o '{}' is a directory: name a file, e.g. -o {}/report.html", path, path));
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw UsageError(
        fmt::format("-o '{}': the directory '{}' does not exist: create it (mkdir -p '{}') or name a "
                    "file in another",
                    path, dir.string(), dir.string()));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << html;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw UsageError(
          fmt::format("-o '{}': cannot write {} (no permission, or the disk is full): name a file "
                      "you can write",
                      path, tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UsageError(fmt::format("-o '{}': cannot replace it: name a file you can write", path));
  }
}

int run_report(const ReportArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  report::ReportOptions options;
  options.regression_fraction = parse_threshold(args.threshold);
  if (!args.size.empty()) options.matrix_bytes = parse_size(args.size);
  std::vector<report::RunDocument> runs, baselines;
  for (const auto& p : args.runs) runs.push_back(report::load_run(p));
  for (const auto& p : args.baselines) {
    baselines.push_back(report::load_run(p));
    const std::string command = baselines.back().doc.value("command", "");
    if (std::none_of(runs.begin(), runs.end(), [&](const auto& r) { return r.doc.value("command", "") == command; }))
      throw UsageError(
          fmt::format("--baseline {}: a {} run, but no run on the page is one: give the {} run's "
                      "results file too, or leave this baseline out",
                      p, command, command));
  }
  load_history(args, runs, options);
  const std::string html = report::render_report(runs, baselines, options);
  write_page(args.output, html);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("railbench report: wrote {} ({:.0f} KB) from {} run(s){} in {:.2f} s\n", args.output, html.size() / 1000.0,
             runs.size(), baselines.empty() ? "" : fmt::format(" against {} baseline(s)", baselines.size()), s);
  return 0;
}

const bool cmd_report_registered = register_subcommand(Subcommand{
    "report", "Results files (--json) as one self-contained HTML page: charts, heatmaps, findings, baselines", 65,
    [](CLI::App& sub, CommonOptions&) {
      auto args = std::make_shared<ReportArgs>();
      sub.add_option("runs", args->runs, "Results files written with --json (any command; several on one page)")
          ->required();
      sub.add_option("--baseline", args->baselines,
                     "A results file to compare with (repeat for several commands): dashed in every chart; "
                     "validate adds a per-link ratio heatmap")
          // One file per --baseline, so `--baseline B.json RUN.json` leaves RUN.json a run.
          ->allow_extra_args(false);
      sub.add_option("-o,--output", args->output, "The HTML file to write")->required();
      sub.add_option("--size", args->size, "Message size of the pair and step-time matrices (default: the largest)");
      sub.add_option("--threshold", args->threshold,
                     "How far below the baseline a link or size is marked as a regression (default 10%)");
      sub.add_option("--db", args->db,
                     "Add a history section from the run store (this one, or the default: $RAILBENCH_DB, else "
                     "$XDG_DATA_HOME/railbench/railbench.db): the things the page's findings name, or --history's")
          ->expected(0, 1);
      sub.add_option("--history", args->history,
                     "A thing whose runs in the store the history section draws (repeat for several): node03, "
                     "node03:rail1, node03:rail1-node07:rail1, 'allreduce 1M'; implies --db")
          ->allow_extra_args(false);
      return SubcommandRun{[args] { return std::optional<int>(run_report(*args)); }, {}};
    }});

}  // namespace
}  // namespace railbench
