// One pair test of validate, run on both ranks of the pair, and the exchange that merges
// every rank's side of a round into one result per pair on every rank. A pair that
// fails its deadline is abandoned, never retried: its result says ok false and why,
// which the verdict reads as a link cut off in that round.
#pragma once

#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"
#include "bench/runner/pair_test.h"
#include "bench/runner/run_context.h"

namespace railbench {

// The leader (side a) keeps the latency, a->b and both ways; side b keeps b->a.
class PairRunner {
 public:
  PairRunner(RunContext& ctx, PairTest& test, const SuConfig& c) : ctx_(ctx), test_(test), c_(c) {}

  // Every rank calls it once per round (`peer` < 0: this rank rests), since the
  // latency ping-pongs of all pairs finish before any bandwidth test starts: latency
  // is measured on quiet links, as perftest measures it, and the same in every round.
  std::optional<nlohmann::json> run(PairResult key, int peer, bool leader);

  // Every rank's side of a round, merged into one result per pair; every rank gets
  // all of them (the verdict is computed everywhere alike).
  std::vector<PairResult> exchange(const std::optional<nlohmann::json>& mine);

  bool any_broken() const { return !broken_.empty(); }

 private:
  nlohmann::json side_json(const PairResult& r, bool leader, int peer) const;

  RunContext& ctx_;
  PairTest& test_;
  const SuConfig& c_;
  std::set<std::pair<int, int>> broken_;  // rank pairs that failed: never tested again
};

}  // namespace railbench
