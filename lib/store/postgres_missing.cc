// The run store without PostgreSQL: this railbench was configured where libpq was missing.
#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/store/database.h"

namespace railbench::store {

std::unique_ptr<Database> open_postgres(const std::string& url, bool, int) {
  throw UsageError(
      fmt::format("run store {}: this railbench was built without PostgreSQL: install libpq-dev "
                  "(scripts/install-deps.sh --for build) and rebuild, or give a SQLite file with --db PATH",
                  redact_url(url)));
}

}  // namespace railbench::store
