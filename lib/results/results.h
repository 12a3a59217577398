// The results file: one JSON document per run, schema "railbench.result" (schema.h,
// documented in lib/results/README.md; read.h reads one back). It is rewritten
// atomically after every message size, so whatever was measured survives a failure later
// in the sweep, and after each rewrite a "failed" copy is handed to the signal handlers
// (lib/runtime/signals.h), so a run ended by a signal still says so.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/stats.h"
#include "lib/results/json_stream.h"
#include "lib/results/schema.h"
#include "lib/runtime/signals.h"

namespace railbench {

nlohmann::json to_json(const Summary& s);
Summary summary_from_json(const nlohmann::json& j);

// Refuses a --json target that cannot be written, before anything runs: a directory,
// a directory that does not exist or is not writable. Throws UsageError naming it (as
// `option`, with `example` as the file name to suggest inside a directory).
void check_results_path(const std::string& path, const std::string& option = "--json",
                        const std::string& example = "results.json");

// Replaces the regular file `path` with `text` atomically (written beside it, then
// renamed), or writes a device or fifo directly. Throws IoError naming `option`.
void write_text_file(const std::string& path, const std::string& text, const std::string& option);

class ResultsFile {
 public:
  // `path` empty: keep the document in memory only. `header` holds "command",
  // "config", "world" and "transport"; schema fields and timestamps are added here.
  // A regular file (or a new one) is replaced atomically at every rewrite; a device or
  // fifo (/dev/null, /dev/stdout) is never replaced: it gets the document once, at the end.
  ResultsFile(std::string path, nlohmann::json header);
  // A run that ends without finish() (an unexpected exception) is recorded as failed.
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  // Also writes `render(document)` (a CSV of its rows) to `csv_path` at every rewrite,
  // before the JSON and the same way (atomically; a device or fifo once, at the end), and
  // writes it now. Empty path: nothing. A CSV write that fails marks the run failed, stops
  // the CSV (it keeps the rows written before) and throws IoError.
  void add_csv(std::string csv_path, std::function<std::string(const nlohmann::json&)> render);
  // The same for any file derived from the document (--prometheus: its metrics),
  // refused up front as `option` when it cannot be written (`example`: a file name to
  // suggest inside a directory).
  void add_sidecar(std::string path, std::string option, const std::string& example,
                   std::function<std::string(const nlohmann::json&)> render);

  // Appends to "results" and rewrites the file. A write that fails (a full disk) marks
  // the last good file failed in place where it can, removes the temporary and throws IoError.
  void add(nlohmann::json size_result);
  // Sets a top-level field (e.g. "channels") and rewrites the file.
  void set(const std::string& key, nlohmann::json value);
  // Sets a top-level array too large to hold as JSON (validate's 4 M pair records at
  // 1,024 x 8) and rewrites the file: `count` elements, made one at a time by `element`
  // while the file is written, the same bytes as set(key, the array). doc() holds it as
  // an empty array. `element` must stay valid until `key` is set again or the run ends.
  // A file that took over a second to write is rewritten at most every tenth of the run:
  // the later calls only note what to write next (finish() always writes).
  void set_array(const std::string& key, size_t count, std::function<nlohmann::json(size_t)> element);
  // Sets a top-level field whose large arrays (each at its JSON pointer in `arrays`, such
  // as "/rails/0/bw_gbs") are made as set_array's are; `value` holds anything there (an
  // empty array is put in its place). Rewrites the file as set_array does.
  void set_with_arrays(const std::string& key, nlohmann::json value, StreamedArrays arrays);
  // Marks the run complete, or failed with `error` (results so far are kept). Only the
  // first verdict counts: after a failed write, a later finish() changes nothing.
  void finish(bool complete, const std::string& error = "");
  const nlohmann::json& doc() const { return doc_; }

 private:
  void write();
  void write_json();
  // "" when written (or nothing to write), else what went wrong with the first that failed.
  std::string write_sidecars();
  // `tmp`: the temporary's name, already published for the signal handlers.
  void write_renamed(const std::function<bool(int)>& body, std::string tmp);
  void write_direct(const std::function<bool(int)>& body) const;
  // Writes the document to a file descriptor: its text, or streamed (json_stream.h).
  std::function<bool(int)> document_writer() const;
  // A large file's rewrite that can wait (set_array's note).
  bool rewrite_can_wait() const;
  [[noreturn]] void fail_write(int err, const std::string& what);
  void publish_for_signals(const std::string& pending_tmp);

  std::string path_;
  bool direct_ = false;     // a device or fifo: written once, when the run ends
  bool finished_ = false;   // the verdict is in: nothing changes the file any more
  bool published_ = false;  // a document for the signal handlers is out
  // That document: owned by lib/signals, valid while published_.
  const SignalDocument* published_doc_ = nullptr;
  nlohmann::json doc_;
  StreamedArrays streamed_;  // set_array's and set_with_arrays' arrays, by JSON pointer
  void forget_streamed(const std::string& key);
  double last_write_s_ = 0;  // how long the last JSON write took
  std::chrono::steady_clock::time_point last_write_end_{};
  struct Sidecar {
    std::string path, option;
    std::function<std::string(const nlohmann::json&)> render;
    bool failed = false;  // a write failed: the file keeps what it had
  };
  std::vector<Sidecar> sidecars_;
};

}  // namespace railbench
