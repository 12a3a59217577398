// The subcommand registry: each cmd_*.cc registers its own subcommand (name, help, its
// options and how it runs), and main.cc builds the command line from whatever is
// registered, listing none by hand.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/runner/options.h"
#include "lib/runtime/bootstrap.h"

namespace railbench {

// How a parsed subcommand runs. `before_bootstrap` (optional) runs first, before any
// launcher is joined: commands that need no ranks (info, validate --plan) and checks
// that need no peers answer there with an exit code. Otherwise `run` gets the job's
// bootstrap.
struct SubcommandRun {
  std::function<std::optional<int>()> before_bootstrap;
  std::function<int(Bootstrap&)> run;
};

struct Subcommand {
  std::string name;
  std::string help;
  int order = 0;  // position in --help and in error messages
  // Adds the subcommand's options to `sub` (the shared ones through add_common_options)
  // and returns how it runs; options it parses live as long as the returned functions.
  std::function<SubcommandRun(CLI::App& sub, CommonOptions& common)> define;
};

// Called from a static initializer in each cmd_*.cc; returns true so it can initialize
// a namespace-scope constant.
bool register_subcommand(Subcommand command);
// Every registered subcommand, by `order`.
std::vector<const Subcommand*> subcommands();

// Before the bootstrap exists: only the first rank of a launch prints, so a bad command
// line gives one line rather than one per rank.
bool first_rank_by_environment();

// The shared options in small groups: each command registers the groups whose options it
// honours, so that every option its --help lists changes its run or its output
// (tests/bench/options_walk.py proves it).

// -t: which transport (the forms every registered transport answers).
void add_transport_options(CLI::App& sub, CommonOptions& options);
// -b, -e, -f, -i: the message sizes of a sweep.
void add_sweep_options(CLI::App& sub, CommonOptions& options);
// -n and -w.
void add_iteration_options(CLI::App& sub, CommonOptions& options);
// -w alone, worded for the command (kvcache: warm-up requests; it has no -n).
void add_warmup_option(CLI::App& sub, CommonOptions& options, const std::string& help);
// -c: verify the data.
void add_check_option(CLI::App& sub, CommonOptions& options);
// What a command writes: --json (unless `json` is false: validate words its own), --csv,
// -q, for a command that reads fabric counters --no-counters, and for one whose results
// have metrics (bench/runner/results_metrics.h) --prometheus.
struct OutputOptions {
  bool json = true;
  bool counters = true;
  bool metrics = false;
};
void add_output_options(CLI::App& sub, CommonOptions& options, OutputOptions which = {});
// --timeline: the 1 ms traffic timeline (bench/runner/timeline_run.h).
void add_timeline_option(CLI::App& sub, CommonOptions& options);
// --paths N and --probe-rate (bench/runner/paths_run.h).
void add_paths_option(CLI::App& sub, CommonOptions& options);
// --duration and --cycles (burn-in, bench/runner/burn_in.h): one or the other, checked as parsed;
// for the commands that repeat their measurement in windows (sendrecv, collectives, validate).
void add_burn_in_options(CLI::App& sub, CommonOptions& options);
// --mem and, unless `gpu_map` is false (a command that refuses GPU memory), --gpu-map.
void add_memory_options(CLI::App& sub, CommonOptions& options, bool gpu_map = true);
// How the transport reaches its peers: --rails, --timeout (how long a peer may go
// without progress) and every registered transport's own options (--verbs-gid-index, ...
// with their aliases, from lib/transport/registry.h). Separate from -t so that --help
// lists them where it always has, after the output options.
void add_link_options(CLI::App& sub, CommonOptions& options);

}  // namespace railbench
