#include "bench/offline/report/html.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "lib/core/sizes.h"

namespace railbench::report {

std::string esc(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v, int digits) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const double a = std::fabs(v);
  if (a == 0) return "0";
  // Counts (bytes, blocks, tokens) print whole, however many digits they have.
  if (a >= 1 && a < 1e15 && v == std::floor(v)) return fmt::format("{:.0f}", v);
  // Fixed notation with enough decimals for `digits` significant ones: 0.0472, 12.3, 4591.
  const int magnitude = static_cast<int>(std::floor(std::log10(a)));
  const int decimals = std::clamp(digits - 1 - magnitude, 0, 9);
  return fmt::format("{:.{}f}", v, decimals);
}

std::string pct(double fraction) {
  if (std::isnan(fraction)) return "-";
  return fmt::format("{:.0f}%", fraction * 100);
}

std::string size_label(uint64_t bytes) {
  const std::string s = format_size(bytes);
  return s.find_first_not_of("0123456789") == std::string::npos ? s + " B" : s;
}

double number_or_nan(const nlohmann::json& j) {
  return j.is_number() ? j.get<double>() : std::nan("");
}

double number_at(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return std::nan("");
  const auto it = obj.find(key);
  return it == obj.end() ? std::nan("") : number_or_nan(*it);
}

const nlohmann::json& member(const nlohmann::json& obj, std::string_view key) {
  static const nlohmann::json kNull;
  if (!obj.is_object()) return kNull;
  const auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string text_at(const nlohmann::json& obj, std::string_view key, std::string_view fallback) {
  if (!obj.is_object()) return std::string(fallback);
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}

Table::Table(std::vector<std::string> header, std::string css_class)
    : header_(std::move(header)), class_(std::move(css_class)) {}

Table& Table::row(std::vector<std::string> cells, std::string row_class, std::string id) {
  body_ += "<tr";
  if (!row_class.empty()) body_ += fmt::format(" class=\"{}\"", row_class);
  if (!id.empty()) body_ += fmt::format(" id=\"{}\"", id);
  body_ += ">";
  for (const auto& c : cells) body_ += "<td>" + c + "</td>";
  body_ += "</tr>\n";
  ++rows_;
  return *this;
}

std::string Table::html() const {
  std::string out = class_.empty() ? "<table>" : fmt::format("<table class=\"{}\">", class_);
  out += "<thead><tr>";
  for (const auto& h : header_) out += "<th>" + h + "</th>";
  out += "</tr></thead>\n<tbody>\n" + body_ + "</tbody></table>\n";
  return out;
}

}  // namespace railbench::report
