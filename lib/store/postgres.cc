// The run store over PostgreSQL (database.h), through libpq: a server that every job of
// a fleet writes into, --db postgresql://USER@HOST/DB. Statements go as text with their
// parameters apart (PQexecParams), so no value is ever spliced into SQL.
#include <libpq-fe.h>

#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/store/database.h"

namespace railbench::store {

namespace {

// Every writer takes this transaction-scoped advisory lock first, so ingests take turns
// as they do on SQLite (the number is railbench's own: "RBST").
constexpr long long kWriteLock = 0x52425354;
// A server that does not answer within this is down or unreachable, not busy.
constexpr const char* kConnectTimeoutS = "10";

struct ResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultFree>;

// `?` and `?N` (SQLite's placeholders) as `$N`; text in quotes left as it is.
std::string to_dollar_params(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 8);
  int next = 0;
  bool quoted = false;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '\'') quoted = !quoted;
    if (c != '?' || quoted) {
      out += c;
      continue;
    }
    size_t j = i + 1;
    while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') ++j;
    if (j > i + 1) {
      out += '$';
      out.append(sql.substr(i + 1, j - i - 1));
      i = j - 1;
    } else {
      out += fmt::format("${}", ++next);
    }
  }
  return out;
}

class PgDatabase;

class PgCursor final : public Cursor {
 public:
  PgCursor(PgDatabase& db, std::string sql) : db_(db), sql_(std::move(sql)) {}
  void bind_int(int i, int64_t v) override { set(i, fmt::format("{}", v)); }
  void bind_double(int i, double v) override { set(i, fmt::format("{}", v)); }
  void bind_text(int i, std::string_view v) override { set(i, std::string(v)); }
  void bind_null(int i) override { slot(i).reset(); }
  bool step() override;
  void reset() override {
    result_.reset();
    row_ = -1;
    params_.clear();
  }
  int64_t int_at(int col) const override { return std::strtoll(value(col), nullptr, 10); }
  double double_at(int col) const override { return std::strtod(value(col), nullptr); }
  std::string text_at(int col) const override { return value(col); }
  bool null_at(int col) const override { return PQgetisnull(result_.get(), row_, col) != 0; }

 private:
  std::optional<std::string>& slot(int i) {
    if (params_.size() < static_cast<size_t>(i)) params_.resize(static_cast<size_t>(i));
    return params_[static_cast<size_t>(i - 1)];
  }
  void set(int i, std::string v) { slot(i) = std::move(v); }
  const char* value(int col) const { return PQgetvalue(result_.get(), row_, col); }

  PgDatabase& db_;
  std::string sql_;
  std::vector<std::optional<std::string>> params_;
  Result result_;
  int row_ = -1;
};

class PgDatabase final : public Database {
 public:
  PgDatabase(const std::string& url, bool read_only, int lock_timeout_ms) : name_(redact_url(url)) {
    // connect_timeout first: a URL's own setting, expanded after it, wins.
    const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* values[] = {kConnectTimeoutS, "railbench", url.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, 1);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      const std::string msg = conn_ ? trimmed(PQerrorMessage(conn_)) : "out of memory";
      PQfinish(conn_);
      conn_ = nullptr;
      throw IoError(
          fmt::format("run store {}: cannot connect ({}): start the server or correct the URL "
                      "(postgresql://USER@HOST[:PORT]/DB, or ?host=/socket/dir for a local socket), or give a SQLite "
                      "file with --db PATH",
                      name_, msg));
    }
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);  // CREATE ... IF NOT EXISTS notes
    exec(fmt::format("SET lock_timeout = {}", lock_timeout_ms));
    if (read_only) exec("SET default_transaction_read_only = on");
  }
  ~PgDatabase() override { PQfinish(conn_); }
  PgDatabase(const PgDatabase&) = delete;
  PgDatabase& operator=(const PgDatabase&) = delete;

  Engine engine() const override { return Engine::postgres; }
  const std::string& name() const override { return name_; }

  void exec(const std::string& sql) override { check(Result(PQexec(conn_, sql.c_str())), sql); }
  Statement prepare(std::string_view sql) override {
    return Statement(std::make_unique<PgCursor>(*this, to_dollar_params(sql)));
  }
  void begin_write() override {
    exec("BEGIN");
    exec(fmt::format("SELECT pg_advisory_xact_lock({})", kWriteLock));
  }
  void commit() override { exec("COMMIT"); }
  void rollback() noexcept override { PQclear(PQexec(conn_, "ROLLBACK")); }
  int schema_version() override {
    // A scan of the catalog, not to_regclass: a name lookup may answer from this
    // session's cache, made before another writer's migration committed.
    auto there = prepare(
        "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'railbench_schema' AND schemaname = "
        "current_schema()");
    there.step();
    if (there.int_at(0) == 0) return 0;
    auto st = prepare("SELECT max(version) FROM railbench_schema");
    return st.step() && !st.null_at(0) ? static_cast<int>(st.int_at(0)) : 0;
  }
  void set_schema_version(int v) override {
    exec("CREATE TABLE IF NOT EXISTS railbench_schema (version INTEGER NOT NULL)");
    exec(fmt::format("DELETE FROM railbench_schema; INSERT INTO railbench_schema VALUES ({})", v));
  }

  // Runs `sql` with `params` (nullopt: NULL); throws IoError with the server's message.
  Result run(const std::string& sql, const std::vector<std::optional<std::string>>& params) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    return check(Result(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                                     nullptr, nullptr, 0)),
                 sql);
  }

 private:
  // libpq's messages span lines ("...failed: ...\n\tIs the server running ..."): one
  // line, as every railbench error is.
  static std::string trimmed(const std::string& s) {
    std::string out;
    for (const char c : s) {
      if (c != '\n' && c != '\t' && c != '\r') {
        out += c;
      } else if (!out.empty() && out.back() != ' ') {
        out += ' ';
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  }
  Result check(Result r, const std::string& sql) {
    const auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return r;
    const std::string msg = trimmed(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_));
    if (PQstatus(conn_) != CONNECTION_OK)
      throw IoError(
          fmt::format("run store {}: the server closed the connection ({}): check that it is up, then "
                      "put the run in again (railbench db ingest FILE)",
                      name_, msg));
    // 53100 disk_full (class 53: insufficient resources): the server rolled the
    // transaction back; the fix is on the server's disk, not in the store.
    const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
    if (state != nullptr && std::string_view(state) == "53100")
      throw StoreFullError(
          fmt::format("run store {}: the server's disk is full ({}): free space on the database server", name_, msg));
    throw IoError(fmt::format("run store {}: '{}' failed: {}", name_, sql.substr(0, 60), msg));
  }

  std::string name_;
  PGconn* conn_ = nullptr;
};

bool PgCursor::step() {
  if (!result_) {
    result_ = db_.run(sql_, params_);
    row_ = -1;
  }
  return ++row_ < PQntuples(result_.get());
}

}  // namespace

std::unique_ptr<Database> open_postgres(const std::string& url, bool read_only, int lock_timeout_ms) {
  return std::make_unique<PgDatabase>(url, read_only, lock_timeout_ms);
}

}  // namespace railbench::store
