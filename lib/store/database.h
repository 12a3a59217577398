// The run store's SQL connection, over either engine: SQLite (a file, one host's store)
// or PostgreSQL (a server a fleet's jobs share, --db postgresql://...). Both take the
// same statements: `?` placeholders (`?N` numbered), upserts as INSERT ... ON CONFLICT,
// new ids by RETURNING; only the schema's DDL differs (schema.cc). Every handle closes
// itself, and every failing call throws IoError naming the store and the engine's own
// message. Only what the run store needs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lib/core/errors.h"

namespace railbench::store {

// The disk under the store (or the server's) is full: an IoError whose message names the
// folder to free. Its own type so that the store's "damaged file" advice is not added to
// it: a full disk damages nothing, the transaction rolls back.
struct StoreFullError : IoError {
  explicit StoreFullError(const std::string& w) : IoError(w) {}
};

// One prepared statement's engine side.
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual void bind_int(int i, int64_t v) = 0;
  virtual void bind_double(int i, double v) = 0;
  virtual void bind_text(int i, std::string_view v) = 0;
  virtual void bind_null(int i) = 0;
  virtual bool step() = 0;   // true while a row is there
  virtual void reset() = 0;  // ready to bind and run again
  virtual int64_t int_at(int col) const = 0;
  virtual double double_at(int col) const = 0;
  virtual std::string text_at(int col) const = 0;
  virtual bool null_at(int col) const = 0;
};

class Statement {
 public:
  explicit Statement(std::unique_ptr<Cursor> c) : c_(std::move(c)) {}
  // Binds by 1-based index; returns *this for chaining.
  Statement& bind(int i, int64_t v) {
    c_->bind_int(i, v);
    return *this;
  }
  Statement& bind(int i, double v) {
    c_->bind_double(i, v);
    return *this;
  }
  Statement& bind(int i, std::string_view v) {
    c_->bind_text(i, v);
    return *this;
  }
  Statement& bind_null(int i) {
    c_->bind_null(i);
    return *this;
  }
  // Steps once: true while a row is there.
  bool step() { return c_->step(); }
  // Steps to the end (an INSERT or UPDATE), then resets for the next binding.
  void run() {
    while (step()) {
    }
    reset();
  }
  void reset() { c_->reset(); }
  int64_t int_at(int col) const { return c_->int_at(col); }
  double double_at(int col) const { return c_->double_at(col); }
  std::string text_at(int col) const { return c_->text_at(col); }
  bool null_at(int col) const { return c_->null_at(col); }

 private:
  std::unique_ptr<Cursor> c_;
};

class Database {
 public:
  enum class Engine { sqlite, postgres };
  virtual ~Database() = default;
  virtual Engine engine() const = 0;
  // The store as the user named it (a PostgreSQL URL without its password).
  virtual const std::string& name() const = 0;
  virtual void exec(const std::string& sql) = 0;
  virtual Statement prepare(std::string_view sql) = 0;
  // A write transaction that holds the store's write lock until commit or rollback:
  // writers take turns (SQLite's BEGIN IMMEDIATE; on PostgreSQL a transaction-scoped
  // advisory lock), so two ingests never interleave their things' ids or deadlock.
  virtual void begin_write() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  // The schema version the store is at (0: none yet), and setting it inside a write.
  virtual int schema_version() = 0;
  virtual void set_schema_version(int v) = 0;
};

// True for a PostgreSQL connection URL (postgresql://... or postgres://...).
bool is_postgres_url(std::string_view where);
// Opens (and, when `create`, creates) the SQLite file at `path`, read-write or read-only.
// busy_timeout_ms: how long a write waits for another process's transaction.
std::unique_ptr<Database> open_sqlite(const std::string& path, bool read_only, bool create, int busy_timeout_ms);
// Connects to the PostgreSQL server at `url`; lock_timeout_ms: how long a write waits for
// another writer. Throws IoError naming the URL (its password left out) and the fix, or
// UsageError when this railbench was built without libpq.
std::unique_ptr<Database> open_postgres(const std::string& url, bool read_only, int lock_timeout_ms);
// `url` with any password replaced by "***", for messages.
std::string redact_url(const std::string& url);

// A write transaction (Database::begin_write), rolled back unless commit() was called:
// nothing half-written when an insert fails or the process is interrupted.
class Transaction {
 public:
  explicit Transaction(Database& db) : db_(db) { db_.begin_write(); }
  ~Transaction() {
    if (!done_) db_.rollback();
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    db_.commit();
    done_ = true;
  }

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace railbench::store
