// kvcache --serve's requests generated as the run reads them (collectives/kvcache's
// KvRequestSource): arrival times drawn (or a trace's), sizes drawn (or the trace's prompt
// lengths), each request's decode rank and held prefix routed, and its ready time after
// prefill compute, in arrival order and the same on every rank. Nothing is kept per
// request, so an hour of requests takes the memory of a second's. Pure logic,
// unit-tested in tests/kvcache/test_serve_source.cc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "bench/commands/kvcache/kvserve_hist.h"
#include "bench/commands/kvcache/kvserve_load.h"
#include "collectives/kvcache/routing.h"
#include "collectives/kvcache/transfer.h"

namespace railbench {

struct ServeSourceSpec {
  size_t requests = 0;
  // Arrivals: a trace's times (at least `requests` of them), else drawn at `rate`.
  const std::vector<double>* trace_arrivals = nullptr;
  double rate = 1, burstiness = 1;
  uint64_t seed = 1;
  // Tokens per request: fixed (every request moves its whole slot), drawn from the
  // distribution, or a trace's prompt lengths (`trace_tokens`).
  TokenDist tokens;
  uint64_t fixed_tokens = 0;
  const std::vector<uint64_t>* trace_tokens = nullptr;
  uint64_t max_tokens = 0;
  uint64_t block_tokens = 16;
  uint64_t shape_blocks = 1;  // blocks per (layer, plane) of a whole slot
  // The route's settings (not its per-request vectors) and each request's prompt hash ids.
  KvRouteInput route;
  const std::vector<std::vector<uint64_t>>* hash_ids = nullptr;
  // Pairs: round-robin (request i on pair i mod pairs) or, with `mesh`, prefill i mod
  // prefill_ranks with the routed decode rank (pair = prefill x decode_ranks + decode).
  size_t pairs = 1, prefill_ranks = 1;
  bool mesh = false;
  double prefill_us_per_token = 0;  // > 0: ready after compute, one request at a time per prefill rank
};

class ServeSource : public KvRequestSource {
 public:
  explicit ServeSource(ServeSourceSpec spec);
  void rewind() override;
  bool next(KvServeRequest& out) override;
  // Of the request next() returned last: its tokens, routed blocks and decode rank's index.
  uint64_t tokens() const { return tokens_; }
  uint64_t route_blocks() const { return route_blocks_; }
  int decode() const { return decode_; }

 private:
  ServeSourceSpec spec_;
  size_t i_ = 0;
  std::optional<ArrivalClock> clock_;
  std::optional<TokenDraws> draws_;
  std::optional<KvRouter> router_;
  std::vector<double> busy_until_;  // per prefill rank
  uint64_t tokens_ = 0, route_blocks_ = 0;
  int decode_ = 0;
};

// What a run's schedule holds, from one pass over its source before the run: the arrival
// span, requests and KV blocks (routed, held) per decode rank, the request sizes and the
// wait for prefill compute. Bounded: sizes are counted per distinct block count.
struct ServeScheduleStats {
  size_t requests = 0;
  double span_s = 0;  // the last arrival
  std::vector<uint64_t> requests_per_decode, saved_per_decode;
  uint64_t blocks = 0, saved = 0;
  std::map<uint64_t, uint64_t> request_blocks;  // blocks per (layer, plane) -> requests
  LatencyHistogram prefill_us;                  // ready - arrival
};
ServeScheduleStats schedule_stats(ServeSource& source, size_t decode_ranks);

// Exact summary (nearest-rank percentiles) of values given as value -> count, each value
// times `scale`.
Summary summarize_counts(const std::map<uint64_t, uint64_t>& counts, double scale);

}  // namespace railbench
