#include "bench/offline/report/matrix_store.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <string_view>

namespace railbench::report {

namespace {

using Json = nlohmann::json;
using DomParser = nlohmann::detail::json_sax_dom_parser<Json>;

constexpr std::array<std::string_view, 5> kMatrixKeys = {"bw_gbs", "bidir_gbs", "lat_p50_us", "lat_p99_us",
                                                         "lat_p999_us"};

// The DOM parser's events, with two detours: a matrix under rails[i] goes into floats,
// and the top-level "rail_pairs" is skipped; each becomes a null in the document.
class MatrixSax {
 public:
  MatrixSax(Json& doc, MatrixStore& store) : dom_(doc), store_(store) {}

  bool null() { return capture_ ? cell(NAN) : skip_ ? true : dom_.null(); }
  bool boolean(bool v) { return capture_ ? cell(NAN) : skip_ ? true : dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) {
    return capture_ ? cell(static_cast<float>(v)) : skip_ ? true : dom_.number_integer(v);
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    return capture_ ? cell(static_cast<float>(v)) : skip_ ? true : dom_.number_unsigned(v);
  }
  bool number_float(Json::number_float_t v, const std::string& s) {
    return capture_ ? cell(static_cast<float>(v)) : skip_ ? true : dom_.number_float(v, s);
  }
  bool string(std::string& v) { return capture_ ? cell(NAN) : skip_ ? true : dom_.string(v); }
  bool binary(Json::binary_t& v) { return capture_ ? cell(NAN) : skip_ ? true : dom_.binary(v); }

  bool start_object(size_t n) {
    if (capture_ || skip_) return ++nested_, true;
    if (path_.size() == 2 && path_[0].key == "rails" && !path_[1].object) ++rail_index_;
    path_.push_back({true, {}});
    return dom_.start_object(n);
  }
  bool key(std::string& k) {
    if (capture_ || skip_) return true;
    path_.back().key = k;
    return dom_.key(k);
  }
  bool end_object() {
    if (capture_ || skip_) return --nested_, true;
    path_.pop_back();
    return dom_.end_object();
  }

  bool start_array(size_t n) {
    if (capture_) {
      if (nested_ == 0 && depth_ == 1)
        depth_ = 2;  // a row begins
      else
        ++nested_;
      return true;
    }
    if (skip_) return ++nested_, true;
    if (starts_matrix()) return capture_ = true, depth_ = 1, rows_.clear(), true;
    if (path_.size() == 1 && path_.back().key == "rail_pairs") return skip_ = true, nested_ = 0, true;
    path_.push_back({false, {}});
    return dom_.start_array(n);
  }
  bool end_array() {
    if (capture_) return end_capture_array();
    if (skip_) {
      if (nested_ > 0) return --nested_, true;
      skip_ = false;
      return dom_.null();
    }
    path_.pop_back();
    return dom_.end_array();
  }

  template <class Exception>
  bool parse_error(size_t pos, const std::string& token, const Exception& e) {
    return dom_.parse_error(pos, token, e);
  }

 private:
  struct Level {
    bool object;
    std::string key;
  };

  // An array under rails[i] (an object in the top-level "rails" array) at a matrix key.
  bool starts_matrix() const {
    return path_.size() == 3 && path_[0].key == "rails" && !path_[1].object && path_[2].object &&
           std::find(kMatrixKeys.begin(), kMatrixKeys.end(), path_[2].key) != kMatrixKeys.end();
  }
  // A value inside the matrix: a cell when it is directly in a row; anything deeper (or a
  // value where a row should be) is damage, and reads as not measured.
  bool cell(float v) {
    if (nested_ == 0 && depth_ == 2) row_.push_back(v);
    return true;
  }
  bool end_capture_array() {
    if (nested_ > 0) return --nested_, true;
    if (depth_ == 2) {
      rows_.push_back(std::move(row_));
      row_.clear();
      depth_ = 1;
      return true;
    }
    // The matrix ends: square it (short rows padded, long ones cut), store it, and give
    // the document a null where it was.
    const int n = static_cast<int>(rows_.size());
    RailMatrix m{n, std::vector<float>(static_cast<size_t>(n) * n, NAN)};
    for (int a = 0; a < n; ++a)
      std::copy_n(rows_[a].begin(), std::min<size_t>(n, rows_[a].size()), m.cells.begin() + static_cast<size_t>(a) * n);
    store_.matrices[{rail_index_ - 1, path_[2].key}] = std::move(m);
    rows_.clear();
    capture_ = false;
    return dom_.null();
  }

  DomParser dom_;
  MatrixStore& store_;
  std::vector<Level> path_;
  size_t rail_index_ = 0;  // 1 + the index of the rail being read
  bool capture_ = false, skip_ = false;
  int depth_ = 0, nested_ = 0;
  std::vector<float> row_;
  std::vector<std::vector<float>> rows_;
};

// The fast path, for text in the shape railbench writes: a structural scan splits the
// top-level object into members, each rails[i]'s matrices are read with std::from_chars
// and every other member by nlohmann. nlohmann's own number scan (strtod) is most of the
// time of reading a 1,024 x 8 file; from_chars is several times faster. Anything
// unexpected (an escaped key, a number from_chars does not take, broken structure) makes
// it give up, and the SAX parse above reads the text and names the error.
class SplitParser {
 public:
  SplitParser(std::string_view text, MatrixStore& store) : s_(text), store_(store) {}

