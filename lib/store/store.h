// The run store: every run's results in one database (a SQLite file, or a PostgreSQL
// server that a fleet's jobs share: database.h), so that a link's figures,
// findings and drains can be read run by run across months (bench/offline/db/README.md).
// The results file stays the record of truth; the store is built from results files and
// can be rebuilt from them (`railbench db ingest`).
//
// Things are named as an operator names them: a node ("node03"), a NIC by its node and
// rail ("node03:rail1"), a pair test's link from NIC to NIC ("node03:rail1-node07:rail1",
// the two ends in name order), a fabric link as the SU config names it
// ("su1-leaf0-spine2"), a collective by command and size ("allreduce 1M").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/errors.h"

namespace railbench::store {

class Database;

// The schema this railbench writes and reads (schema.cc: each version's migration).
int current_schema_version();

// Where the store is: `given` when not empty (--db PATH), else $RAILBENCH_DB, else
// $XDG_DATA_HOME/railbench/railbench.db, else ~/.local/share/railbench/railbench.db.
// Either a SQLite file's path or a PostgreSQL URL (postgresql://USER@HOST/DB).
std::string store_path(const std::string& given);
// Where a run with --db and no --json writes its results file: the folder `results`
// beside a SQLite store; for a PostgreSQL store, $XDG_DATA_HOME/railbench/results (else
// ~/.local/share/railbench/results).
std::string results_folder(const std::string& store);
// The store as messages name it: a PostgreSQL URL without its password.
std::string store_name(const std::string& store);

// ---- one run, as rows (ingest.cc; no database involved) ----
struct RunRow {
  std::string key;  // the results file's run_id; for a file without one, a hash of what identifies the run
  std::string command, started_at, finished_at, status, verdict, transport, su, hosts, version, config;
};
struct FigureRow {
  std::string thing_kind, thing;  // "nic", "node03:rail1"
  std::string metric, unit;       // "tx", "GB/s"
  double value = 0;
};
struct FindingRow {
  std::string thing_kind, thing;  // empty kind: a subject that names no thing the store keeps
  std::string severity, kind, code, subject, reason;
};
// One pair test of validate, as the results file has it: both ends by node index (into
// RunRows::nodes) and rail. A 1,024 x 8 SU's run holds 4 M of them, so they stay this
// small and go into their own table (pair_tests), not one figure row per value.
struct PairRow {
  int32_t node_a = 0, rail_a = 0, node_b = 0, rail_b = 0;
  double bw_ab = 0, bw_ba = 0, lat_p50 = 0, lat_p99 = 0;
};
struct RunRows {
  RunRow run;
  std::vector<FigureRow> figures;
  std::vector<FindingRow> findings;
  std::vector<FindingRow> drains;  // the things the run's drain list named (severity and kind empty)
  std::vector<std::string> nodes;  // validate's nodes, in the config's order
  std::vector<PairRow> pairs;      // validate's finished rail and cross-rail pair tests
};
// The rows of one results document (railbench.result). Throws UsageError naming `source`
// when it is not a results file.
RunRows rows_of(const nlohmann::json& doc, const std::string& source);
// The same from the file at `path`, its pair tests read one at a time (a 1,024 x 8 file's
// 4 M pair records are never one document). Throws UsageError as read_results_file does.
RunRows rows_of_file(const std::string& path, const std::string& who);
// "node03:rail1-node07:rail1" for two NICs in either order.
std::string link_name(const std::string& node_a, int rail_a, const std::string& node_b, int rail_b);

// ---- queries' answers ----
struct ThingRef {
  std::string kind, name;
};
struct HistoryRun {
  int64_t run = 0;
  std::string key, command, started_at, verdict, status;
  std::vector<std::pair<std::string, double>> figures;  // metric, value, in metric order
  std::vector<std::string> findings;                    // "FAIL RB-...: reason"
};
struct SeriesPoint {
  int64_t run = 0;
  double t_days = 0;  // started_at, in days since the Unix epoch
  double value = 0;
  bool passed = true;  // no FAIL finding named the thing in that run (a WARN is a pass)
};
struct Series {
  ThingRef thing;
  std::string metric, unit;
  std::vector<SeriesPoint> points;  // oldest first
};
struct Offender {
  ThingRef thing;
  int times = 0;
  std::string last_at;
};

// Store::ingest stopped by an interrupt signal (SIGTERM, SIGINT, SIGHUP) before its
// commit: the run was rolled back, and the store holds nothing of it. The caller says so
// and ends with 128 + signal().
class IngestInterrupted : public IoError {
 public:
  IngestInterrupted(int sig, const std::string& what) : IoError(what), signal_(sig) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

class Store {
 public:
  enum class Mode { read, write };
  // Opens the store at `path` (store_path's answer), creating it and its folder for
  // writing; brings an older schema up to date. Throws IoError naming the path and the
  // fix (a read-only or corrupt file, a full disk) and UsageError for a store written by
  // a newer railbench.
  Store(const std::string& path, Mode mode);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  struct Ingested {
    std::string key;
    bool added = false;  // false: the run was there already
    size_t figures = 0, findings = 0;
  };
  // One run in one transaction: all of it or nothing. A first interrupt signal while it
  // writes rolls it back and throws IngestInterrupted; a second one ends the process at
  // once (the engine discards the uncommitted transaction).
  Ingested ingest(const RunRows& rows, const std::string& source);

