// railbench history THING: one node's, NIC's, link's or fabric link's figures run by run
// from the run store, with its findings and drains (bench/offline/db/README.md).
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/offline/db/trends.h"
#include "lib/core/csv.h"
#include "lib/core/errors.h"
#include "lib/store/store.h"

namespace railbench {
namespace {

using nlohmann::json;

struct HistoryOptions {
  std::string thing;
  std::string db;
  int last = 30;
  bool json = false;
  bool csv = false;
};

// The things the text names: a NIC, link or fabric link as written; a node as itself (its
// findings and drains) and each of its NICs.
std::vector<store::ThingRef> resolve(const store::Store& s, const std::string& text) {
  auto found = s.find_things(text);
  if (found.empty())
    throw UsageError(
        fmt::format("history: the store has no '{}': name a node (node03), a NIC (node03:rail1), a "
                    "link (node03:rail1-node07:rail1, the two ends in name order) or a fabric link "
                    "(su1-leaf0-spine2) that a run measured",
                    text));
  return found;
}

std::vector<std::string> metrics_of(const std::vector<store::HistoryRun>& runs) {
  std::vector<std::string> out;
  for (const auto& r : runs)
    for (const auto& [m, v] : r.figures)
      if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  return out;
}

double value_of(const store::HistoryRun& r, const std::string& metric, bool& found) {
  for (const auto& [m, v] : r.figures)
    if (m == metric) return found = true, v;
  return found = false, 0;
}

void print_text(const store::ThingRef& t, const std::vector<store::HistoryRun>& runs) {
  const auto metrics = metrics_of(runs);
  fmt::print("# {} {}: {} run(s), oldest first\n", t.kind, t.name, runs.size());
  std::string head = fmt::format("{:<21} {:<10} {:<7}", "started", "command", "verdict");
  for (const auto& m : metrics) head += fmt::format(" {:>10}", m);
  fmt::print("{}\n", head);
  for (const auto& r : runs) {
    std::string line =
        fmt::format("{:<21} {:<10} {:<7}", r.started_at, r.command, r.verdict.empty() ? r.status : r.verdict);
    for (const auto& m : metrics) {
      bool found = false;
      const double v = value_of(r, m, found);
      line += found ? fmt::format(" {:>10.4g}", v) : fmt::format(" {:>10}", "-");
    }
    fmt::print("{}\n", line);
    for (const auto& f : r.findings) fmt::print("    {}\n", f);
  }
  for (const auto& m : metrics) {
    std::vector<double> values;
    for (const auto& r : runs) {
      bool found = false;
      const double v = value_of(r, m, found);
      if (found) values.push_back(v);
    }
    if (values.size() > 1)
      fmt::print("# {:<14} {}  {:.4g} .. {:.4g}\n", m, db::sparkline(values), values.front(), values.back());
  }
}

json history_json(const store::ThingRef& t, const std::vector<store::HistoryRun>& runs) {
  json out{{"thing", t.name}, {"kind", t.kind}, {"runs", json::array()}};
  for (const auto& r : runs) {
    json figs = json::object();
    for (const auto& [m, v] : r.figures) figs[m] = v;
    out["runs"].push_back(json{{"run", r.key},
                               {"command", r.command},
                               {"started_at", r.started_at},
                               {"verdict", r.verdict},
                               {"status", r.status},
                               {"figures", figs},
                               {"findings", r.findings}});
  }
  return out;
}

void history_csv(const store::ThingRef& t, const std::vector<store::HistoryRun>& runs, CsvTable& table) {
  const auto metrics = metrics_of(runs);
  for (const auto& m : metrics)
    if (std::find(table.header.begin(), table.header.end(), m) == table.header.end()) table.header.push_back(m);
  for (const auto& r : runs) {
    std::vector<std::string> row{t.name, r.key, r.started_at, r.command, r.verdict};
    std::string f;
    for (const auto& x : r.findings) f += (f.empty() ? "" : "; ") + x;
    row.push_back(f);
    for (size_t c = row.size(); c < table.header.size(); ++c) {
      bool found = false;
      const double v = value_of(r, table.header[c], found);
      row.push_back(found ? csv_cell(json(v)) : "");
    }
    table.rows.push_back(std::move(row));
  }
}

int run_history(const HistoryOptions& opt) {
  const std::string path = store::store_path(opt.db);
  store::Store s(path, store::Store::Mode::read);
  const auto things = resolve(s, opt.thing);
  json all{{"store", store::store_name(path)}, {"things", json::array()}};
  CsvTable table{{"thing", "run", "started_at", "command", "verdict", "findings"}, {}};
  for (const auto& t : things) {
    const auto runs = s.history(t, opt.last);
    if (opt.json)
      all["things"].push_back(history_json(t, runs));
    else if (opt.csv)
      history_csv(t, runs, table);
    else
      print_text(t, runs);
  }
  if (opt.json) fmt::print("{}\n", all.dump(2));
  if (opt.csv) {
    for (auto& row : table.rows) row.resize(table.header.size());  // a metric a later thing added
    const std::string text = to_csv(table);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}

const bool cmd_history_registered = register_subcommand(Subcommand{
    "history", "One node's, NIC's or link's figures, findings and drains run by run, from the run store", 78,
    [](CLI::App& sub, CommonOptions&) {
      auto opt = std::make_shared<HistoryOptions>();
      sub.add_option("thing", opt->thing,
                     "node03, node03:rail1, node03:rail1-node07:rail1 (a pair test's link) or su1-leaf0-spine2")
          ->required();
      sub.add_option("--db", opt->db, "The store (default: $RAILBENCH_DB, else $XDG_DATA_HOME/railbench/railbench.db)");
      sub.add_option("--last", opt->last, "The newest runs to show (default 30)")->check(CLI::Range(1, 100000));
      auto* j = sub.add_flag("--json", opt->json, "As JSON on standard output");
      sub.add_flag("--csv", opt->csv, "As CSV on standard output")->excludes(j);
      return SubcommandRun{[opt] { return std::optional<int>(first_rank_by_environment() ? run_history(*opt) : 0); },
                           {}};
    }});

}  // namespace
}  // namespace railbench
