// Small pieces every section of a report uses: escaping, numbers as people read them,
// and tables. Everything returns strings; nothing here knows what a run measured.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace railbench::report {

// Text and attribute values: & < > " ' escaped.
std::string esc(std::string_view text);

// A figure with about `digits` significant digits, no exponent for the ranges the
// benchmarks produce (0.0012 .. 1e9); "-" for NaN.
std::string num(double v, int digits = 3);

// A percentage of `fraction` (0.94 -> "94%").
std::string pct(double fraction);

// A message size as the tables print it: 1K, 4M, 1.5M, 13 B.
std::string size_label(uint64_t bytes);

// A JSON number, or NaN when the value is missing, null or not a number.
double number_or_nan(const nlohmann::json& j);
double number_at(const nlohmann::json& obj, std::string_view key);

// A member by reference (safe to keep pointers into), or a null value when `obj` is
// not an object or has no such member; iterating a null value visits nothing.
const nlohmann::json& member(const nlohmann::json& obj, std::string_view key);

// A string field, or `fallback` when missing or not a string.
std::string text_at(const nlohmann::json& obj, std::string_view key, std::string_view fallback = "");

// An HTML table: a header row and rows of cells already escaped (cells may hold markup).
// A row's class (e.g. "bad") marks it; `id` anchors it.
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::string css_class = "");
  Table& row(std::vector<std::string> cells, std::string row_class = "", std::string id = "");
  std::string html() const;
  bool empty() const { return rows_ == 0; }

 private:
  std::vector<std::string> header_;
  std::string class_;
  std::string body_;
  int rows_ = 0;
};

}  // namespace railbench::report
