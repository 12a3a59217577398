// railbench report: results files -> one self-contained HTML page (bench/report). Needs
// no ranks and no transport: it runs before any bootstrap, like `info`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/offline/report/report.h"
#include "lib/core/errors.h"
#include "lib/core/sizes.h"

namespace railbench {

namespace {

struct ReportArgs {
  std::vector<std::string> runs;
  std::vector<std::string> baselines;
  std::string output;
  std::string size;
  std::string threshold = "10%";
};

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
      return SubcommandRun{[args] { return std::optional<int>(run_report(*args)); }, {}};
    }});

}  // namespace
}  // namespace railbench
