// Reading a results file back (what --json wrote): the one loader that report, compare
// and validate --baseline use, with the schema check of schema.h. What a reader does
// with the document's "command" is its own (bench/kinds/result_kind.h).
#pragma once

#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/results/schema.h"

namespace railbench {

// The results document at `path`. Throws UsageError naming the file (after `who` and a
// colon, when given: "compare", "--baseline") when it is a directory, missing or
// unreadable, too large to be a results file, not JSON, or fails
// validate_result_document.
// Whole documents are read up to 512 MB: as JSON values a file takes several times its size.
nlohmann::json read_results_file(const std::string& path, const std::string& who = "");

// Top-level arrays a reader takes one element at a time instead of as part of the
// document: each element goes to its member's function and the member is left an empty
// array. A 1,024-node x 8-rail validate file holds 4 M pair records in "rail_pairs"
// (GBs as JSON values); a reader that visits them reads files up to 8 GB.
using ElementVisitors = std::map<std::string, std::function<void(const nlohmann::json&)>>;
nlohmann::json read_results_file(const std::string& path, const std::string& who, const ElementVisitors& visit);

// validate_result_document on an already parsed document, its IoError turned into a
// UsageError naming `path` as read_results_file does.
void check_results_document(const nlohmann::json& doc, const std::string& path, const std::string& who = "");

}  // namespace railbench
