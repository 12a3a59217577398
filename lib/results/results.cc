#include "lib/results/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <exception>
#include <random>

#include <fmt/format.h>

#include "lib/core/errno_text.h"
#include "lib/core/errors.h"
#include "lib/core/version.h"
#include "lib/runtime/signals.h"

namespace railbench {

using nlohmann::json;

json to_json(const Summary& s) {
  return json{{"count", s.count}, {"min", s.min}, {"max", s.max}, {"mean", s.mean}, {"stdev", s.stdev},
              {"p50", s.p50},     {"p90", s.p90}, {"p99", s.p99}, {"p99_9", s.p999}};
}

Summary summary_from_json(const json& j) {
  Summary s;
  s.count = j.at("count").get<size_t>();
  s.min = j.at("min").get<double>();
  s.max = j.at("max").get<double>();
  s.mean = j.at("mean").get<double>();
  s.stdev = j.at("stdev").get<double>();
  s.p50 = j.at("p50").get<double>();
  s.p90 = j.at("p90").get<double>();
  s.p99 = j.at("p99").get<double>();
  s.p999 = j.at("p99_9").get<double>();
  return s;
}

namespace {

std::string now_iso8601() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A device, fifo or socket (possibly behind a symlink): never to be replaced by a file.
bool is_special_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

std::string random_suffix() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

bool write_all(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    if (w == 0) {
      errno = EIO;
      return false;
    }
    off += static_cast<size_t>(w);
  }
  return true;
}

// Values put in the document rendered for the signal handlers, then replaced by one
// control byte each (JSON text never holds a raw control byte), where the handler writes
// the error text and the time.
const std::string kErrorSentinel = "\x01railbench:error\x01";
const std::string kTimeSentinel = "\x01railbench:time\x01";

std::string punch_holes(std::string text) {
  const std::pair<std::string, char> holes[] = {{json(kErrorSentinel).dump(), kSignalErrorHole},
                                                {json(kTimeSentinel).dump(), kSignalTimeHole}};
  for (const auto& [quoted, hole] : holes) {
    // Keep the quotes: the handler writes only the text between them.
    const std::string inner = quoted.substr(1, quoted.size() - 2);
    for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 3))
      text.replace(at + 1, inner.size(), 1, hole);
  }
  return text;
}

}  // namespace

void check_results_path(const std::string& path, const std::string& option, const std::string& example) {
  if (path.empty()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      throw UsageError(
          fmt::format("{} '{}' is a directory: name a file, e.g. {} {}/{}", option, path, option, path, example));
    }
    if (!S_ISREG(st.st_mode)) {
      // A device or fifo is written directly, so it must be writable itself.
      if (::access(path.c_str(), W_OK) != 0)
        throw UsageError(
            fmt::format("{} '{}' cannot be written ({}): name a writable file", option, path, errno_text(errno)));
      return;
    }
  } else if (errno != ENOENT) {
    throw UsageError(
        fmt::format("{} '{}': {}: name a file in a directory that exists", option, path, errno_text(errno)));
  }
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw UsageError(
        fmt::format("{} '{}': the directory '{}' does not exist: create it (mkdir -p '{}') or name "
                    "a file in another",
                    option, path, dir, dir));
  }
  // The file is written beside itself and renamed, so the directory must take new files.
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw UsageError(fmt::format("{} '{}': cannot create files in '{}' ({}): name a file in a writable directory",
                                 option, path, dir, errno_text(errno)));
  }
}

void write_text_file(const std::string& path, const std::string& text, const std::string& option) {
  if (is_special_file(path)) {
    // Non-blocking open: a fifo without a reader fails (ENXIO) instead of hanging.
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw IoError(fmt::format("cannot open {} '{}' ({})", option, path, errno_text(errno)));
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    const bool ok = write_all(fd, text);
    const int err = errno;
    ::close(fd);
    if (!ok) throw IoError(fmt::format("writing {} '{}' failed ({})", option, path, errno_text(err)));
    return;
  }
  // Beside the target, created exclusively and never through a symlink, then renamed:
  // a reader (a scheduler's script) never sees half a file.
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = fmt::format("{}.tmp.{}", path, random_suffix());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0)
    throw IoError(fmt::format("{} '{}': cannot create a file beside it ({})", option, path, errno_text(errno)));
  bool ok = write_all(fd, text);
  int err = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) ok = false, err = errno;
  if (!ok) {
    ::unlink(tmp.c_str());
    throw IoError(fmt::format("writing {} '{}' failed ({})", option, path, errno_text(err)));
  }
}

namespace {

// 128 random bits as 32 hex digits: what the run store keys a run by, so the same results
// file ingested twice is one run (bench/offline/db/README.md).
std::string new_run_id() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 4; ++i) out += fmt::format("{:08x}", static_cast<uint32_t>(rd()));
  return out;
}

}  // namespace

