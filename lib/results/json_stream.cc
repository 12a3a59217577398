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

void put_array(ChunkWriter& w, const StreamedArray& a) {
  if (a.count == 0) return w.put("[]");
  w.put("[");
  for (size_t i = 0; i < a.count; ++i) {
    w.put(i == 0 ? "\n    " : ",\n    ");
    w.put_indented(a.element(i).dump(2), 4);
  }
  w.put("\n  ]");
}

}  // namespace

bool write_json_streamed(int fd, const nlohmann::json& doc, const std::map<std::string, StreamedArray>& streamed) {
  if (!doc.is_object() || doc.empty()) {
    ChunkWriter w(fd);
    w.put(doc.dump(2) + '\n');
    return w.flush();
  }
  ChunkWriter w(fd);
  w.put("{");
  bool first = true;
  // The members in the document's own (sorted) order, each as dump(2) nests it.
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    w.put(first ? "\n  " : ",\n  ");
    first = false;
    w.put(nlohmann::json(it.key()).dump());
    w.put(": ");
    const auto s = streamed.find(it.key());
    if (s != streamed.end())
      put_array(w, s->second);
    else
      w.put_indented(it.value().dump(2), 2);
  }
  w.put("\n}\n");
  return w.flush();
}

nlohmann::json with_streamed(nlohmann::json doc, const std::map<std::string, StreamedArray>& streamed) {
  for (const auto& [key, a] : streamed) {
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 0; i < a.count; ++i) arr.push_back(a.element(i));
    doc[key] = std::move(arr);
  }
  return doc;
}

}  // namespace railbench
