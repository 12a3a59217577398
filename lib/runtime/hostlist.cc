#include "lib/runtime/hostlist.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "lib/core/errors.h"

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

// Compression. ClusterShell's order of the indexes within one field: shorter strings
// first, then by value ("1" < "9" < "01" < "10"), which keeps each padding's run whole.
struct IndexLess {
  bool operator()(const std::string& a, const std::string& b) const {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  }
};
using IndexSet = std::set<std::string, IndexLess>;

// The longest index expand_brackets reads back; a longer number stays text.
constexpr size_t kMaxIndexDigits = 9;

bool zero_padded(const std::string& index) {
  return index.size() > 1 && index[0] == '0';
}

// A name cut at its numbers: text, index, text, ..., text (one more text than indexes).
struct CutName {
  std::vector<std::string> texts{""};
  std::vector<std::string> indexes;
};

CutName cut_name(const std::string& name) {
  CutName c;
  size_t i = 0;
  while (i < name.size()) {
    size_t j = i;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
    if (j == i) {
      c.texts.back() += name[i++];
    } else if (j - i > kMaxIndexDigits) {
      c.texts.back() += name.substr(i, j - i);
      i = j;
    } else {
      c.indexes.push_back(name.substr(i, j - i));
      c.texts.emplace_back();
      i = j;
    }
  }
  return c;
}

// "003,017-018": ClusterShell's RangeSet text (autostep off), ported step by step so a
// one-dimensional list compresses to exactly what `nodeset -f` writes. The walk goes in
// IndexLess order and keeps a padding mode: zero-padded to a width ("099": indexes of
// that width fit, "100" too, "0100" does not) or unpadded (unpadded indexes of any length
// fit: "9-10"). An index that does not fit ends the pending run and sets the mode; a gap
// after a run of two or more does too; a gap after a lone index leaves the mode as it
// was, which is why "001,999,1000" stays three items where "998,999,1000" is one range.
// Whatever the mode, a range's first bound carries the width expand_brackets reads back.
std::string fold_indexes(const IndexSet& indexes) {
  std::string out;
  bool padded = false;
  size_t width = 0;
  auto emit = [&](long lo, long hi) {
    const int w = padded ? static_cast<int>(width) : 0;
    if (!out.empty()) out += ',';
    out += lo == hi ? fmt::format("{:0{}d}", lo, w) : fmt::format("{:0{}d}-{:0{}d}", lo, w, hi, w);
  };
  bool started = false;
  long start = 0, last = 0, step = 0;  // the pending segment: start, start+step, ..., last (step 0: one index)
  for (const auto& index : indexes) {
    const long value = std::stol(index);
    if (!started) {
      started = true;
      padded = zero_padded(index), width = index.size();
      start = last = value;
      continue;
    }
    const bool pad_mismatch = padded ? index.size() != width : zero_padded(index);
    const bool step_mismatch = !pad_mismatch && step != 0 && step != value - last;
    if (!pad_mismatch && !step_mismatch) {
      step = value - last, last = value;
      continue;
    }
    if (step == 0 || step == 1) {
      emit(start, last);
      start = value;
      padded = zero_padded(index), width = index.size();
    } else {
      // Equally spaced lone indexes: each on its own; the last one may still start a run.
      for (long v = start; v < (pad_mismatch ? last + 1 : last - step + 1); v += step) emit(v, v);
      start = pad_mismatch ? value : last;
      if (pad_mismatch) padded = zero_padded(index), width = index.size();
    }
    step = step_mismatch ? value - last : 0;
    last = value;
  }
  if (started) {
    if (step <= 1) {
      emit(start, last);
    } else {
      for (long v = start; v <= last; v += step) emit(v, v);
    }
  }
  return out;
}

// One term of the output: a set of indexes per numeric field; the names it stands for
// are their product.
using Piece = std::vector<IndexSet>;

// The names of one pattern (their indexes, one tuple each), folded: the last field over
// names equal in every other field, then each earlier field over pieces equal in all
// the others (whose later fields are brackets by then). Every merge joins pieces that
// differ in one field only, so each piece is exactly a product of names in the list.
std::vector<Piece> fold_pattern(const std::set<std::vector<std::string>>& tuples, size_t fields) {
  std::vector<Piece> pieces;
  for (const auto& t : tuples) {
    Piece p;
    for (const auto& index : t) p.push_back(IndexSet{index});
    pieces.push_back(std::move(p));
  }
  for (size_t axis = fields; axis-- > 0;) {
    std::map<std::string, size_t> at;  // the other fields, written out -> the piece they merge into
    std::vector<Piece> merged;
    for (auto& p : pieces) {
      std::string key;
      for (size_t a = 0; a < fields; ++a) {
        if (a == axis) continue;
        for (const auto& index : p[a]) key += index + ',';
        key += ';';
      }
      const auto [it, fresh] = at.emplace(key, merged.size());
      if (fresh) {
        merged.push_back(std::move(p));
      } else {
        merged[it->second][axis].insert(p[axis].begin(), p[axis].end());
      }
    }
    pieces = std::move(merged);
  }
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (*a[i].begin() != *b[i].begin()) return IndexLess{}(*a[i].begin(), *b[i].begin());
    }
    return false;
  });
  return pieces;
}

void check_host_name(const std::string& name) {
  std::string why;
  if (name.empty()) why = "an empty name";
  for (size_t i = 0; i < name.size() && why.empty(); ++i) {
    const char c = name[i];
    if (c == '[' || c == ']' || c == ',') why = fmt::format("'{}' is hostlist syntax", c);
    if (std::isspace(static_cast<unsigned char>(c))) why = "a space inside a name";
  }
  if (!why.empty()) {
    const std::string shown = name.size() > 80 ? name.substr(0, 80) + "..." : name;
    throw UsageError(
        fmt::format("hostlist: cannot compress the name '{}': {}; a host name has no '[', ']', ',' "
                    "or space",
                    shown, why));
  }
}

}  // namespace

std::string compress_hostlist(const std::vector<std::string>& hosts) {
  // Patterns in ClusterShell's order: the texts joined with "%s" ("gpu%s", "rack%s-gpu%s"),
  // compared as text; the texts themselves complete the key, so no two patterns merge.
  struct Pattern {
    std::vector<std::string> texts;
    std::set<std::vector<std::string>> tuples;
  };
  std::map<std::pair<std::string, std::vector<std::string>>, Pattern> patterns;
  for (const auto& h : hosts) {
    check_host_name(h);
    CutName c = cut_name(h);
    std::string key = c.texts[0];
    for (size_t i = 1; i < c.texts.size(); ++i) key += "%s" + c.texts[i];
    Pattern& p = patterns[{key, c.texts}];
    p.texts = c.texts;
    p.tuples.insert(c.indexes);
  }
  std::string out;
  for (const auto& [key, p] : patterns) {
    for (const auto& piece : fold_pattern(p.tuples, p.texts.size() - 1)) {
      if (!out.empty()) out += ',';
      out += p.texts[0];
      for (size_t a = 0; a < piece.size(); ++a) {
        out += piece[a].size() == 1 ? *piece[a].begin() : "[" + fold_indexes(piece[a]) + "]";
        out += p.texts[a + 1];
      }
    }
  }
  return out;
}

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
