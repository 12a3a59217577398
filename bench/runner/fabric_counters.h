// Fabric counters around each measurement (lib/observe/counters.h): every rank snapshots its
// rails before and after, and the deltas that moved are gathered to every rank as the
// results' "counters" array, naming rank, host and rail.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/observe/counters.h"
#include "lib/runtime/bootstrap.h"
#include "lib/transport/transport.h"

namespace railbench {

class FabricCounters {
 public:
  // Resolves the counter sources of each of `t`'s rails. `enabled` false (--no-counters):
  // begin() and end() do nothing and end() returns null. Every rank must pass the same.
  FabricCounters(const Transport& t, bool enabled);
  bool enabled() const { return enabled_; }
  // What each rail reads, for the results' per-rank rails ("counters": [...]).
  nlohmann::json sources_json(int rail) const;

  // Local snapshot of every rail (no communication).
  void begin();
  // Collective: every rank's deltas since its begin(), as an array of {"rank", "host",
  // "rail", "rail_name", "kinds", "deltas"} for each (rank, rail) whose counters moved
  // (ranks in order), on rank 0 (an empty array elsewhere: only it writes them); null
  // when disabled. `hosts` is each rank's host name.
  nlohmann::json end(Bootstrap& b, const std::vector<std::string>& hosts);
  // This rank's deltas since begin(), without communication: an array of {"rail",
  // "rail_name", "kinds", "deltas"} for its rails that moved; null when disabled.
  nlohmann::json end_local();

 private:
  bool enabled_;
  std::vector<CounterReader> readers_;
  std::vector<std::string> rail_names_;
  std::vector<CounterSnapshot> before_;
};

}  // namespace railbench
