// A thin RAII layer over SQLite's C API: the connection and its prepared statements
// close themselves, and every failing call throws IoError naming the store's path and
// SQLite's own message. Only what the run store needs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace railbench::store {

class Statement;

class Database {
 public:
  // Opens (and, when `create`, creates) the file at `path`, read-write or read-only.
  // busy_timeout_ms: how long a write waits for another process's transaction.
  Database(const std::string& path, bool read_only, bool create, int busy_timeout_ms);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(const std::string& sql);
  Statement prepare(std::string_view sql);
  int64_t last_insert_id() const;
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }
  // Throws IoError for SQLite's result `rc` of `what`, with the connection's message.
  [[noreturn]] void fail(int rc, const std::string& what) const;

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

class Statement {
 public:
  Statement(const Database& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}
  ~Statement();
  Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds by 1-based index; returns *this for chaining.
  Statement& bind(int i, int64_t v);
  Statement& bind(int i, double v);
  Statement& bind(int i, std::string_view v);
  Statement& bind_null(int i);
  // Steps once: true while a row is there.
  bool step();
  // Steps to the end (an INSERT or UPDATE), then resets for the next binding.
  void run();
  void reset();

  int64_t int_at(int col) const;
  double double_at(int col) const;
  std::string text_at(int col) const;
  bool null_at(int col) const;

 private:
  const Database* db_;
  sqlite3_stmt* stmt_;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back unless commit() was called: nothing
// half-written when an insert fails or the process is interrupted.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace railbench::store
