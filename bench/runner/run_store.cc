#include "bench/runner/run_store.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/store/store.h"

namespace railbench {

std::string prepare_run_store(CommonOptions& options, const std::string& command) {
  if (!options.db) return "";
  const std::string store = store::store_path(*options.db);
  if (options.json_path.empty()) {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    const auto dir = std::filesystem::path(store::results_folder(store));
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      throw UsageError(
          fmt::format("--db {}: cannot make {} for the results file ({}): give --json FILE, or a store "
                      "in a writable folder",
                      store::store_name(store), dir.string(), ec.message()));
    options.json_path = (dir / fmt::format("{}-{}-{}.json", command, stamp, getpid())).string();
  }
  return store;
}

void ingest_into_run_store(const CommonOptions& options, const std::string& store) {
  if (store.empty() || options.json_path.empty()) return;
  const std::string& file = options.json_path;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    fmt::print(stderr,
               "railbench: warning: --db: the results went to {}, which is not a file to read back: nothing was put "
               "into the run store {}; give --json a file (or leave --json out to write one beside the store)\n",
               file, store::store_name(store));
    return;
  }
  const auto warn = [&](const std::exception& e) {
    fmt::print(stderr,
               "railbench: warning: --db: {}; the results file {} is kept: put it into the store later with "
               "railbench db ingest {} --db {}\n",
               e.what(), file, file, store::store_name(store));
  };
  try {
    const auto rows = store::rows_of_file(file, "--db");
    store::Store s(store, store::Store::Mode::write);
    const auto r = s.ingest(rows, file);
    fmt::print(stderr, "railbench: run store {}: run {} {} ({} figures, {} findings)\n", store::store_name(store),
               r.key, r.added ? "added" : "was there already", r.figures, r.findings);
  } catch (const store::IngestInterrupted& e) {
    // The run itself is over and its file complete; the process was asked to end, and
    // ends as the signal handler would have (128 + signal), with this one line.
    warn(e);
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(128 + e.signal());
  } catch (const std::exception& e) {
    warn(e);
  }
}

}  // namespace railbench
