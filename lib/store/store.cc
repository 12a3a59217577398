#include "lib/store/store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/runtime/signals.h"
#include "lib/store/database.h"
#include "lib/store/schema.h"

namespace railbench::store {

namespace {

// Eight jobs ending at once each wait for the others' transactions: a run's ingest is
// well under a second, so a minute is a stuck writer, not a busy one.
constexpr int kBusyTimeoutMs = 60000;

// Turns a new store to WAL. The switch needs the file to itself, and SQLite answers
// "database is locked" at once, without waiting out the busy timeout, while another
// connection has it open (eight jobs creating one store at once: three of them failed
// that way in a CI run). It is tried again until the busy timeout; a store already in
// WAL takes it at once.
void set_wal(Database& db, const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (int attempt = 0;; ++attempt) {
    try {
      db.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (const IoError& e) {
      const bool locked = std::string(e.what()).find("locked") != std::string::npos;
      if (!locked) throw;
      if (std::chrono::steady_clock::now() >= deadline)
        throw IoError(
            fmt::format("run store {}: another process kept it locked for {} s: wait for it, or give "
                        "another store with --db PATH",
                        path, kBusyTimeoutMs / 1000));
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(5 + 5 * attempt, 100)));
    }
  }
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void make_parent(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec)
    throw IoError(
        fmt::format("run store {}: cannot make its folder {} ({}): give a writable path with --db PATH or "
                    "RAILBENCH_DB",
                    path, parent.string(), ec.message()));
}

std::unique_ptr<Database> open_database(const std::string& path, Store::Mode mode) {
  const bool write = mode == Store::Mode::write;
  if (is_postgres_url(path)) {
    auto db = open_postgres(path, !write, kBusyTimeoutMs);
    migrate(*db, write);
    return db;
  }
  if (!write && access(path.c_str(), F_OK) != 0)
    throw IoError(
        fmt::format("run store {}: there is none: ingest runs first (railbench db ingest FILE..., or --db "
                    "on a run), or name the store with --db PATH",
                    path));
  if (write) {
    make_parent(path);
    if (access(path.c_str(), F_OK) == 0 && access(path.c_str(), W_OK) != 0)
      throw IoError(
          fmt::format("run store {}: it is read-only for this user: make it writable, or give another "
                      "store with --db PATH",
                      path));
  }
  auto db = open_sqlite(path, !write, write, kBusyTimeoutMs);
  try {
    if (write) {
      set_wal(*db, path);
      db->exec("PRAGMA synchronous = NORMAL");
    }
    db->exec("PRAGMA foreign_keys = ON");
    migrate(*db, write);
  } catch (const UsageError&) {
    throw;
  } catch (const StoreFullError&) {
    throw;
  } catch (const IoError& e) {
    throw IoError(
        fmt::format("{}: if the file is damaged, move it aside and rebuild the store from the results "
                    "files (railbench db ingest FILE...)",
                    e.what()));
  }
  return db;
}

int64_t thing_id(Database& db, std::map<std::pair<std::string, std::string>, int64_t>& cache, const std::string& kind,
                 const std::string& name) {
  const auto key = std::make_pair(kind, name);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  auto ins = db.prepare("INSERT INTO things(kind, name) VALUES (?, ?) ON CONFLICT DO NOTHING");
  ins.bind(1, kind).bind(2, name).run();
  auto sel = db.prepare("SELECT id FROM things WHERE kind = ? AND name = ?");
  sel.bind(1, kind).bind(2, name);
  sel.step();
  return cache[key] = sel.int_at(0);
}

// Throws IngestInterrupted once an interrupt signal was recorded: called for every row,
// so a 4 M-row run stops within a row of the signal (an atomic load each).
class InterruptCheck {
 public:
  InterruptCheck(const Database& db, const std::string& source) : db_(db), source_(source) {}
  void operator()() {
    if (const int sig = deferred_.take())
      throw IngestInterrupted(
          sig, fmt::format("run store {}: interrupted by {} while putting {} in: its transaction was rolled "
                           "back, the store holds nothing of that run",
                           db_.name(), signal_name(sig), source_));
  }

