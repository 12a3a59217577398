// railbench db: the run store (lib/store/store.h). `ingest` puts results files into it,
// `info` says what it holds, `trends` says what moved across runs: links drifting while
// they pass, repeat offenders, flaky links, what is new since an SU's last accepted run.
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/offline/db/db_options.h"
#include "bench/offline/db/trends.h"
#include "lib/core/errors.h"
#include "lib/store/store.h"

namespace railbench {
namespace {

using nlohmann::json;

struct DbOptions {
  std::string db;
  std::vector<std::string> files;
  std::string since = "90d";
  db::TrendOptions trend;
  int repeat = 2;
  bool json = false;
};

int run_ingest(const DbOptions& opt) {
  const std::string path = store::store_path(opt.db);
  store::Store s(path, store::Store::Mode::write);
  int added = 0, present = 0;
  for (const auto& file : opt.files) {
    store::Store::Ingested r;
    try {
      r = s.ingest(store::rows_of_file(file, "db ingest"), file);
    } catch (const store::IngestInterrupted& e) {
      // The files before it are in whole, and ingesting them again keeps each run once:
      // the same command again finishes the job.
      std::fflush(stdout);
      fmt::print(stderr,
                 "railbench: error: {} ({} file(s) before it went in); run the same railbench db ingest again\n",
                 e.what(), added + present);
      return 128 + e.signal();
    }
    if (r.added) {
      ++added;
      fmt::print("{}: run {} ({} figures, {} findings)\n", file, r.key, r.figures, r.findings);
    } else {
      ++present;
      fmt::print("{}: run {} is in the store already\n", file, r.key);
    }
  }
  fmt::print("# {}: {} run(s) added, {} already there\n", store::store_name(path), added, present);
  return 0;
}

int run_info(const DbOptions& opt) {
  const std::string path = store::store_path(opt.db);
  store::Store s(path, store::Store::Mode::read);
  fmt::print("store {}: schema version {}\n", store::store_name(path), s.schema_version());
  for (const auto& [table, n] : s.counts()) fmt::print("  {:<9} {}\n", table, n);
  return 0;
}

// What `db trends` judges: a metric, which way is worse, and the limit a finding starts
// at (validate's rel_bw_below_median of the newest run's config).
struct Judged {
  const char* metric;
  bool higher_better;
};
constexpr Judged kDrift[] = {{"tx/rail", true}, {"rx/rail", true}};

std::string when(double days) {
  if (days < 1.0 / 1440) return "under a minute";
  if (days < 1.0 / 24) return fmt::format("{:.0f} min", days * 24 * 60);
  if (days < 1) return fmt::format("{:.0f} h", days * 24);
  if (days < 60) return fmt::format("{:.0f} days", days);
  return fmt::format("{:.0f} weeks", days / 7);
}

int run_trends(const DbOptions& opt) {
  const std::string path = store::store_path(opt.db);
  store::Store s(path, store::Store::Mode::read);
  const double since = db::since_days(opt.since, std::time(nullptr));
  json out{{"store", store::store_name(path)},  {"since", opt.since},
           {"drifting", json::array()},         {"flaky", json::array()},
           {"repeat_offenders", json::array()}, {"new_since_accepted", json::array()}};
  std::vector<std::string> lines;

  for (const Judged& j : kDrift) {
    const auto series = s.series(j.metric, since);
    const auto drifts = db::drifting(series, j.higher_better, s.finding_limit(j.metric), opt.trend);
    for (const auto& d : drifts) {
      lines.push_back(fmt::format(
          "drifting  {} {}: {:.3f} -> {:.3f} {} over its last {} runs ({:+.1f}%, {:+.3f} per run, {:+.3f} per week; "
          "run-to-run noise {:.3f}), every run passed{}",
          d.thing.name, d.metric, d.first, d.last, d.unit, d.runs, d.change * 100, d.per_run, d.per_week, d.noise,
          d.crosses_in_days ? fmt::format("; reaches the finding threshold in about {}", when(*d.crosses_in_days))
                            : ""));
      json e{{"thing", d.thing.name}, {"kind", d.thing.kind},   {"metric", d.metric}, {"unit", d.unit},
             {"runs", d.runs},        {"first", d.first},       {"last", d.last},     {"change", d.change},
             {"per_run", d.per_run},  {"per_week", d.per_week}, {"noise", d.noise}};
      if (d.crosses_in_days) e["crosses_in_days"] = *d.crosses_in_days;
      out["drifting"].push_back(std::move(e));
    }
  }
  for (const auto& f : db::flaky(s.series("tx", since), opt.trend)) {
    lines.push_back(fmt::format("flaky     {}: {} of its last {} runs failed, {} changes ({}, oldest first)",
                                f.thing.name, f.failed, f.runs, f.changes, f.pattern));
    out["flaky"].push_back(json{{"thing", f.thing.name},
                                {"runs", f.runs},
                                {"failed", f.failed},
                                {"changes", f.changes},
                                {"pattern", f.pattern}});
  }
  for (const auto& o : s.failed_things(since)) {
    if (o.times < opt.repeat) continue;
    lines.push_back(fmt::format("repeat    {} {}: drained in {} runs, the last at {}", o.thing.kind, o.thing.name,
                                o.times, o.last_at));
    out["repeat_offenders"].push_back(
        json{{"thing", o.thing.name}, {"kind", o.thing.kind}, {"drained", o.times}, {"last", o.last_at}});
  }
  for (const auto& [latest, accepted] : s.latest_and_accepted()) {
    std::set<std::string> before;
    if (accepted)
      for (const auto& f : s.findings_of(accepted)) before.insert(f.kind + "|" + f.code + "|" + f.subject);
    for (const auto& f : s.findings_of(latest)) {
      if (before.count(f.kind + "|" + f.code + "|" + f.subject)) continue;
      lines.push_back(fmt::format(
          "new       {} {} {}: {} (SU {}, run of {}; {})", f.severity, f.code.empty() ? f.kind : f.code, f.subject,
          f.reason, s.run_su(latest), s.run_started(latest),
          accepted ? "not in its last accepted run of " + s.run_started(accepted) : "the SU has no accepted run"));
      out["new_since_accepted"].push_back(json{{"su", s.run_su(latest)},
                                               {"severity", f.severity},
                                               {"code", f.code},
                                               {"subject", f.subject},
                                               {"reason", f.reason}});
    }
  }
  if (opt.json) {
    fmt::print("{}\n", out.dump(2));
  } else {
    fmt::print("# railbench db trends: {} since {}\n", store::store_name(path), opt.since);
    for (const auto& l : lines) fmt::print("{}\n", l);
    fmt::print("# {} drifting, {} flaky, {} repeat offender(s), {} new since the last accepted run\n",
               out["drifting"].size(), out["flaky"].size(), out["repeat_offenders"].size(),
               out["new_since_accepted"].size());
  }
  return 0;
}

const bool cmd_db_registered = register_subcommand(Subcommand{
    "db", "The run store: ingest results files, what it holds, trends across runs (drifting, flaky, repeat links)", 77,
    [](CLI::App& sub, CommonOptions&) {
      auto opt = std::make_shared<DbOptions>();
      sub.require_subcommand(1);
      const auto db_option = [opt](CLI::App& app) {
        app.add_option("--db", opt->db,
                       "The store (default: $RAILBENCH_DB, else $XDG_DATA_HOME/railbench/railbench.db, else "
                       "~/.local/share/railbench/railbench.db)");
      };
      CLI::App* ingest = sub.add_subcommand("ingest", "Put results files (--json of any command) into the store");
      ingest->add_option("files", opt->files, "Results files; a run already in the store is kept once")->required();
      db_option(*ingest);
      CLI::App* info = sub.add_subcommand("info", "The store's path, schema version and what it holds");
      db_option(*info);
      CLI::App* trends = sub.add_subcommand("trends",
                                            "Links drifting while they pass, flaky ones, repeat offenders, "
                                            "findings new since each SU's last accepted run");
      db_option(*trends);
      trends->add_option("--since", opt->since, "Only runs this recent: 30d, 12w, 48h, or all (default 90d)");
      trends->add_option("--window", opt->trend.window, "The last runs of each link that are judged (default 20)")
          ->check(CLI::Range(3, 1000));
      trends->add_option("--repeat", opt->repeat, "Drained this many times is a repeat offender (default 2)")
          ->check(CLI::Range(1, 1000));
      trends->add_flag("--json", opt->json, "The answer as JSON on standard output");
      return SubcommandRun{[opt, ingest, info, trends] {
                             if (!first_rank_by_environment()) return std::optional<int>(0);
                             if (ingest->parsed()) return std::optional<int>(run_ingest(*opt));
                             if (info->parsed()) return std::optional<int>(run_info(*opt));
                             if (trends->parsed()) return std::optional<int>(run_trends(*opt));
                             return std::optional<int>(2);
                           },
                           {}};
    }});

}  // namespace
}  // namespace railbench
