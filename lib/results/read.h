// Reading a results file back (what --json wrote): the one loader that report, compare
// and validate --baseline use, with the schema check of schema.h. What a reader does
// with the document's "command" is its own (bench/kinds/result_kind.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lib/results/schema.h"

namespace railbench {

// The results document at `path`. Throws UsageError naming the file (after `who` and a
// colon, when given: "compare", "--baseline") when it is a directory, missing or
// unreadable, too large to be a results file, not JSON, or fails
// validate_result_document.
nlohmann::json read_results_file(const std::string& path, const std::string& who = "");

// validate_result_document on an already parsed document, its IoError turned into a
// UsageError naming `path` as read_results_file does.
void check_results_document(const nlohmann::json& doc, const std::string& path, const std::string& who = "");

}  // namespace railbench