ResultsFile::ResultsFile(std::string path, json header) : path_(std::move(path)) {
  doc_ = json{{"schema", kResultSchema},
              {"schema_version", kResultSchemaVersion},
              {"railbench_version", railbench_version()},
              {"railbench_commit", railbench_git_commit()},
              {"run_id", new_run_id()},
              {"started_at", now_iso8601()}};
  for (auto& [k, v] : header.items()) doc_[k] = v;
  doc_["results"] = json::array();
  doc_["status"] = "running";
  check_results_path(path_);
  write();
}

ResultsFile::~ResultsFile() {
  if (!finished_ && !path_.empty()) {
    // Only an exception that is not a railbench Error gets here (the commands finish()
    // on those): the file must not keep saying "running".
    try {
      finish(false, std::uncaught_exceptions() > 0 ? "the run stopped on an unexpected error: see rank 0's stderr"
                                                   : "the run ended without a verdict");
    } catch (...) {
    }
  }
  if (published_) publish_signal_document(nullptr);
}

void ResultsFile::add(json size_result) {
  doc_["results"].push_back(std::move(size_result));
  write();
}

void ResultsFile::set(const std::string& key, json value) {
  forget_streamed(key);
  doc_[key] = std::move(value);
  write();
}

void ResultsFile::set_array(const std::string& key, size_t count, std::function<json(size_t)> element) {
  set_with_arrays(key, json::array(), {{"/" + key, StreamedArray{count, std::move(element)}}});
}

void ResultsFile::set_with_arrays(const std::string& key, json value, StreamedArrays arrays) {
  forget_streamed(key);
  doc_[key] = std::move(value);
  for (auto& [at, a] : arrays) {
    doc_[json::json_pointer(at)] = json::array();
    streamed_[at] = std::move(a);
  }
  if (!rewrite_can_wait()) write();
}

void ResultsFile::forget_streamed(const std::string& key) {
  const std::string at = "/" + key;
  for (auto it = streamed_.lower_bound(at); it != streamed_.end() && it->first.compare(0, at.size(), at) == 0;)
    it = (it->first.size() == at.size() || it->first[at.size()] == '/') ? streamed_.erase(it) : std::next(it);
}

bool ResultsFile::rewrite_can_wait() const {
  // Rewritten once per pair-test round, a 1,024 x 8 file (1,023 rounds, GBs each) would
  // be written for hours; spaced ten write times apart, writing takes a tenth of the run.
  constexpr double kSlowWriteS = 1.0, kSpacing = 10.0;
  const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_write_end_).count();
  return !finished_ && last_write_s_ >= kSlowWriteS && since < kSpacing * last_write_s_;
}

void ResultsFile::finish(bool complete, const std::string& error) {
  if (finished_) return;
  finished_ = true;
  doc_["status"] = complete ? "complete" : "failed";
  doc_["finished_at"] = now_iso8601();
  if (!error.empty()) doc_["error"] = error;
  write();
}

void ResultsFile::add_csv(std::string csv_path, std::function<std::string(const json&)> render) {
  add_sidecar(std::move(csv_path), "--csv", "results.csv", std::move(render));
}

void ResultsFile::add_sidecar(std::string path, std::string option, const std::string& example,
                              std::function<std::string(const json&)> render) {
  if (path.empty()) return;
  check_results_path(path, option, example);
  sidecars_.push_back(Sidecar{std::move(path), std::move(option), std::move(render), false});
  write();
}

std::string ResultsFile::write_sidecars() {
  for (auto& s : sidecars_) {
    if (s.failed) continue;
    // A device or fifo gets one copy, at the end, as the JSON does.
    if (is_special_file(s.path) && !finished_) continue;
    try {
      write_text_file(s.path, s.render(doc_), s.option);
    } catch (const Error& e) {
      s.failed = true;
      return e.what();
    }
  }
  return "";
}

void ResultsFile::write() {
  // Every rewrite dates itself: a "running" file whose updated_at is old is a dead run.
  doc_["updated_at"] = now_iso8601();
  // The CSV (and the other files beside the JSON) first: when one cannot be written,
  // the JSON still says so.
  const std::string csv_error = write_sidecars();
  if (!csv_error.empty()) {
    if (doc_.value("status", "") != "failed") {
      doc_["status"] = "failed";
      doc_["error"] = csv_error;
      doc_["finished_at"] = doc_["updated_at"];
    }
    finished_ = true;
  }
  write_json();
  if (!csv_error.empty()) {
    throw IoError(
        fmt::format("{}: that file keeps what was written before; free space (or fix the directory) and "
                    "run again",
                    csv_error));
  }
}

std::function<bool(int)> ResultsFile::document_writer() const {
  if (!streamed_.empty()) return [this](int fd) { return write_json_streamed(fd, doc_, streamed_); };
  auto text = std::make_shared<const std::string>(doc_.dump(2) + '\n');
  return [text](int fd) { return write_all(fd, *text); };
}

