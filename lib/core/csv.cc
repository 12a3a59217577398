#include "lib/core/csv.h"

#include <stdexcept>

namespace railbench {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csv_cell(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded: return "";
    case nlohmann::json::value_t::string: return value.get<std::string>();
    case nlohmann::json::value_t::array:
    case nlohmann::json::value_t::object:
      throw std::invalid_argument("a CSV cell holds one value, not " + std::string(value.type_name()));
    default: return value.dump();  // numbers and booleans, as the JSON file has them
  }
}

std::string to_csv(const CsvTable& table) {
  std::string out;
  auto line = [&](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i) out += ',';
      out += csv_field(fields[i]);
    }
    out += "\r\n";
  };
  line(table.header);
  for (const auto& row : table.rows) line(row);
  return out;
}

}  // namespace railbench
