// The store's schema versions and their migrations (schema.cc).
#pragma once

namespace railbench::store {

class Database;

// Brings `db` to current_schema_version() (store.h) in one transaction, when `write`.
// Throws UsageError for a store of a newer schema, or an older one opened to read.
// Returns the version it is at.
int migrate(Database& db, bool write);

}  // namespace railbench::store
