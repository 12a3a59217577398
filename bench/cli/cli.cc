#include "bench/cli/cli.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "bench/runner/burn_in.h"
#include "lib/core/errors.h"
#include "lib/runtime/launch.h"
#include "lib/transport/registry.h"

namespace railbench {

namespace {

// A function-local registry: static initializers of other files may run before this
// file's, so the list must be built on first use.
std::vector<std::unique_ptr<Subcommand>>& registry() {
  static std::vector<std::unique_ptr<Subcommand>> commands;
  return commands;
}

}  // namespace

bool register_subcommand(Subcommand command) {
  registry().push_back(std::make_unique<Subcommand>(std::move(command)));
  return true;
}

std::vector<const Subcommand*> subcommands() {
  std::vector<const Subcommand*> out;
  for (const auto& c : registry()) out.push_back(c.get());
  std::stable_sort(out.begin(), out.end(), [](const auto* a, const auto* b) { return a->order < b->order; });
  return out;
}

bool first_rank_by_environment() {
  try {
    return detect_launch(process_environment()).rank == 0;
  } catch (const Error&) {
    return true;  // the launch itself is wrong: every process says so
  }
}

namespace {

// A whole number of at least `lo`, checked on the text as typed: an explicit "-n -1"
// must be an error, not the "unset" default, and "-f -1" must not wrap to 2^64-1.
CLI::Validator at_least(long long lo) {
  return CLI::Validator(
      [lo](std::string& text) -> std::string {
        long long v = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || ptr != end || v < lo)
          return fmt::format("'{}' must be a whole number, {} or more", text, lo);
        return "";
      },
      fmt::format("INT>={}", lo));
}

}  // namespace

void add_transport_options(CLI::App& app, CommonOptions& o) {
  app.add_option("-t,--transport", o.transport, transport_help())->capture_default_str();
}

void add_sweep_options(CLI::App& app, CommonOptions& o) {
  app.add_option("-b,--min-bytes", o.min_bytes, "Smallest message size (8, 4K, 1M, 1G)");
  app.add_option("-e,--max-bytes", o.max_bytes, "Largest message size");
  app.add_option("-f,--step-factor", o.step_factor, "Multiply the size by this between steps")
      ->check(at_least(2))
      ->capture_default_str();
  app.add_option("-i,--step-bytes", o.step_bytes, "Add this many bytes between steps instead of -f")
      ->check(at_least(1));
}

void add_iteration_options(CLI::App& app, CommonOptions& o) {
  app.add_option("-n,--iters", o.iters, "Timed iterations per size")->check(at_least(1));
  add_warmup_option(app, o, "Untimed iterations before timing");
}

void add_warmup_option(CLI::App& app, CommonOptions& o, const std::string& help) {
  app.add_option("-w,--warmup-iters", o.warmup_iters, help)->check(at_least(0));
}

void add_check_option(CLI::App& app, CommonOptions& o) {
  app.add_flag("-c,--check", o.check, "Verify the data and count wrong elements");
}

void add_output_options(CLI::App& app, CommonOptions& o, OutputOptions which) {
  if (which.json)
    app.add_option("--json", o.json_path, "Write results (JSON, schema in README) to this file after every size");
  app.add_option("--csv", o.csv_path, "Write the results' rows (CSV, columns in README) to this file after every size");
  if (which.metrics) {
    app.add_option("--prometheus", o.prometheus_path,
                   "Write the results as Prometheus metrics to this file after every size (node_exporter's "
                   "textfile collector; railbench export has the same)");
  }
  app.add_option("--db", o.db,
                 "When the run ends, put its results into the run store (this file, or the default: $RAILBENCH_DB, "
                 "else $XDG_DATA_HOME/railbench/railbench.db); without --json the results file is written beside it")
      ->expected(0, 1);
  app.add_flag("-q,--quiet", o.quiet, "No progress lines on stderr (where a long run is)");
  if (which.counters) {
    app.add_flag("--no-counters", o.no_counters,
                 "Do not read the rails' fabric counters around each measurement (results without \"counters\")");
  }
}

void add_timeline_option(CLI::App& app, CommonOptions& o) {
  app.add_option("--timeline", o.timeline_path,
                 "Record bytes per 1 ms per rank and rail (and collective iterations) to this binary file "
                 "(format in README)");
}

void add_paths_option(CLI::App& app, CommonOptions& o) {
  app.add_option("--paths", o.paths,
                 "Before measuring, trace the switch path of each RoCE v2 queue pair to the next N ranks (TTL-limited "
                 "UDP probes with the queue pair's own ports; -t verbs): printed, and in the results' \"paths\"")
      ->check(at_least(1));
  app.add_option("--probe-rate", o.probe_rate,
                 "--paths: ICMP answers a second to ask of any one switch (its CPU polices them); each rank probes "
                 "at this rate / (ranks / 3)")
      ->check(CLI::Range(0.1, 100000.0));
}

void add_burn_in_options(CLI::App& app, CommonOptions& o) {
  app.add_option("--duration", o.duration, "Burn-in: repeat the measurement in windows for this long (90s, 10m, 1h)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              parse_duration(text);
            } catch (const Error& e) {
              // CLI11 names the option already: "--duration: '5x': ..."
              const std::string what = e.what(), self = "--duration ";
              return what.rfind(self, 0) == 0 ? what.substr(self.size()) : what;
            }
            return "";
          },
          "DURATION"));
  // Both at once is refused by make_burn_in_plan, whose message says what to do.
  app.add_option("--cycles", o.cycles, "Burn-in: repeat the measurement this many windows")->check(at_least(1));
}

void add_memory_options(CLI::App& app, CommonOptions& o, bool gpu_map) {
  app.add_option("--mem", o.mem,
                 "Buffer memory: host, cuda (GPU, GPUDirect RDMA) or cuda-host (default: cuda for "
                 "-t nccl, else host)");
  if (gpu_map)
    app.add_option("--gpu-map", o.gpu_map, "GPU of each local rank, e.g. 0,1,2,3 (default: local rank i -> GPU i)");
}

void add_link_options(CLI::App& app, CommonOptions& o) {
  app.add_option("--rails", o.rails, "Rails: a count (2) or names (eth0,eth1 / mlx5_0,mlx5_1)");
  app.add_option("--timeout", o.timeout_s, "Seconds without progress from a peer before failing")
      ->capture_default_str();
  // Every registered transport's own options, those of a transport this build lacks too:
  // they parse as in any build, and make_transport refuses them by name.
  for (const TransportEntry* t : all_transports()) {
    for (const TransportOption& opt : t->options) {
      const std::string flag = t->name + "-" + opt.name;
      // std::map keeps the slot where it is while CLI11 holds a reference to it.
      int& value = o.transport_options[flag];
      value = opt.default_value;
      // The alias as a second name of the same option (an option of its own, hidden,
      // would lose its name in CLI11's errors, which name hidden options "").
      auto* added = app.add_option("--" + flag + (opt.alias.empty() ? "" : "," + opt.alias), value, opt.help);
      if (opt.show_default) added->capture_default_str();
    }
  }
}

}  // namespace railbench