  bool parse(Json& doc) {
    Json out = Json::object();
    bool ok = members([&](std::string_view key, size_t from, size_t to) {
      if (key == "rail_pairs") return out[std::string(key)] = nullptr, true;
      if (key == "rails" && s_[from] == '[') return rails(from, out[std::string(key)]);
      return value(from, to, out[std::string(key)]);
    });
    ws();
    if (!ok || at_ != s_.size()) return false;
    doc = std::move(out);
    return true;
  }

 private:
  void ws() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\r' || s_[at_] == '\t')) ++at_;
  }
  bool eat(char c) {
    ws();
    if (at_ >= s_.size() || s_[at_] != c) return false;
    return ++at_, true;
  }
  bool skip_string() {  // at_ on the opening quote
    for (++at_; at_ < s_.size(); ++at_) {
      if (s_[at_] == '\\')
        ++at_;
      else if (s_[at_] == '"')
        return ++at_, true;
    }
    return false;
  }
  bool skip_value() {
    ws();
    if (at_ >= s_.size()) return false;
    if (s_[at_] == '"') return skip_string();
    if (s_[at_] != '{' && s_[at_] != '[') {
      while (at_ < s_.size() && !std::strchr(",]} \n\r\t", s_[at_])) ++at_;
      return true;
    }
    int depth = 0;
    while (at_ < s_.size()) {
      const char c = s_[at_];
      if (c == '"') {
        if (!skip_string()) return false;
        continue;
      }
      ++at_;
      if (c == '{' || c == '[') ++depth;
      if ((c == '}' || c == ']') && --depth == 0) return true;
    }
    return false;
  }
  // Each member of the object at at_: on(key, value begin, value end).
  template <typename On>
  bool members(On on) {
    if (!eat('{')) return false;
    if (eat('}')) return true;
    do {
      ws();
      const size_t k = at_;
      if (!skip_string()) return false;
      const std::string_view key(s_.data() + k + 1, at_ - k - 2);
      if (key.find('\\') != std::string_view::npos || !eat(':')) return false;
      ws();
      const size_t from = at_;
      if (!skip_value()) return false;
      const size_t to = at_;
      if (!on(key, from, to)) return false;
      at_ = to;
    } while (eat(','));
    return eat('}');
  }
  bool value(size_t from, size_t to, Json& out) {
    out = Json::parse(s_.begin() + static_cast<std::ptrdiff_t>(from), s_.begin() + static_cast<std::ptrdiff_t>(to),
                      nullptr, false);
    return !out.is_discarded();
  }
  bool rails(size_t from, Json& out) {
    at_ = from + 1;
    out = Json::array();
    if (eat(']')) return true;
    do {
      ws();
      Json rail = Json::object();
      const size_t index = out.size();
      const bool ok = members([&](std::string_view key, size_t f, size_t t) {
        const std::string name(key);
        if (std::find(kMatrixKeys.begin(), kMatrixKeys.end(), key) != kMatrixKeys.end() && s_[f] == '[')
          return rail[name] = nullptr, matrix(f, store_.matrices[{index, name}]);
        return value(f, t, rail[name]);
      });
      if (!ok) return false;
      out.push_back(std::move(rail));
    } while (eat(','));
    return eat(']');
  }
  bool matrix(size_t from, RailMatrix& m) {
    at_ = from + 1;
    std::vector<std::vector<float>> rows;
    if (!eat(']')) {
      do {
        if (!eat('[')) return false;
        auto& row = rows.emplace_back();
        if (eat(']')) continue;
        do {
          ws();
          if (s_.compare(at_, 4, "null") == 0) {
            row.push_back(NAN), at_ += 4;
            continue;
          }
          float v = 0;
          const auto r = std::from_chars(s_.data() + at_, s_.data() + s_.size(), v);
          if (r.ec != std::errc()) return false;
          row.push_back(v);
          at_ = static_cast<size_t>(r.ptr - s_.data());
        } while (eat(','));
        if (!eat(']')) return false;
      } while (eat(','));
      if (!eat(']')) return false;
    }
    const int n = static_cast<int>(rows.size());
    m = RailMatrix{n, std::vector<float>(static_cast<size_t>(n) * n, NAN)};
    for (int a = 0; a < n; ++a)
      std::copy_n(rows[a].begin(), std::min<size_t>(n, rows[a].size()), m.cells.begin() + static_cast<size_t>(a) * n);
    return true;
  }

  std::string_view s_;
  MatrixStore& store_;
  size_t at_ = 0;
};

}  // namespace

void parse_with_matrices(std::string_view text, nlohmann::json& doc, MatrixStore& store) {
  MatrixStore fast;
  if (SplitParser(text, fast).parse(doc)) {
    store = std::move(fast);
    return;
  }
  MatrixSax sax(doc, store);
  Json::sax_parse(text.begin(), text.end(), &sax);
}
}  // namespace railbench::report
