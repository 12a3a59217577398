// What the measuring commands record per size: a collective's two sides, a pair's
// latency and bandwidth distributions, and their JSON form in the results file's
// "results" array (lib/results/README.md). lib/results knows none of them: it stores
// whatever JSON a command adds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/stats.h"

namespace railbench {

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

nlohmann::json to_json(const CollectiveRecord& r);
CollectiveRecord collective_from_json(const nlohmann::json& j);
nlohmann::json to_json(const SendRecvRecord& r);
SendRecvRecord sendrecv_from_json(const nlohmann::json& j);

}  // namespace railbench
