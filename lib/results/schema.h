// The results schema: its name, the versions this build writes and reads, and the check
// of a document's top-level fields. The writer (results.h) and the reader (read.h, for
// report, compare and validate --baseline) both take them from here, so a schema bump
// is an edit in this one file.
#pragma once

#include <nlohmann/json.hpp>

namespace railbench {

inline constexpr const char* kResultSchema = "railbench.result";
// The version ResultsFile writes: the newest one.
inline constexpr int kResultSchemaVersion = 1;
// The oldest version the readers still read.
inline constexpr int kOldestResultSchemaVersion = 1;

// Checks the top-level fields of a results document: "schema", a "schema_version" in
// kOldestResultSchemaVersion..kResultSchemaVersion, and the header fields every version
// has (railbench_version, command, config, world, transport, results, status). Throws
// IoError saying the first thing wrong and what to do; the caller names the file.
void validate_result_document(const nlohmann::json& doc);

}  // namespace railbench
