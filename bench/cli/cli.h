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

// -t, -b/-e/-f/-i, -n/-w, -c, --json, --csv, -q, --rails, --timeout, the transports' own
// options and the GPU options.
void add_common_options(CLI::App& sub, CommonOptions& options);
// Every registered transport's own options (--verbs-gid-index, ... with their aliases), from
// lib/transport/registry.h; part of add_common_options.
void add_transport_options(CLI::App& sub, CommonOptions& options);
// --csv and -q/--quiet alone, for commands with their own options (validate).
void add_output_options(CLI::App& sub, CommonOptions& options);
// --duration and --cycles (burn-in, bench/runner/burn_in.h): one or the other, checked as parsed;
// for the commands that repeat their measurement in windows (sendrecv, collectives, validate).
void add_burn_in_options(CLI::App& sub, CommonOptions& options);

}  // namespace railbench