void ResultsFile::write_json() {
  if (path_.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  // Checked at every rewrite, not once: rename must never replace a device node.
  direct_ = is_special_file(path_);
  const auto text = document_writer();
  if (!direct_) {
    // Published before the rename: a signal from here on writes this document, which
    // holds all a reader has seen (the one before may lack the newest results), and
    // removes the temporary this rewrite leaves behind.
    const std::string tmp = fmt::format("{}.tmp.{}", path_, random_suffix());
    if (!finished_) publish_for_signals(tmp);
    write_renamed(text, tmp);
  } else if (finished_) {
    write_direct(text);  // once: a device or fifo gets one document, not one per size
  } else {
    publish_for_signals("");
  }
  if (finished_ && published_) {
    publish_signal_document(nullptr);  // the verdict is written; a late signal leaves it
    published_ = false;
  }
  last_write_end_ = std::chrono::steady_clock::now();
  last_write_s_ = std::chrono::duration<double>(last_write_end_ - start).count();
}

void ResultsFile::write_renamed(const std::function<bool(int)>& body, std::string tmp) {
  // Write beside the target and rename: a reader never sees half a file, and a crash
  // mid-write leaves the previous complete version. A fresh random name, created
  // exclusively and never through a symlink, so nothing planted there is followed.
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    if (attempt > 0) tmp = fmt::format("{}.tmp.{}", path_, random_suffix());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) fail_write(errno, fmt::format("creating a temporary file beside '{}'", path_));
  bool ok = body(fd);
  int err = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path_.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    fail_write(err, fmt::format("writing the results to '{}'", path_));
  }
}

void ResultsFile::write_direct(const std::function<bool(int)>& body) const {
  // Non-blocking open: a fifo without a reader fails (ENXIO) instead of hanging.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw IoError(fmt::format("cannot open --json '{}' ({}){}", path_, errno_text(err),
                              err == ENXIO ? ": a fifo needs a reader before the run ends" : ""));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const bool ok = body(fd);
  const int err = errno;
  ::close(fd);
  if (!ok) throw IoError(fmt::format("writing the results to '{}' failed ({})", path_, errno_text(err)));
}

void ResultsFile::fail_write(int err, const std::string& what) {
  const std::string error = fmt::format("{} ({})", errno_text(err), what);
  // The last good file still says "running": say "failed" in it, in place, within the
  // space it already has (a full disk has no room for another copy).
  bool kept = false;
  if (published_) {
    kept = overwrite_signal_document_in_place(*published_doc_, error.c_str());
    publish_signal_document(nullptr);
    published_ = false;
  }
  finished_ = true;
  doc_["status"] = "failed";
  doc_["error"] = error;
  throw IoError(fmt::format(
      "{}: {}; free space (or fix the directory) and run again", error,
      kept ? "the file keeps the results written before, marked failed" : "the file keeps the results written before"));
}

void ResultsFile::publish_for_signals(const std::string& pending_tmp) {
  auto d = std::make_unique<SignalDocument>();
  d->path = path_;
  d->rename = !direct_;
  d->tmp_path = fmt::format("{}.tmp.{}", path_, random_suffix());
  d->pending_tmp = pending_tmp;
  // The handlers need the whole text ready (twice: indented and compact). Up to this many
  // streamed elements (about 40 MB of pair records) it holds them; past it, the document
  // a signal leaves says failed without them, and the note says so.
  constexpr size_t kSignalCopyElements = 100000;
  size_t elements = 0;
  std::map<std::string, size_t> by_member;  // "rail_pairs" -> its records, "rails" -> its rows
  for (const auto& [at, a] : streamed_) {
    elements += a.count;
    by_member[at.substr(1, at.find('/', 1) - 1)] += a.count;
  }
  std::string left_out;
  for (const auto& [member, count] : by_member)
    left_out += fmt::format("{}{} {}", left_out.empty() ? "" : ", ", count, member);
  const bool whole = elements <= kSignalCopyElements;
  json failed = whole ? with_streamed(doc_, streamed_) : doc_;
  failed["status"] = "failed";
  failed["error"] = kErrorSentinel;
  failed["finished_at"] = kTimeSentinel;
  failed["updated_at"] = kTimeSentinel;
  d->pretty = punch_holes(failed.dump(2) + '\n');
  d->compact = punch_holes(failed.dump() + '\n');
  d->note = whole ? fmt::format("; the results so far are in '{}', marked failed", path_)
                  : fmt::format(
                        "; the results so far are in '{}', marked failed, without its {} (too many to keep a "
                        "second copy for a signal)",
                        path_, left_out);
  published_doc_ = d.get();
  publish_signal_document(std::move(d));
  published_ = true;
}

}  // namespace railbench
