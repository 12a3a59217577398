// The results file: one JSON document per run, schema "railbench.result" version 1
// (documented in README.md). It is rewritten atomically after every message size, so
// whatever was measured survives a failure later in the sweep.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/stats.h"

namespace railbench {

inline constexpr const char* kResultSchema = "railbench.result";
inline constexpr int kResultSchemaVersion = 1;

// One side (out-of-place or in-place) of a collective at one size.
struct CollectiveSide {
  double time_us = 0;  // mean over iterations of the iteration time (max over ranks)
  double algbw = 0;    // GB/s
  double busbw = 0;    // GB/s
  uint64_t wrong = 0;  // elements that failed -c, summed over ranks; 0 without -c
  Summary iter_us;     // distribution of iteration times
  bool operator==(const CollectiveSide&) const = default;
};

struct CollectiveRecord {
  uint64_t bytes = 0;
  uint64_t count = 0;
  std::string type;
  std::string redop;
  int root = -1;
  std::string algo;
  CollectiveSide out_of_place;
  CollectiveSide in_place;
  bool operator==(const CollectiveRecord&) const = default;
};

// One pair of ranks on one rail at one size.
struct PairRecord {
  int a = 0, b = 0;  // ranks, a < b
  int rail = 0;
  Summary latency_us;  // ping-pong RTT/2 per iteration
  Summary bw_ab;       // GB/s per iteration, a sends to b
  Summary bw_ba;       // GB/s per iteration, b sends to a
  Summary bw_bidir;    // GB/s per iteration, both at once, bytes of both directions
  uint64_t wrong = 0;  // bytes that failed -c
  bool operator==(const PairRecord&) const = default;
};

struct SendRecvRecord {
  uint64_t bytes = 0;
  std::string op;  // "send", "write" or "read"
  std::vector<PairRecord> pairs;
  bool operator==(const SendRecvRecord&) const = default;
};

nlohmann::json to_json(const Summary& s);
Summary summary_from_json(const nlohmann::json& j);
nlohmann::json to_json(const CollectiveRecord& r);
CollectiveRecord collective_from_json(const nlohmann::json& j);
nlohmann::json to_json(const SendRecvRecord& r);
SendRecvRecord sendrecv_from_json(const nlohmann::json& j);

// Checks the top-level fields of a results document; throws IoError naming the first
// missing or mistyped field.
void validate_result_document(const nlohmann::json& doc);

class ResultsFile {
 public:
  // `path` empty: keep the document in memory only. `header` holds "command",
  // "config", "world" and "transport"; schema fields and timestamps are added here.
  ResultsFile(std::string path, nlohmann::json header);

  void add(nlohmann::json size_result);  // appends to "results" and rewrites the file
  // Sets a top-level field (e.g. "channels") and rewrites the file.
  void set(const std::string& key, nlohmann::json value);
  // Marks the run complete, or failed with `error` (results so far are kept).
  void finish(bool complete, const std::string& error = "");
  const nlohmann::json& doc() const { return doc_; }

 private:
  void write() const;

  std::string path_;
  nlohmann::json doc_;
};

}  // namespace railbench