  int schema_version() const;
  // Rows per table: runs, things, figures, pair_tests, findings, drains.
  std::vector<std::pair<std::string, int64_t>> counts() const;
  // The things whose name is `text`; for a node's name, also its NICs.
  std::vector<ThingRef> find_things(const std::string& text) const;
  std::vector<HistoryRun> history(const ThingRef& thing, int last) const;
  // Every thing's series of `metric` since `since_days` (days since the epoch).
  std::vector<Series> series(const std::string& metric, double since_days) const;
  // Every thing a drain list named since `since_days`, with in how many runs, most first.
  std::vector<Offender> failed_things(double since_days) const;
  // The latest validate run of each SU and, before it, the last one that passed.
  std::vector<std::pair<int64_t, int64_t>> latest_and_accepted() const;
  std::vector<FindingRow> findings_of(int64_t run) const;
  // Where a finding starts for `metric`, from the newest validate run's config: for
  // "tx/rail" and "rx/rail", 1 - its rel_bw_below_median. nullopt when no run says.
  std::optional<double> finding_limit(const std::string& metric) const;
  // One metric of every NIC over the newest `last_runs` complete validate runs of the SU
  // named `su`, oldest first: the history validate --db judges a link against.
  struct NicValues {
    int runs = 0;                                        // how many runs it was drawn from
    std::vector<std::pair<std::string, double>> values;  // (NIC, value)
  };
  NicValues validate_nic_values(const std::string& su, const std::string& metric, int last_runs) const;
  // The newest `last` complete collective sweeps (allreduce, allgather, reducescatter,
  // alltoall), newest first: each run's hosts in rank order and its out-of-place busbw
  // per size (the things "allreduce 4M"), for compare --job --db.
  struct CollectiveRun {
    std::string key, command, started_at, hosts, source;
    int ranks = 0;                                      // 0: ingested before the store kept it
    std::vector<std::pair<std::string, double>> busbw;  // (thing name, GB/s)
  };
  std::vector<CollectiveRun> collective_runs(int last) const;
  std::string run_started(int64_t run) const;
  std::string run_su(int64_t run) const;

 private:
  std::vector<HistoryRun> link_history(const ThingRef& thing, int last) const;
  std::unique_ptr<Database> db_;
};

// "2026-11-29T05:28:03Z" (or with fractions / an offset) as days since the epoch; nullopt
// for text that is no such time.
std::optional<double> days_of(const std::string& iso8601);

}  // namespace railbench::store
