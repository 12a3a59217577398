// What `railbench compare` writes: the table (worst first) and one-line summary on
// stdout, and the whole diff as JSON (--json) and CSV (--csv, RFC 4180).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/offline/compare/diff.h"

namespace railbench::compare {

struct CompareInputs {
  std::string base_path, new_path;
  std::string command;
  double threshold = 0.05;
  double noise_k = 3;  // band width in robust standard deviations
};

// The table: every regression, change within the noise and improvement, worst first;
// with `all`, the figures within the threshold too.
std::vector<std::string> table_lines(const Diff& d, const CompareInputs& in, bool all);
// "compare allreduce: 1 regression, 0 improvements, ... : REGRESSION"
std::string summary_line(const Diff& d, const CompareInputs& in);

nlohmann::json diff_json(const Diff& d, const CompareInputs& in);
// RFC 4180: CRLF line ends, fields with a comma, quote or line end quoted.
std::string diff_csv(const Diff& d);

// Writes `text` to `path` (--json, --csv); throws UsageError naming the option and path.
void write_text_file(const std::string& path, const std::string& option, const std::string& text);

}  // namespace railbench::compare
