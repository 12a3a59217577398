// railbench export: a results file as metrics for the fleet's monitoring, in the text
// format node_exporter's textfile collector reads (or OpenMetrics). The series are the
// result kinds' (bench/runner/results_metrics.h via bench/kinds); this is the command line.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/kinds/result_kind.h"
#include "lib/results/read.h"
#include "lib/results/results.h"

namespace railbench {
namespace {

struct ExportOptions {
  std::string path;
  std::string format = "prometheus";
  std::string output;
  bool pairs = false;
};

int run_export(const ExportOptions& opt) {
  const MetricsFormat format = parse_metrics_format(opt.format);
  // The series come from the rails' matrices; a validate file's pair records (4 M at
  // 1,024 x 8) are read past, not kept.
  const auto doc = read_results_file(opt.path, "export", {{"rail_pairs", [](const nlohmann::json&) {}}});
  const std::string text = results_metrics_text(doc, MetricsOptions{opt.pairs}, format, opt.path);
  if (opt.output.empty() || opt.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  // Atomically: the textfile collector may read the file at any moment.
  check_results_path(opt.output, "-o", "railbench.prom");
  write_text_file(opt.output, text, "-o");
  return 0;
}

const bool cmd_export_registered = register_subcommand(Subcommand{
    "export", "A results file as Prometheus / OpenMetrics metrics (node_exporter textfile collector)", 76,
    [](CLI::App& sub, CommonOptions&) {
      auto opt = std::make_shared<ExportOptions>();
      sub.add_option("results", opt->path, "The results file (--json of validate, sendrecv or a collective)")
          ->required();
      sub.add_option("--format", opt->format,
                     "prometheus (the text format node_exporter's textfile collector reads; default) or openmetrics");
      sub.add_option("-o,--output", opt->output,
                     "Write to this file, replaced atomically (e.g. /var/lib/node_exporter/textfile/railbench.prom); "
                     "default: standard output");
      sub.add_flag("--pairs", opt->pairs,
                   "validate: also every node -> peer pair per rail (n^2 series per rail: mind the cardinality)");
      return SubcommandRun{[opt] { return std::optional<int>(first_rank_by_environment() ? run_export(*opt) : 0); },
                           {}};
    }});

}  // namespace
}  // namespace railbench
