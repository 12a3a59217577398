// Reading the two results files `railbench compare` is given, and refusing a pair that
// cannot be compared (another command, transport, world size or rail count): their
// figures would differ for reasons that are not regressions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace railbench::compare {

// The results document at `path` (lib/results/read.h, errors prefixed "compare:").
// Throws UsageError naming the file when it is missing, unreadable, not JSON or not a
// railbench results file.
nlohmann::json load_results(const std::string& path);

// Throws UsageError listing every difference ("transport: ofi:shm in a.json, ofi:tcp in
// b.json") when the runs cannot be compared.
void check_comparable(const nlohmann::json& base, const std::string& base_path, const nlohmann::json& next,
                      const std::string& next_path);

}  // namespace railbench::compare
