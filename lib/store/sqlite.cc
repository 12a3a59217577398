#include "lib/store/sqlite.h"

#include <sqlite3.h>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::store {

Database::Database(const std::string& path, bool read_only, bool create, int busy_timeout_ms) : path_(path) {
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (create && !read_only) flags |= SQLITE_OPEN_CREATE;
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw IoError(fmt::format("run store {}: cannot open it ({})", path, msg));
  }
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  sqlite3_extended_result_codes(db_, 1);
}

Database::~Database() {
  sqlite3_close_v2(db_);
}

void Database::fail(int rc, const std::string& what) const {
  std::string msg = sqlite3_errmsg(db_);
  if (msg == "not an error") msg = sqlite3_errstr(rc);
  throw IoError(fmt::format("run store {}: {}: {}", path_, what, msg));
}

void Database::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    const std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw IoError(fmt::format("run store {}: {}", path_, msg));
  }
}

Statement Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) fail(rc, fmt::format("preparing '{}'", sql.substr(0, 60)));
  return Statement(*this, stmt);
}

int64_t Database::last_insert_id() const {
  return sqlite3_last_insert_rowid(db_);
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int i, int64_t v) {
  if (const int rc = sqlite3_bind_int64(stmt_, i, v); rc != SQLITE_OK) db_->fail(rc, "binding a value");
  return *this;
}

Statement& Statement::bind(int i, double v) {
  if (const int rc = sqlite3_bind_double(stmt_, i, v); rc != SQLITE_OK) db_->fail(rc, "binding a value");
  return *this;
}

Statement& Statement::bind(int i, std::string_view v) {
  const int rc = sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) db_->fail(rc, "binding a value");
  return *this;
}

Statement& Statement::bind_null(int i) {
  if (const int rc = sqlite3_bind_null(stmt_, i); rc != SQLITE_OK) db_->fail(rc, "binding a value");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail(rc, "a statement failed");
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::int_at(int col) const {
  return sqlite3_column_int64(stmt_, col);
}

double Statement::double_at(int col) const {
  return sqlite3_column_double(stmt_, col);
}

std::string Statement::text_at(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
           : std::string();
}

bool Statement::null_at(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

Transaction::Transaction(Database& db) : db_(db) {
  db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace railbench::store