 private:
  InterruptsDeferred deferred_;
  const Database& db_;
  const std::string& source_;
};

// validate's pair tests into pair_tests, each end a NIC thing, the first in name order.
void insert_pairs(Database& db, std::map<std::pair<std::string, std::string>, int64_t>& things, const RunRows& rows,
                  int64_t run, InterruptCheck& interrupted) {
  if (rows.pairs.empty()) return;
  struct End {
    std::string name;
    int64_t id = 0;
  };
  std::map<std::pair<int32_t, int32_t>, End> ends;  // (node, rail): a few thousand NICs
  const auto end = [&](int32_t node, int32_t rail) -> const End* {
    if (node < 0 || static_cast<size_t>(node) >= rows.nodes.size()) return nullptr;
    auto [it, added] = ends.try_emplace({node, rail});
    if (added) {
      it->second.name = fmt::format("{}:rail{}", rows.nodes[static_cast<size_t>(node)], rail);
      it->second.id = thing_id(db, things, "nic", it->second.name);
    }
    return &it->second;
  };
  auto st = db.prepare(
      "INSERT INTO pair_tests(a, b, run, bw_ab, bw_ba, lat_p50, lat_p99) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (a, "
      "b, run) DO UPDATE SET bw_ab = excluded.bw_ab, bw_ba = excluded.bw_ba, lat_p50 = excluded.lat_p50, lat_p99 = "
      "excluded.lat_p99");
  for (const PairRow& p : rows.pairs) {
    interrupted();
    const End* a = end(p.node_a, p.rail_a);
    const End* b = end(p.node_b, p.rail_b);
    if (!a || !b) continue;
    const bool swap = b->name < a->name;
    st.bind(1, (swap ? b : a)->id).bind(2, (swap ? a : b)->id).bind(3, run);
    st.bind(4, swap ? p.bw_ba : p.bw_ab).bind(5, swap ? p.bw_ab : p.bw_ba).bind(6, p.lat_p50).bind(7, p.lat_p99);
    st.run();
  }
}

// "node03:rail1-node07:rail1" as its two NIC names; false for text of no such form.
bool split_link(const std::string& text, std::string& a, std::string& b) {
  for (size_t at = text.find(":rail"); at != std::string::npos; at = text.find(":rail", at + 1)) {
    size_t i = at + 5;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == at + 5 || i >= text.size() || text[i] != '-') continue;
    a = text.substr(0, i), b = text.substr(i + 1);
    return !b.empty();
  }
  return false;
}

}  // namespace

namespace {

// $XDG_DATA_HOME/railbench, else ~/.local/share/railbench.
std::string data_folder() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) return std::string(xdg) + "/railbench";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.local/share/railbench";
  throw UsageError("run store: no --db PATH, RAILBENCH_DB, XDG_DATA_HOME or HOME to place it: give --db PATH");
}

}  // namespace

std::string store_path(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("RAILBENCH_DB"); env && *env) return env;
  return data_folder() + "/railbench.db";
}

std::string results_folder(const std::string& store) {
  if (is_postgres_url(store)) return data_folder() + "/results";
  const auto parent = std::filesystem::path(store).parent_path();
  return (parent.empty() ? std::filesystem::path("results") : parent / "results").string();
}

std::string store_name(const std::string& store) {
  return is_postgres_url(store) ? redact_url(store) : store;
}

std::optional<double> days_of(const std::string& iso) {
  std::tm tm{};
  const char* rest = strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest) return std::nullopt;
  double frac = 0;
  if (*rest == '.') {
    char* end = nullptr;
    frac = std::strtod(rest, &end);
    rest = end;
  }
  long offset_s = 0;
  if (*rest == '+' || *rest == '-') {
    int hh = 0, mm = 0;
    if (std::sscanf(rest + 1, "%2d:%2d", &hh, &mm) < 1) return std::nullopt;
    offset_s = (*rest == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
  } else if (*rest != 'Z' && *rest != '\0') {
    return std::nullopt;
  }
  const double seconds = static_cast<double>(timegm(&tm)) + frac - static_cast<double>(offset_s);
  return seconds / 86400.0;
}

