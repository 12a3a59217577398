// railbench compare: two results files of the same command, figure by figure; what got
// worse beyond the threshold and beyond the noise of both runs is a regression (exit 1).
// With --job, a real job's NCCL Inspector records against railbench's figures instead (job.h).
// The judgement lives in bench/offline/compare/; this file is the command line.
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/offline/compare/diff.h"
#include "bench/offline/compare/figures.h"
#include "bench/offline/compare/inspector.h"
#include "bench/offline/compare/job.h"
#include "bench/offline/compare/load.h"
#include "bench/offline/compare/output.h"
#include "lib/core/errors.h"
#include "lib/store/store.h"

namespace railbench {
namespace {

struct CompareOptions {
  std::string base, next;
  std::vector<std::string> more;  // with --job: further Inspector or results files
  std::string threshold = "5%";
  std::string json_path, csv_path;
  double noise_k = compare::kDefaultNoiseK;
  std::vector<std::string> metrics;  // --metrics: only these (busbw, tx, "lat p99", ...)
  bool all = false;
  bool job = false;
  std::optional<std::string> db;  // --db [STORE], with --job
};

int run_compare(const CompareOptions& opt) {
  compare::CompareInputs in{opt.base, opt.next, "", compare::parse_threshold(opt.threshold), opt.noise_k};
  const auto base = compare::load_results(opt.base);
  const auto next = compare::load_results(opt.next);
  compare::check_comparable(base, opt.base, next, opt.next);
  in.command = base.at("command").get<std::string>();
  const auto d =
      compare::diff(compare::only_metrics(compare::figures_of(base, opt.base, opt.noise_k), opt.metrics),
                    compare::only_metrics(compare::figures_of(next, opt.next, opt.noise_k), opt.metrics), in.threshold);
  if (d.rows.empty()) {
    throw UsageError(fmt::format(
        "compare: {} and {} have no figure in common (different sizes, pairs, modes or nodes?): compare two runs "
        "of the same sweep",
        opt.base, opt.next));
  }
  for (const auto& line : compare::table_lines(d, in, opt.all)) fmt::print("{}\n", line);
  fmt::print("{}\n", compare::summary_line(d, in));
  if (!opt.json_path.empty())
    compare::write_text_file(opt.json_path, "--json", compare::diff_json(d, in).dump(2) + "\n");
  if (!opt.csv_path.empty()) compare::write_text_file(opt.csv_path, "--csv", compare::diff_csv(d));
  return d.count(compare::Verdict::regression) > 0 ? 1 : 0;
}

// --job: the positional files are Inspector files (or their directory) and results
// files, told apart by their content, in any order.
int run_compare_files_of_job(const CompareOptions& opt) {
  if (opt.threshold != "5%" || opt.noise_k != compare::kDefaultNoiseK || !opt.metrics.empty() ||
      !opt.csv_path.empty() || opt.all) {
    throw UsageError(
        "compare --job: --threshold, --noise-k, --metrics, --csv and --all judge two results files, not a job: "
        "leave them out (--job takes --json)");
  }
  std::vector<std::string> files{opt.base};
  if (!opt.next.empty()) files.push_back(opt.next);
  files.insert(files.end(), opt.more.begin(), opt.more.end());
  std::vector<std::string> inspector, results;
  for (const auto& f : files) {
    std::error_code ec;
    if (!std::filesystem::exists(f, ec)) {
      throw UsageError(
          fmt::format("compare --job: {}: no such file or directory: give the job's NCCL Inspector "
                      "files (or their directory) and railbench results files",
                      f));
    }
    (compare::looks_like_inspector(f) ? inspector : results).push_back(f);
  }
  std::vector<compare::FabricCurve> stored;
  if (opt.db) {
    // The store's newest collective sweeps: enough to hold every rank count and host set
    // a fleet measures, newest first, so the latest run on the job's nodes is the one used.
    constexpr int kStoredRuns = 200;
    const std::string path = store::store_path(*opt.db);
    const store::Store s(path, store::Store::Mode::read);
    stored = compare::fabric_curves_of_store(s.collective_runs(kStoredRuns), store::store_name(path));
    if (stored.empty() && results.empty()) {
      throw UsageError(fmt::format(
          "compare --job --db: the run store {} holds no complete collective sweep (allreduce, allgather, "
          "reducescatter, alltoall): run one with --db, or railbench db ingest its results file, or give the "
          "results file here",
          store::store_name(path)));
    }
  }
  return compare::run_compare_job(inspector, results, opt.json_path, stored);
}

int run_compare_command(const CompareOptions& opt) {
  if (opt.job) return run_compare_files_of_job(opt);
  if (opt.db) {
    throw UsageError(
        "compare: --db takes railbench's figures from the run store for --job (a job's NCCL Inspector files); "
        "two results files are compared as they are: leave --db out, or add --job");
  }
  if (opt.next.empty()) {
    throw UsageError(
        "compare: one file given: compare takes two results files (BASE NEW); to hold a job's NCCL Inspector "
        "files against the run store, give --job --db");
  }
  if (!opt.more.empty()) {
    throw UsageError(
        fmt::format("compare: {} files given: compare takes two results files (BASE NEW); to hold a "
                    "job's NCCL Inspector files against results files, give --job",
                    opt.more.size() + 2));
  }
  return run_compare(opt);
}

const bool cmd_compare_registered = register_subcommand(Subcommand{
    "compare", "Compare two results files: regressions beyond the threshold and the runs' noise (exit 1)", 75,
    [](CLI::App& sub, CommonOptions&) {
      auto opt = std::make_shared<CompareOptions>();
      sub.add_option("base", opt->base,
                     "The baseline's results file (--json of an accepted run); with --job, any of the files")
          ->required();
      sub.add_option("new", opt->next, "The results file to judge against it; with --job, any of the files");
      sub.add_option("more", opt->more, "With --job only: further NCCL Inspector files or results files");
      sub.add_option("--threshold", opt->threshold,
                     "Smallest change that counts, in percent (default 5%); it must also be beyond the noise");
      sub.add_option("--noise-k", opt->noise_k,
                     "Width of each run's noise band in robust standard deviations (default 3)")
          ->check(CLI::Range(0.0, 100.0));
      sub.add_option("--metrics", opt->metrics,
                     "Compare only these metrics, comma-separated (busbw, \"time p99\", tx, rx, \"lat p50\", ...)")
          ->delimiter(',');
      sub.add_option("--json", opt->json_path,
                     "Write the whole diff (with --job: the whole comparison) as JSON to this file");
      sub.add_option("--csv", opt->csv_path, "Write the whole diff as CSV (RFC 4180) to this file");
      sub.add_flag("--all", opt->all, "List the figures within the threshold too");
      sub.add_option("--db", opt->db,
                     "With --job: railbench's figures also from the run store's collective sweeps (this one, or the "
                     "default: $RAILBENCH_DB, else $XDG_DATA_HOME/railbench/railbench.db), the newest on the job's "
                     "nodes first")
          ->expected(0, 1);
      sub.add_flag("--job", opt->job,
                   "The files are a real job's NCCL Inspector logs (files or their directory) and railbench "
                   "collective results: the job's busbw per collective and size against the fabric's");
      // Needs no ranks: it answers before any launcher is joined, on the launch's first rank.
      return SubcommandRun{
          [opt] { return std::optional<int>(first_rank_by_environment() ? run_compare_command(*opt) : 0); }, {}};
    }});

}  // namespace
}  // namespace railbench
