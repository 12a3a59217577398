#include "lib/hostlist.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "lib/errors.h"

namespace railbench {
namespace {

[[noreturn]] void bad(const std::string& expr, size_t pos, const std::string& why) {
  // A long expression is quoted only in part: the error stays one short line.
  const std::string shown = expr.size() > 80 ? expr.substr(0, 80) + "..." : expr;
  throw UsageError(
      fmt::format("hostlist '{}': {} at character {}; write it like gpu[001-032] or node1,node2", shown, why, pos + 1));
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// One bracket body "001-004,7" -> the suffixes it stands for.
// Each range's size is checked before it is expanded, so "node[0-999999999]" is refused
// without allocating a billion names.
std::vector<std::string> expand_brackets(const std::string& expr, size_t at, const std::string& body,
                                         size_t max_hosts) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    if (comma == std::string::npos) comma = body.size();
    const std::string item = body.substr(start, comma - start);
    const size_t dash = item.find('-');
    const std::string lo = item.substr(0, dash);
    const std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > 9 || hi.size() > 9) {
      bad(expr, at + start, fmt::format("'{}' is not a number or a range of numbers", item));
    }
    const long a = std::stol(lo), b = std::stol(hi);
    if (b < a) bad(expr, at + start, fmt::format("range '{}' runs backwards", item));
    if (static_cast<size_t>(b - a) + 1 > max_hosts - std::min(out.size(), max_hosts)) {
      bad(expr, at + start, fmt::format("range '{}' makes more than {} names", item, max_hosts));
    }
    const int width = lo.size() > 1 && lo[0] == '0' ? static_cast<int>(lo.size()) : 0;
    for (long v = a; v <= b; ++v) out.push_back(fmt::format("{:0{}d}", v, width));
    start = comma + 1;
  }
  return out;
}

// One comma-free term such as "rack[1-2]-gpu[01-04]".
void expand_term(const std::string& expr, size_t offset, const std::string& term, std::vector<std::string>& out,
                 size_t max_hosts) {
  std::vector<std::string> names{""};
  size_t i = 0;
  while (i < term.size()) {
    if (term[i] == '[') {
      const size_t close = term.find(']', i);
      if (close == std::string::npos) bad(expr, offset + i, "'[' without a matching ']'");
      const auto suffixes = expand_brackets(expr, offset + i + 1, term.substr(i + 1, close - i - 1), max_hosts);
      std::vector<std::string> next;
      for (const auto& n : names) {
        for (const auto& s : suffixes) {
          next.push_back(n + s);
          if (out.size() + next.size() > max_hosts) bad(expr, offset + i, fmt::format("more than {} names", max_hosts));
        }
      }
      names = std::move(next);
      i = close + 1;
    } else if (term[i] == ']') {
      bad(expr, offset + i, "']' without a matching '['");
    } else {
      const char c = term[i];
      if (std::isspace(static_cast<unsigned char>(c))) bad(expr, offset + i, "a space inside a name");
      for (auto& n : names) n += c;
      ++i;
    }
  }
  out.insert(out.end(), names.begin(), names.end());
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& expr, size_t max_hosts) {
  std::vector<std::string> out;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= expr.size(); ++i) {
    if (i < expr.size() && expr[i] == '[') ++depth;
    if (i < expr.size() && expr[i] == ']') --depth;
    if (i == expr.size() || (expr[i] == ',' && depth == 0)) {
      if (i == start) bad(expr, i, "an empty name");
      expand_term(expr, start, expr.substr(start, i - start), out, max_hosts);
      start = i + 1;
    }
  }
  return out;
}

}  // namespace railbench
