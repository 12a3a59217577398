// What `validate` will run for a config and roughly how long it takes, computed from
// the config alone (no ranks, no traffic), so `--plan` answers instantly even for
// 1024 nodes x 8 rails.
#pragma once

#include <string>
#include <vector>

#include "bench/commands/validate/su_config.h"
#include "lib/core/schedule.h"

namespace railbench {

struct ValidatePlan {
  int nodes = 0, rails = 0, ranks = 0;
  std::vector<Round> rounds;   // node pairs per round of the rail checks (all rails at once)
  size_t rail_pair_tests = 0;  // pairs x rails
  Round cross;                 // cross-rail spot checks: node 2m slot s <-> node 2m+1 slot s+1
  double pair_s = 0;           // one pair test: latency, a->b, b->a, both at once
  double rail_s = 0, cross_s = 0, collectives_s = 0, total_s = 0;
};

ValidatePlan make_validate_plan(const SuConfig& config);

// The slot a cross-rail spot check pairs `slot` of an even (first) node with.
inline int cross_partner_slot(int slot, int rails, bool first) {
  return first ? (slot + 1) % rails : (slot - 1 + rails) % rails;
}

// Seconds a run has left, for its progress line: the rail-check rounds not done
// (`total` - `done`) at the pace measured over the `done` ones (`spent_s`), or the
// model's pace before any is done, plus the cross-rail and collective phases still
// ahead (`cross_left`, `collectives_left`) at the model's estimate scaled by the same
// measured / model ratio. Re-tests are not counted: how many there are is unknown.
double validate_remaining_s(const ValidatePlan& plan, size_t total, size_t done, double spent_s, bool cross_left,
                            bool collectives_left);

// Lines for the terminal: phases, rounds (the first few in full), the estimate.
std::vector<std::string> describe_plan(const SuConfig& config, const ValidatePlan& plan);

}  // namespace railbench
