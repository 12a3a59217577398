// CSV as RFC 4180 writes it: a header row, then records; a field holding a comma, a
// double quote, CR or LF is quoted with its quotes doubled; every line ends in CRLF.
// Cells come from JSON values so a CSV derived from a results document shows each
// number exactly as the JSON file does.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace railbench {

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as wide as the header
};

// One field, quoted when RFC 4180 requires it.
std::string csv_field(const std::string& text);

// A JSON value as a cell: numbers as JSON writes them (shortest form that reads back
// the same double), strings as they are, true/false, and null (not measured) empty.
// Arrays and objects are refused (std::invalid_argument): a cell holds one value.
std::string csv_cell(const nlohmann::json& value);

// The whole table, header first, CRLF after every line.
std::string to_csv(const CsvTable& table);

}  // namespace railbench
