// railbench: one binary, one subcommand per pattern. The subcommands register
// themselves (bench/cli/cli.h); this file parses, picks the bootstrap and maps errors to
// exit codes.
//
// Exit codes: 0 success; 1 a run failed (check found wrong data, a peer timed out, a
// transport error); 2 bad input (command line, config, environment).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "bench/cli/cli.h"
#include "bench/runner/run_context.h"
#include "bench/runner/run_store.h"
#include "lib/core/errors.h"
#include "lib/core/version.h"
#include "lib/runtime/signals.h"

using namespace railbench;

namespace {

// A week: longer is no deadline at all, and larger values overflow the clock's arithmetic.
constexpr double kMaxTimeoutS = 7 * 24 * 3600;

int exit_code(ErrorCode code) {
  return code == ErrorCode::usage ? 2 : 1;
}

// CLI11 calls a stray word "extra arguments"; name the real problem.
bool unknown_subcommand(const char* word) {
  std::string names;
  for (const auto* c : subcommands()) {
    if (c->name == word) return false;
    names += (names.empty() ? "" : ", ") + c->name;
  }
  if (first_rank_by_environment())
    fmt::print(stderr, "railbench: error: unknown subcommand '{}': use one of {}\n", word, names);
  return true;
}

// Joins the launcher's job and runs the subcommand; errors become exit codes. With --db,
// rank 0 puts the results file into the run store once the run has ended, however.
int run_with_bootstrap(const SubcommandRun& run, const CommonOptions& common, const std::string& store) {
  std::unique_ptr<Bootstrap> bootstrap;
  const auto into_store = [&] {
    if (bootstrap ? bootstrap->rank() == 0 : first_rank_by_environment()) ingest_into_run_store(common, store);
  };
  try {
    bootstrap = make_bootstrap_from_environment(common.timeout_s);
    const int code = run.run(*bootstrap);
    set_signal_outcome_reported();
    into_store();
    return code;
  } catch (const AgreedError& e) {
    // Every rank saw it: say it once, and let every rank end normally (MPI_Finalize).
    // A rank that ends first with exit 2 may make mpirun signal the others while they
    // finalize: that must not add a second line.
    if (bootstrap ? bootstrap->rank() == 0 : first_rank_by_environment()) {
      fmt::print(stderr, "railbench: error: {}\n", e.what());
    }
    set_signal_outcome_reported();
    into_store();
    return exit_code(e.code());
  } catch (const std::exception& e) {
    const auto* err = dynamic_cast<const Error*>(&e);
    const int code = err ? exit_code(err->code()) : 1;
    fmt::print(stderr, "railbench: {}: {}\n", err ? "error" : "internal error", e.what());
    into_store();
    std::fflush(stderr);
    std::fflush(stdout);
    // Other ranks may be waiting on this one: end the whole job rather than leave them
    // to run into their own timeouts. Results already written stay on disk.
    if (bootstrap && bootstrap->size() > 1) bootstrap->abort(code);
    return code;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else: a signal at any point ends the run with a verdict, one line and
  // exit 128+signal (lib/runtime/signals.h). Until the bootstrap knows the rank, the launcher's
  // first rank speaks for the job.
  install_signal_handlers();
  set_signal_rank(first_rank_by_environment() ? 0 : -1);
  CLI::App app{"railbench: RDMA collective benchmarks and fabric validation"};
  app.require_subcommand(1);
  app.set_version_flag("--version", railbench_version_line());

  CommonOptions common;
  for (int i = 0; i < argc; ++i) common.argv.emplace_back(argv[i]);
  std::vector<std::pair<CLI::App*, SubcommandRun>> defined;
  for (const auto* c : subcommands()) {
    CLI::App* sub = app.add_subcommand(c->name, c->help);
    defined.emplace_back(sub, c->define(*sub, common));
  }
  if (argc > 1 && argv[1][0] != '-' && unknown_subcommand(argv[1])) return 2;

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (first_rank_by_environment()) fmt::print(stderr, "railbench: error: {} (see railbench --help)\n", e.what());
    return 2;
  }

  for (const auto& [sub, run] : defined) {
    if (!sub->parsed()) continue;
    try {
      if (run.before_bootstrap)
        if (auto code = run.before_bootstrap()) return *code;
    } catch (const Error& e) {
      if (first_rank_by_environment()) fmt::print(stderr, "railbench: error: {}\n", e.what());
      return exit_code(e.code());
    }
    // nan compares false with everything, so the test is written to let only good values through.
    if (!(std::isfinite(common.timeout_s) && common.timeout_s > 0 && common.timeout_s <= kMaxTimeoutS)) {
      if (first_rank_by_environment())
        fmt::print(stderr, "railbench: error: --timeout {} must be a number of seconds above 0 and at most {}\n",
                   common.timeout_s, kMaxTimeoutS);
      return 2;
    }
    std::string store;
    try {
      store = prepare_run_store(common, sub->get_name());
    } catch (const Error& e) {
      if (first_rank_by_environment()) fmt::print(stderr, "railbench: error: {}\n", e.what());
      return exit_code(e.code());
    }
    return run_with_bootstrap(run, common, store);
  }
  return 0;
}
