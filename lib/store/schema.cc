// The store's schema, one migration per version (PRAGMA user_version holds the version a
// store is at). A migration is never edited once released: a change is a new one.
// bench/offline/db/README.md documents the tables.
#include "lib/store/schema.h"

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/store/sqlite.h"

namespace railbench::store {

namespace {

const char* const kMigrations[] = {
    // 1: runs, the things measured, their figures, the findings and the drains.
    R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  run_key TEXT NOT NULL UNIQUE,  -- the results file's run_id, or a hash of what identifies the run
  command TEXT NOT NULL,
  started_at TEXT NOT NULL,
  t_days REAL NOT NULL,          -- started_at in days since the Unix epoch, for time ranges
  finished_at TEXT,
  status TEXT,                   -- complete, failed
  verdict TEXT,                  -- PASS, FAIL, WARN (validate), or empty
  transport TEXT,
  su TEXT,                       -- the SU config's name (validate)
  hosts TEXT,                    -- the hosts of the job, comma-separated, in rank order
  version TEXT,
  config TEXT,                   -- the run's config as JSON
  source TEXT,                   -- the results file it was ingested from
  ingested_at TEXT NOT NULL
);
CREATE INDEX runs_time ON runs(t_days);
CREATE TABLE things (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,            -- node, nic, fabric_link, collective, pair
  name TEXT NOT NULL,
  UNIQUE (kind, name)
);
CREATE TABLE figures (
  thing INTEGER NOT NULL REFERENCES things(id),
  metric TEXT NOT NULL,
  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  unit TEXT NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (thing, metric, run)
) WITHOUT ROWID;
CREATE INDEX figures_run ON figures(run);
CREATE INDEX figures_metric ON figures(metric, thing, run);  -- trends: one metric of every thing
CREATE TABLE findings (
  id INTEGER PRIMARY KEY,
  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  thing INTEGER REFERENCES things(id),  -- NULL: its subject names no thing the store keeps
  severity TEXT NOT NULL,
  kind TEXT NOT NULL,
  code TEXT NOT NULL,
  subject TEXT NOT NULL,
  reason TEXT NOT NULL
);
CREATE INDEX findings_thing ON findings(thing, run);
CREATE INDEX findings_run ON findings(run);
-- validate's pair tests: the link from NIC a to NIC b (a first in name order), one row per
-- run, not a figure row per value: a 1,024 x 8 SU's run holds 4 M of them.
CREATE TABLE pair_tests (
  a INTEGER NOT NULL REFERENCES things(id),
  b INTEGER NOT NULL REFERENCES things(id),
  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  bw_ab REAL NOT NULL,           -- GB/s, a to b
  bw_ba REAL NOT NULL,
  lat_p50 REAL NOT NULL,         -- us, RTT/2
  lat_p99 REAL NOT NULL,
  PRIMARY KEY (a, b, run)
) WITHOUT ROWID;
CREATE TABLE drains (
  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  thing INTEGER NOT NULL REFERENCES things(id),
  reason TEXT NOT NULL,
  PRIMARY KEY (thing, run)
) WITHOUT ROWID;
)sql",
};

int schema_version_of(Database& db) {
  auto st = db.prepare("PRAGMA user_version");
  st.step();
  return static_cast<int>(st.int_at(0));
}

}  // namespace

int current_schema_version() {
  return static_cast<int>(std::size(kMigrations));
}

int migrate(Database& db, bool write) {
  const int at = schema_version_of(db);
  const int current = current_schema_version();
  if (at > current)
    throw UsageError(
        fmt::format("run store {}: its schema is version {}, newer than this railbench's {}: use the "
                    "railbench that wrote it (or a newer one), or another store (--db PATH)",
                    db.path(), at, current));
  if (at == current) return at;
  if (!write)
    throw UsageError(
        fmt::format("run store {}: its schema is version {}, older than this railbench's {}: ingest a "
                    "run into it (railbench db ingest FILE) to bring it up to date",
                    db.path(), at, current));
  Transaction t(db);
  // Another process may have migrated it meanwhile: BEGIN IMMEDIATE holds the write lock now.
  for (int v = schema_version_of(db); v < current; ++v) {
    db.exec(kMigrations[v]);
    db.exec(fmt::format("PRAGMA user_version = {}", v + 1));
  }
  t.commit();
  return current;
}

}  // namespace railbench::store
