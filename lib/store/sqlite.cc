// The run store over SQLite (database.h): a file, one host's store.
#include <sqlite3.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/store/database.h"

namespace railbench::store {

namespace {

class SqliteDatabase;

// Whether `rc` (an extended result code) is the disk running out of room: SQLITE_FULL
// from a write, or an I/O error whose system call failed with ENOSPC or EDQUOT (growing
// the WAL index, -shm, on opening). Either way nothing is damaged: the transaction rolls
// back.
bool disk_full(sqlite3* db, int rc) {
  if ((rc & 0xff) == SQLITE_FULL) return true;
  if ((rc & 0xff) != SQLITE_IOERR || db == nullptr) return false;
  const int err = sqlite3_system_errno(db);
  return err == ENOSPC || err == EDQUOT;
}

// The message for a full disk: what SQLite said, the folder to free, and the other way out.
std::string disk_full_message(sqlite3* db, const std::string& path, const std::string& engine_msg) {
  const auto parent = std::filesystem::path(path).parent_path();
  const int err = db ? sqlite3_system_errno(db) : 0;
  return fmt::format(
      "run store {}: the disk is full ({}{}): free space in {}, or give a store on another disk with --db PATH", path,
      engine_msg, err == ENOSPC || err == EDQUOT ? fmt::format(": {}", std::strerror(err)) : "",
      parent.empty() ? std::string(".") : parent.string());
}

class SqliteCursor final : public Cursor {
 public:
  SqliteCursor(const SqliteDatabase& db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~SqliteCursor() override { sqlite3_finalize(stmt_); }
  SqliteCursor(const SqliteCursor&) = delete;
  SqliteCursor& operator=(const SqliteCursor&) = delete;

  void bind_int(int i, int64_t v) override { check(sqlite3_bind_int64(stmt_, i, v)); }
  void bind_double(int i, double v) override { check(sqlite3_bind_double(stmt_, i, v)); }
  void bind_text(int i, std::string_view v) override {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void bind_null(int i) override { check(sqlite3_bind_null(stmt_, i)); }
  bool step() override;
  void reset() override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t int_at(int col) const override { return sqlite3_column_int64(stmt_, col); }
  double double_at(int col) const override { return sqlite3_column_double(stmt_, col); }
  std::string text_at(int col) const override {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  bool null_at(int col) const override { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  void check(int rc) const;
  const SqliteDatabase& db_;
  sqlite3_stmt* stmt_;
};

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(const std::string& path, bool read_only, bool create, int busy_timeout_ms) : path_(path) {
    int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
    if (create && !read_only) flags |= SQLITE_OPEN_CREATE;
    const int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      const std::string full = disk_full(db_, rc) ? disk_full_message(db_, path, msg) : "";
      sqlite3_close(db_);
      db_ = nullptr;
      if (!full.empty()) throw StoreFullError(full);
      throw IoError(fmt::format("run store {}: cannot open it ({})", path, msg));
    }
    sqlite3_busy_timeout(db_, busy_timeout_ms);
    sqlite3_extended_result_codes(db_, 1);
  }
  ~SqliteDatabase() override { sqlite3_close_v2(db_); }
  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;

  Engine engine() const override { return Engine::sqlite; }
  const std::string& name() const override { return path_; }

  void exec(const std::string& sql) override {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      const std::string msg = err ? err : sqlite3_errstr(rc);
      sqlite3_free(err);
      if (disk_full(db_, sqlite3_extended_errcode(db_))) throw StoreFullError(disk_full_message(db_, path_, msg));
      throw IoError(fmt::format("run store {}: {}", path_, msg));
    }
  }
  Statement prepare(std::string_view sql) override {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
    if (rc != SQLITE_OK) fail(rc, fmt::format("preparing '{}'", sql.substr(0, 60)));
    return Statement(std::make_unique<SqliteCursor>(*this, stmt));
  }
  void begin_write() override { exec("BEGIN IMMEDIATE"); }
  void commit() override { exec("COMMIT"); }
  void rollback() noexcept override { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }
  int schema_version() override {
    auto st = prepare("PRAGMA user_version");
    st.step();
    return static_cast<int>(st.int_at(0));
  }
  void set_schema_version(int v) override { exec(fmt::format("PRAGMA user_version = {}", v)); }

  // Throws IoError for SQLite's result `rc` of `what`, with the connection's message.
  [[noreturn]] void fail(int rc, const std::string& what) const {
    std::string msg = sqlite3_errmsg(db_);
    if (msg == "not an error") msg = sqlite3_errstr(rc);
    if (disk_full(db_, rc)) throw StoreFullError(disk_full_message(db_, path_, what + ": " + msg));
    throw IoError(fmt::format("run store {}: {}: {}", path_, what, msg));
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

void SqliteCursor::check(int rc) const {
  if (rc != SQLITE_OK) db_.fail(rc, "binding a value");
}

bool SqliteCursor::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(rc, "a statement failed");
}

}  // namespace

std::unique_ptr<Database> open_sqlite(const std::string& path, bool read_only, bool create, int busy_timeout_ms) {
  return std::make_unique<SqliteDatabase>(path, read_only, create, busy_timeout_ms);
}

}  // namespace railbench::store