Store::Store(const std::string& path, Mode mode) : db_(open_database(path, mode)) {}

Store::~Store() = default;

int Store::schema_version() const {
  return db_->schema_version();
}

Store::Ingested Store::ingest(const RunRows& rows, const std::string& source) {
  Ingested out{rows.run.key};
  const auto t_days = days_of(rows.run.started_at);
  if (!t_days)
    throw UsageError(fmt::format("{}: its started_at '{}' is no ISO 8601 time: give a results file railbench wrote",
                                 source, rows.run.started_at));
  Transaction t(*db_);
  // Declared after the transaction, so ended before its rollback: a first SIGTERM from
  // here on rolls the run back and ends the ingest with one line, rather than ending the
  // process with the transaction open. Not before BEGIN: a wait for another writer's
  // lock (up to a minute) must not hold a signal back.
  InterruptCheck interrupted(*db_, source);
  {
    auto seen = db_->prepare("SELECT id FROM runs WHERE run_key = ?");
    seen.bind(1, rows.run.key);
    if (seen.step()) return out;  // the same run twice: one copy
  }
  const RunRow& r = rows.run;
  auto run = db_->prepare(
      "INSERT INTO runs(run_key, command, started_at, t_days, finished_at, status, verdict, transport, su, hosts, "
      "version, config, source, ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
  run.bind(1, r.key).bind(2, r.command).bind(3, r.started_at).bind(4, *t_days).bind(5, r.finished_at);
  run.bind(6, r.status).bind(7, r.verdict).bind(8, r.transport).bind(9, r.su).bind(10, r.hosts);
  run.bind(11, r.version).bind(12, r.config).bind(13, source).bind(14, now_utc());
  run.step();
  const int64_t run_id = run.int_at(0);
  run.reset();

  std::map<std::pair<std::string, std::string>, int64_t> things;
  auto fig = db_->prepare(
      "INSERT INTO figures(thing, metric, run, unit, value) VALUES (?, ?, ?, ?, ?) ON CONFLICT (thing, metric, run) DO "
      "UPDATE SET unit = excluded.unit, value = excluded.value");
  for (const FigureRow& f : rows.figures) {
    interrupted();
    fig.bind(1, thing_id(*db_, things, f.thing_kind, f.thing)).bind(2, f.metric).bind(3, run_id);
    fig.bind(4, f.unit).bind(5, f.value).run();
  }
  auto find = db_->prepare(
      "INSERT INTO findings(run, thing, severity, kind, code, subject, reason) VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (const FindingRow& f : rows.findings) {
    interrupted();
    find.bind(1, run_id);
    if (f.thing_kind.empty())
      find.bind_null(2);
    else
      find.bind(2, thing_id(*db_, things, f.thing_kind, f.thing));
    find.bind(3, f.severity).bind(4, f.kind).bind(5, f.code).bind(6, f.subject).bind(7, f.reason).run();
  }
  insert_pairs(*db_, things, rows, run_id, interrupted);
  auto drain = db_->prepare("INSERT INTO drains(run, thing, reason) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
  for (const FindingRow& d : rows.drains) {
    interrupted();
    drain.bind(1, run_id).bind(2, thing_id(*db_, things, d.thing_kind, d.thing)).bind(3, d.reason).run();
  }
  interrupted();
  t.commit();
  out.added = true;
  out.figures = rows.figures.size() + 4 * rows.pairs.size();
  out.findings = rows.findings.size();
  return out;
}

std::vector<std::pair<std::string, int64_t>> Store::counts() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const char* table : {"runs", "things", "figures", "pair_tests", "findings", "drains"}) {
    auto st = db_->prepare(fmt::format("SELECT count(*) FROM {}", table));
    st.step();
    out.emplace_back(table, st.int_at(0));
  }
  return out;
}

