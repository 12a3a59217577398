#include "lib/results/json_stream.h"

#include <unistd.h>

#include <cerrno>

namespace railbench {

namespace {

// Buffers what is put into chunks of a few MB, so a 2 GB file is a thousand writes.
class ChunkWriter {
 public:
  explicit ChunkWriter(int fd) : fd_(fd) { buf_.reserve(kChunk + (kChunk >> 2)); }
  void put(const std::string& s) {
    buf_ += s;
    if (buf_.size() >= kChunk) flush();
  }
  // `text` (a dump(2) of a value) moved right by `indent` spaces: the lines after its
  // first, as dump(2) prints a value nested that deep. JSON text holds no raw newline
  // inside a string, so every '\n' starts a line.
  void put_indented(const std::string& text, size_t indent) {
    size_t from = 0;
    for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
      buf_.append(text, from, nl + 1 - from);
      buf_.append(indent, ' ');
      from = nl + 1;
    }
    buf_.append(text, from, std::string::npos);
    if (buf_.size() >= kChunk) flush();
  }
  bool flush() {
    size_t off = 0;
    while (ok_ && off < buf_.size()) {
      const ssize_t w = ::write(fd_, buf_.data() + off, buf_.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        if (w == 0) errno = EIO;
        err_ = errno;
        ok_ = false;
        break;
      }
      off += static_cast<size_t>(w);
    }
    buf_.clear();
    if (!ok_) errno = err_;
    return ok_;
  }

 private:
  static constexpr size_t kChunk = 4U << 20;
  int fd_;
  std::string buf_;
  bool ok_ = true;
  int err_ = 0;
};

void put_array(ChunkWriter& w, const StreamedArray& a, size_t indent) {
  if (a.count == 0) return w.put("[]");
  const std::string first = "\n" + std::string(indent + 2, ' '), next = "," + first;
  w.put("[");
  for (size_t i = 0; i < a.count; ++i) {
    w.put(i == 0 ? first : next);
    w.put_indented(a.element(i).dump(2), indent + 2);
  }
  w.put("\n" + std::string(indent, ' ') + "]");
}

// A member name as a JSON pointer writes it (RFC 6901: ~ is ~0, / is ~1).
std::string pointer_token(const std::string& key) {
  std::string out;
  for (const char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

// Whether a streamed array sits strictly inside the value at `at`.
bool streamed_below(const StreamedArrays& streamed, const std::string& at) {
  const std::string prefix = at + "/";
  const auto it = streamed.lower_bound(prefix);
  return it != streamed.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

// The value at pointer `at`, nested `indent` spaces deep, as dump(2) prints it there;
// only the containers that hold a streamed array are walked, member by member.
void put_value(ChunkWriter& w, const nlohmann::json& v, const std::string& at, size_t indent,
               const StreamedArrays& streamed) {
  if (const auto s = streamed.find(at); s != streamed.end()) return put_array(w, s->second, indent);
  if (v.empty() || !v.is_structured() || !streamed_below(streamed, at)) return w.put_indented(v.dump(2), indent);
  const std::string first = "\n" + std::string(indent + 2, ' '), next = "," + first;
  w.put(v.is_object() ? "{" : "[");
  size_t i = 0;
  for (auto it = v.begin(); it != v.end(); ++it, ++i) {
    w.put(i == 0 ? first : next);
    if (v.is_object()) {
      w.put(nlohmann::json(it.key()).dump() + ": ");
      put_value(w, it.value(), at + "/" + pointer_token(it.key()), indent + 2, streamed);
    } else {
      put_value(w, it.value(), at + "/" + std::to_string(i), indent + 2, streamed);
    }
  }
  w.put("\n" + std::string(indent, ' ') + (v.is_object() ? "}" : "]"));
}

}  // namespace

bool write_json_streamed(int fd, const nlohmann::json& doc, const StreamedArrays& streamed) {
  ChunkWriter w(fd);
  put_value(w, doc, "", 0, streamed);
  w.put("\n");
  return w.flush();
}

nlohmann::json with_streamed(nlohmann::json doc, const StreamedArrays& streamed) {
  for (const auto& [at, a] : streamed) {
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 0; i < a.count; ++i) arr.push_back(a.element(i));
    doc[nlohmann::json::json_pointer(at)] = std::move(arr);
  }
  return doc;
}

}  // namespace railbench
