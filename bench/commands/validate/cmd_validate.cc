// railbench validate: the command line of the acceptance test. The test itself (rank
// layout, pair tests, phases, verdict, report) lives in bench/commands/validate/.
#include <algorithm>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/commands/validate/phases.h"
#include "bench/commands/validate/plan.h"
#include "bench/commands/validate/rank_layout.h"
#include "bench/commands/validate/su_config.h"
#include "bench/runner/results_run.h"
#include "bench/runner/run_context.h"
#include "lib/results/results.h"
#include "lib/store/store.h"

namespace railbench {

using nlohmann::json;

namespace {

struct ValidateOptions {
  std::string config;  // --config: a path, or a name in configs/
  bool plan = false;   // --plan: print the schedule and estimate, run nothing
  bool inventory_only = false;
  std::string transport;     // -t: overrides the config's transport
  double timeout_s = 0;      // --pair-timeout: overrides tests.pair_timeout_s
  std::string drain_list;    // --drain-list: where rank 0 writes the bad nodes as a hostlist
  std::string baseline;      // --baseline: an accepted validate run's results file
  bool fabric_only = false;  // --fabric-only: inventory, cabling and the fabric phase; no pair tests
  double probe_rate = 0;     // --probe-rate: overrides fabric.tests.probe_rate
  std::string ecmp_sweep;    // --ecmp-sweep: overrides fabric.tests.ecmp_sweep ("1,2,4,8")
};

// --fabric-only, --probe-rate and --ecmp-sweep need the config's fabric section.
void apply_fabric_options(const ValidateOptions& opt, SuConfig& c) {
  const char* option = opt.fabric_only ? "--fabric-only" : opt.probe_rate > 0 ? "--probe-rate" : "--ecmp-sweep";
  if ((opt.fabric_only || opt.probe_rate > 0 || !opt.ecmp_sweep.empty()) && !c.fabric.present())
    throw UsageError(
        fmt::format("{}: config {} has no \"fabric\" section: describe the SUs, spines and leaf-spine "
                    "links (bench/commands/validate/FABRIC.md), or leave the option out",
                    option, c.path));
  if (opt.probe_rate > 0) c.fabric.tests.probe_rate = opt.probe_rate;
  if (!opt.ecmp_sweep.empty()) c.fabric.tests.ecmp_sweep = parse_ecmp_sweep(opt.ecmp_sweep, "--ecmp-sweep");
  if (opt.fabric_only) c.fabric.tests.enabled = true;
}

int run_validate_plan(const ValidateOptions& opt) {
  SuConfig c = load_su_config(opt.config);
  apply_fabric_options(opt, c);
  for (const auto& line : describe_plan(c, make_validate_plan(c))) fmt::print("{}\n", line);
  return 0;
}

// A transport that connects without binding the rail's own address (UCX's tcp, 1.13)
// leaves by whichever interface the kernel routes the peer's address to: a cross-rail
// pair (rail s to the other node's rail s+1) runs on the peer's rail, never across the
// spine. Measured on the simulated SU: a rank given rail0 sent to a rail1 peer from its
// rail1 address, through its rail1 port. Those checks would judge the wrong path, so
// they are left out, and the run says so.
std::string drop_cross_rail_if_unbound(const std::string& transport, SuConfig& c) {
  if (c.traits_over(transport).binds_rail_address || c.num_rails() < 2 ||
      !(c.tests.cross_rail || c.tests.bisection_cross_rail))
    return "";
  c.tests.cross_rail = c.tests.bisection_cross_rail = false;
  return fmt::format(
      "cross-rail checks left out over {}: it connects without binding the rail's address, so the "
      "kernel's route to the peer (its own rail) would carry them, not the spine; run them over "
      "ofi:tcp or verbs",
      transport);
}

// --db: rank 0 reads the run store's references for this SU, and every rank gets them
// (the findings are judged alike everywhere). A store that is not there yet, or cannot be
// read, leaves the judgement out with one line; the run itself goes on as without --db.
std::optional<FleetHistory> share_fleet_history(Bootstrap& bootstrap, const CommonOptions& common, const SuConfig& c) {
  if (!common.db) return std::nullopt;
  std::string text;
  if (bootstrap.rank() == 0) {
    const std::string store = store::store_path(*common.db);
    try {
      text = to_json(load_fleet_history(store, c.name)).dump();
    } catch (const std::exception& e) {
      fmt::print(stderr,
                 "railbench: validate --db: no history to judge the links against ({}); the run goes on, and is "
                 "put into the store at its end\n",
                 e.what());
    }
  }
  const auto all = bootstrap.all_gather_strings(text);
  if (all.front().empty()) return std::nullopt;
  return fleet_history_from_json(json::parse(all.front()));
}

int run_validate(Bootstrap& bootstrap, CommonOptions common, const ValidateOptions& opt) {
  SuConfig c;
  ValidateBaseline baseline;
  BurnInPlan burn_in;
  // A config (and a baseline) is read on every rank (they share a filesystem, as for
  // the binary).
  {
    std::string error;
    try {
      burn_in = make_burn_in_plan(common.duration, common.cycles);
      c = load_su_config(opt.config);
      apply_fabric_options(opt, c);
      if (!opt.baseline.empty()) baseline = load_validate_baseline(opt.baseline, c);
    } catch (const Error& e) {
      error = e.what();
    }
    for (const auto& e : bootstrap.all_gather_strings(error))
      if (!e.empty()) throw AgreedError(ErrorCode::usage, e);
  }
  // The pair deadline drives every data-path wait; out-of-band waits must outlast a
  // round in which a pair used up its deadline more than once.
  common.timeout_s = opt.timeout_s > 0 ? opt.timeout_s : c.tests.pair_timeout_s;
  bootstrap.set_timeout(std::max(bootstrap.timeout(), 8 * common.timeout_s + 30));
  common.transport = opt.transport.empty() ? c.transport : opt.transport;
  const std::string note = drop_cross_rail_if_unbound(common.transport, c);
  const std::optional<FleetHistory> history = share_fleet_history(bootstrap, common, c);
  // The config's verbs settings, as --verbs-gid-index and --verbs-qps-per-peer would give them.
  common.transport_options["verbs-gid-index"] = c.gid_index;
  common.transport_options["verbs-qps-per-peer"] = c.qps_per_peer;
  RunContext ctx(bootstrap, common, "validate");
  // Refused up front, like --json: the list matters most when the run fails.
  ctx.agree([&] {
    if (ctx.is_root()) check_results_path(opt.drain_list, "--drain-list", "drain.txt");
  });
  SuLayout L;
  ctx.agree([&] { L = map_ranks(c, ctx.hosts(), ctx.launcher_local_ranks()); });

  json cfg{{"su", c.name},
           {"file", c.path},
           {"nodes", c.nodes_expr},
           {"gpus_per_node", c.gpus_per_node},
           {"pair_timeout_s", common.timeout_s},
           // What a link is judged against relative to its rail: the run store's trends
           // say when a drifting link will reach it (bench/offline/db/README.md).
           {"rel_bw_below_median", c.thresholds.rel_bw_below_median}};
  if (!opt.baseline.empty()) cfg["baseline"] = opt.baseline;
  if (history) cfg["history"] = {{"store", history->store}, {"runs", history->runs}};
  if (burn_in.on()) cfg["burn_in"] = burn_in.describe();
  // No "channels": the pair tests' traffic is in the per-link results.
  ResultsRun results(ctx, cfg, ResultsEpilogue{.channels = false});
  int code = 0;
  results.measure([&] {
    code = validate_phases(
        ctx, c, L,
        ValidateRun{common.transport, opt.inventory_only, opt.drain_list, opt.baseline.empty() ? nullptr : &baseline,
                    history ? &*history : nullptr, burn_in, note, opt.fabric_only},
        results);
  });
  return code;
}

// --plan needs no ranks (the first rank of a launch prints it); a bad --pair-timeout
// is refused before any launcher is joined.
std::optional<int> before_bootstrap(const ValidateOptions& opt) {
  if (opt.plan) return first_rank_by_environment() ? run_validate_plan(opt) : 0;
  if (opt.timeout_s < 0) {
    if (first_rank_by_environment())
      fmt::print(stderr, "railbench: error: --pair-timeout {} must be positive\n", opt.timeout_s);
    return 2;
  }
  return std::nullopt;
}

const bool cmd_validate_registered = register_subcommand(Subcommand{
    "validate", "Acceptance test of a scalable unit against its config: names the bad node, rail or link", 60,
    [](CLI::App& sub, CommonOptions& common) {
      auto opt = std::make_shared<ValidateOptions>();
      sub.add_option("--config", opt->config, "SU description (JSON): a path, or a name from configs/")->required();
      sub.add_flag("--plan", opt->plan, "Print the schedule and an estimated duration; run nothing");
      sub.add_flag("--inventory-only", opt->inventory_only, "Check NICs, ports, speeds and MTUs; send no traffic");
      sub.add_flag("--fabric-only", opt->fabric_only,
                   "Inventory, cabling and the fabric phase (every leaf-spine link, named when bad); no pair tests");
      sub.add_option("--probe-rate", opt->probe_rate,
                     "ICMP answers per second any one switch is asked for while paths are traced (default: the "
                     "config's fabric.tests.probe_rate, 100)")
          ->check(CLI::PositiveNumber);
      sub.add_option("--ecmp-sweep", opt->ecmp_sweep,
                     "Flows per connection for the fabric phase's ECMP sweep, a cross-SU all-to-all per count, "
                     "e.g. 1,2,4,8 (default: the config's fabric.tests.ecmp_sweep, none)");
      sub.add_option("-t,--transport", opt->transport, "Override the config's transport (verbs, ofi:tcp, ...)");
      sub.add_option("--pair-timeout", opt->timeout_s,
                     "Seconds a pair may go without progress (config: tests.pair_timeout_s)");
      sub.add_option("--json", common.json_path,
                     "Write results (inventory, per-rail matrices, findings, bad_nodes) to this file");
      sub.add_option("--drain-list", opt->drain_list,
                     "Write the nodes to drain as one hostlist line (gpu[003,017-018]; empty when none), even when "
                     "validate fails: test -s FILE && scontrol update nodename=\"$(cat FILE)\" state=drain ...");
      sub.add_option("--baseline", opt->baseline,
                     "An accepted validate run's --json: a link well below its own figure there is a finding "
                     "(config: thresholds.baseline_bw_below)");
      add_output_options(sub, common, {.json = false, .counters = true, .metrics = true});
      add_burn_in_options(sub, common);
      return SubcommandRun{[opt] { return before_bootstrap(*opt); },
                           [&common, opt](Bootstrap& b) { return run_validate(b, common, *opt); }};
    }});

}  // namespace
}  // namespace railbench