std::vector<ThingRef> Store::find_things(const std::string& text) const {
  std::vector<ThingRef> out;
  auto st = db_->prepare("SELECT kind, name FROM things WHERE name = ? ORDER BY kind");
  st.bind(1, text);
  while (st.step()) out.push_back({st.text_at(0), st.text_at(1)});
  if (std::string a, b; out.empty() && split_link(text, a, b)) {
    // A pair test's link: both NICs known, named in either order.
    auto nic = db_->prepare("SELECT count(*) FROM things WHERE kind = 'nic' AND name IN (?, ?)");
    nic.bind(1, a).bind(2, b);
    if (nic.step() && nic.int_at(0) == 2) out.push_back({"link", b < a ? b + "-" + a : a + "-" + b});
    return out;
  }
  if (text.find(':') != std::string::npos) return out;
  // A node: also its NICs, node03:rail0, node03:rail1, ...
  auto nics = db_->prepare("SELECT kind, name FROM things WHERE kind = 'nic' AND substr(name, 1, ?) = ? ORDER BY name");
  nics.bind(1, static_cast<int64_t>(text.size() + 1)).bind(2, text + ":");
  while (nics.step()) out.push_back({nics.text_at(0), nics.text_at(1)});
  return out;
}

std::vector<HistoryRun> Store::link_history(const ThingRef& thing, int last) const {
  std::vector<HistoryRun> out;
  std::string a, b;
  if (!split_link(thing.name, a, b)) return out;
  auto st = db_->prepare(
      "SELECT r.id, r.run_key, r.command, r.started_at, r.verdict, r.status, p.bw_ab, p.bw_ba, p.lat_p50, p.lat_p99 "
      "FROM pair_tests p JOIN runs r ON r.id = p.run WHERE p.a = (SELECT id FROM things WHERE kind = 'nic' AND name "
      "= ?) AND p.b = (SELECT id FROM things WHERE kind = 'nic' AND name = ?) ORDER BY r.t_days DESC, r.id DESC "
      "LIMIT ?");
  st.bind(1, a).bind(2, b).bind(3, static_cast<int64_t>(last));
  while (st.step())
    out.push_back({st.int_at(0),
                   st.text_at(1),
                   st.text_at(2),
                   st.text_at(3),
                   st.text_at(4),
                   st.text_at(5),
                   {{"bw a->b", st.double_at(6)},
                    {"bw b->a", st.double_at(7)},
                    {"lat p50", st.double_at(8)},
                    {"lat p99", st.double_at(9)}},
                   {}});
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<HistoryRun> Store::history(const ThingRef& thing, int last) const {
  if (thing.kind == "link") return link_history(thing, last);
  std::vector<HistoryRun> out;
  auto id = db_->prepare("SELECT id FROM things WHERE kind = ? AND name = ?");
  id.bind(1, thing.kind).bind(2, thing.name);
  if (!id.step()) return out;
  const int64_t tid = id.int_at(0);
  // The runs that measured it or named it, newest `last`, then oldest first.
  auto runs = db_->prepare(
      "SELECT id, run_key, command, started_at, verdict, status FROM runs WHERE id IN (SELECT run FROM figures WHERE "
      "thing = ?1 UNION SELECT run FROM findings WHERE thing = ?1 UNION SELECT run FROM drains WHERE thing = ?1) "
      "ORDER BY t_days DESC, id DESC LIMIT ?2");
  runs.bind(1, tid).bind(2, static_cast<int64_t>(last));
  while (runs.step())
    out.push_back(
        {runs.int_at(0), runs.text_at(1), runs.text_at(2), runs.text_at(3), runs.text_at(4), runs.text_at(5), {}, {}});
  std::reverse(out.begin(), out.end());
  auto figs = db_->prepare("SELECT metric, value FROM figures WHERE thing = ? AND run = ? ORDER BY metric");
  auto finds =
      db_->prepare("SELECT severity, code, reason, kind FROM findings WHERE thing = ? AND run = ? ORDER BY id");
  auto drained = db_->prepare("SELECT reason FROM drains WHERE thing = ? AND run = ?");
  for (HistoryRun& h : out) {
    figs.bind(1, tid).bind(2, h.run);
    while (figs.step()) h.figures.emplace_back(figs.text_at(0), figs.double_at(1));
    figs.reset();
    finds.bind(1, tid).bind(2, h.run);
    // A file from before reason codes has none: its finding's kind says what it was.
    while (finds.step())
      h.findings.push_back(fmt::format("{} {}: {}", finds.text_at(0),
                                       finds.text_at(1).empty() ? finds.text_at(3) : finds.text_at(1),
                                       finds.text_at(2)));
    finds.reset();
    drained.bind(1, tid).bind(2, h.run);
    while (drained.step()) h.findings.push_back("DRAINED: " + drained.text_at(0));
    drained.reset();
  }
  return out;
}

std::vector<Series> Store::series(const std::string& metric, double since_days) const {
  std::vector<Series> out;
  auto st = db_->prepare(
      "SELECT t.kind, t.name, f.unit, r.id, r.t_days, f.value, CASE WHEN EXISTS (SELECT 1 FROM findings x WHERE x.run "
      "= r.id AND x.thing = t.id AND x.severity = 'FAIL') THEN 1 ELSE 0 END FROM figures f JOIN things t ON t.id = "
      "f.thing JOIN runs r ON r.id "
      "= f.run WHERE "
      "f.metric = ? AND r.t_days >= ? ORDER BY t.kind, t.name, r.t_days, r.id");
  st.bind(1, metric).bind(2, since_days);
  while (st.step()) {
    const std::string kind = st.text_at(0), name = st.text_at(1);
    if (out.empty() || out.back().thing.kind != kind || out.back().thing.name != name)
      out.push_back({{kind, name}, metric, st.text_at(2), {}});
    out.back().points.push_back({st.int_at(3), st.double_at(4), st.double_at(5), st.int_at(6) == 0});
  }
  return out;
}

std::vector<Offender> Store::failed_things(double since_days) const {
  std::vector<Offender> out;
  auto st = db_->prepare(
      "SELECT t.kind, t.name, count(DISTINCT d.run), max(r.started_at) FROM drains d JOIN things t ON t.id = d.thing "
      "JOIN runs r ON r.id = d.run WHERE r.t_days >= ? GROUP BY t.id ORDER BY 3 DESC, t.name");
  st.bind(1, since_days);
  while (st.step()) out.push_back({{st.text_at(0), st.text_at(1)}, static_cast<int>(st.int_at(2)), st.text_at(3)});
  return out;
}

std::vector<std::pair<int64_t, int64_t>> Store::latest_and_accepted() const {
  std::vector<std::pair<int64_t, int64_t>> out;
  auto sus = db_->prepare("SELECT DISTINCT su FROM runs WHERE command = 'validate' AND su != '' ORDER BY su");
  auto latest = db_->prepare(
      "SELECT id, t_days FROM runs WHERE command = 'validate' AND su = ? ORDER BY t_days DESC, id DESC LIMIT 1");
  auto accepted = db_->prepare(
      "SELECT id FROM runs WHERE command = 'validate' AND su = ? AND verdict = 'PASS' AND status = 'complete' AND "
      "(t_days < ? OR (t_days = ? AND id < ?)) ORDER BY t_days DESC, id DESC LIMIT 1");
  while (sus.step()) {
    const std::string su = sus.text_at(0);
    latest.bind(1, su);
    if (!latest.step()) continue;
    const int64_t id = latest.int_at(0);
    const double t = latest.double_at(1);
    latest.reset();
    accepted.bind(1, su).bind(2, t).bind(3, t).bind(4, id);
    const int64_t acc = accepted.step() ? accepted.int_at(0) : 0;
    accepted.reset();
    out.emplace_back(id, acc);
  }
  return out;
}

std::vector<FindingRow> Store::findings_of(int64_t run) const {
  std::vector<FindingRow> out;
  auto st = db_->prepare(
      "SELECT coalesce(t.kind, ''), coalesce(t.name, ''), f.severity, f.kind, f.code, f.subject, f.reason FROM "
      "findings f LEFT JOIN things t ON t.id = f.thing WHERE f.run = ? ORDER BY f.id");
  st.bind(1, run);
  while (st.step())
    out.push_back(
        {st.text_at(0), st.text_at(1), st.text_at(2), st.text_at(3), st.text_at(4), st.text_at(5), st.text_at(6)});
  return out;
}

std::optional<double> Store::finding_limit(const std::string& metric) const {
  if (metric != "tx/rail" && metric != "rx/rail") return std::nullopt;
  // The config is read here, not by the engine's JSON functions: SQLite's and PostgreSQL's differ.
  auto st = db_->prepare(
      "SELECT config FROM runs WHERE command = 'validate' AND config LIKE '%\"rel_bw_below_median\"%' ORDER BY "
      "t_days DESC, id DESC LIMIT 1");
  if (!st.step()) return std::nullopt;
  const auto config = nlohmann::json::parse(st.text_at(0), nullptr, false);
  const auto it = config.is_object() ? config.find("rel_bw_below_median") : config.end();
  if (it == config.end() || !it->is_number()) return std::nullopt;
  return 1 - it->get<double>();
}

Store::NicValues Store::validate_nic_values(const std::string& su, const std::string& metric, int last_runs) const {
  NicValues out;
  auto runs = db_->prepare(
      "SELECT id FROM runs WHERE command = 'validate' AND su = ? AND status = 'complete' ORDER BY t_days DESC, id "
      "DESC LIMIT ?");
  runs.bind(1, su).bind(2, static_cast<int64_t>(last_runs));
  std::vector<int64_t> ids;
  while (runs.step()) ids.push_back(runs.int_at(0));
  out.runs = static_cast<int>(ids.size());
  std::reverse(ids.begin(), ids.end());
  auto st = db_->prepare(
      "SELECT t.name, f.value FROM figures f JOIN things t ON t.id = f.thing WHERE f.run = ? AND f.metric = ? AND "
      "t.kind = 'nic' ORDER BY t.name");
  for (const int64_t id : ids) {
    st.bind(1, id).bind(2, metric);
    while (st.step()) out.values.emplace_back(st.text_at(0), st.double_at(1));
    st.reset();
  }
  return out;
}

std::vector<Store::CollectiveRun> Store::collective_runs(int last) const {
  std::vector<CollectiveRun> out;
  std::vector<int64_t> ids;
  auto runs = db_->prepare(
      "SELECT id, run_key, command, started_at, COALESCE(hosts, ''), COALESCE(source, '') FROM runs WHERE command IN "
      "('allreduce', 'allgather', 'reducescatter', 'alltoall') AND status = 'complete' ORDER BY t_days DESC, id DESC "
      "LIMIT ?");
  runs.bind(1, static_cast<int64_t>(last));
  while (runs.step()) {
    ids.push_back(runs.int_at(0));
    out.push_back(
        CollectiveRun{runs.text_at(1), runs.text_at(2), runs.text_at(3), runs.text_at(4), runs.text_at(5), 0, {}});
  }
  auto st = db_->prepare(
      "SELECT t.name, f.metric, f.value FROM figures f JOIN things t ON t.id = f.thing WHERE f.run = ? AND f.metric "
      "IN ('busbw', 'ranks') AND t.kind = 'collective'");
  for (size_t i = 0; i < ids.size(); ++i) {
    st.bind(1, ids[i]);
    while (st.step()) {
      if (st.text_at(1) == "ranks")
        out[i].ranks = static_cast<int>(st.double_at(2));
      else
        out[i].busbw.emplace_back(st.text_at(0), st.double_at(2));
    }
    st.reset();
  }
  return out;
}

std::string Store::run_started(int64_t run) const {
  auto st = db_->prepare("SELECT started_at FROM runs WHERE id = ?");
  st.bind(1, run);
  return st.step() ? st.text_at(0) : "";
}

std::string Store::run_su(int64_t run) const {
  auto st = db_->prepare("SELECT su FROM runs WHERE id = ?");
  st.bind(1, run);
  return st.step() ? st.text_at(0) : "";
}

}  // namespace railbench::store
