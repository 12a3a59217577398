// kvcache --serve's load model, pure logic (no ranks, no transport) so it is unit-tested
// on its own (tests/kvcache/test_serve_load.cc): the open-loop arrival process, the SLO
// and the per-request summary of a serving run.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/commands/kvcache/kvserve_hist.h"
#include "lib/core/stats.h"

namespace railbench {

// Arrival times (seconds from the run's start, non-decreasing) of `n` requests at a mean
// `rate` per second. Gaps are gamma distributed with shape `burstiness` and mean 1/rate,
// as vLLM's bench serve draws them: burstiness 1 is a Poisson process (exponential gaps),
// below 1 burstier, above 1 more regular. The same seed gives the same times on every rank.
std::vector<double> arrival_times(double rate, double burstiness, uint64_t seed, size_t n);

// The same times one at a time, so a long run draws them as it goes instead of holding them.
class ArrivalClock {
 public:
  ArrivalClock(double rate, double burstiness, uint64_t seed);
  double next();  // 0 first, then each gap added

 private:
  std::mt19937_64 gen_;
  std::gamma_distribution<double> gap_;
  double t_ = 0;
};

// --slo pP:LIMIT, LIMIT with a unit (us, ms, s): "p99:50ms" -> {99, 50000}.
struct Slo {
  double percentile = 0;  // (0, 100]
  double limit_us = 0;    // > 0
  std::string text;       // as given
};
// UsageError naming the value and the form expected.
Slo parse_slo(const std::string& text);

// Refuses a --rate or --burstiness that is not a finite number above 0 (UsageError).
void check_serve_load(double rate, double burstiness);

// --serve's --tokens as a distribution of per-request prompt lengths:
//   "4096"            fixed: every request the same
//   "uniform:A-B"     uniform integers in [A, B]
//   "lognormal:M,S"   lognormal with median M tokens and sigma S (of the log), rounded, at least 1
//   "trace"           the --trace file's prompt length column, request by request
// Counts take the size suffixes of --tokens (4K = 4096).
struct TokenDist {
  enum class Kind : uint8_t { fixed, uniform, lognormal, trace };
  Kind kind = Kind::fixed;
  uint64_t lo = 0, hi = 0;  // fixed: lo == hi; uniform: [lo, hi]
  double median = 0, sigma = 0;
  std::string text;  // as given
};
// UsageError naming --tokens, the value and the forms expected. `max_tokens` bounds every
// count (and a lognormal's median).
TokenDist parse_token_dist(const std::string& text, uint64_t max_tokens);

// `n` prompt lengths drawn from `dist` (not trace), each in [1, max_tokens]. The same
// seed gives the same lengths on every rank; the stream is not the arrivals' one, so a
// size distribution does not change the arrival times of the same --seed.
std::vector<uint64_t> draw_tokens(const TokenDist& dist, uint64_t seed, size_t n, uint64_t max_tokens);

// The same lengths one at a time (draw_tokens' sequence), for a run that draws as it goes.
class TokenDraws {
 public:
  TokenDraws(const TokenDist& dist, uint64_t seed, uint64_t max_tokens);
  uint64_t next();

 private:
  TokenDist dist_;
  uint64_t max_tokens_;
  std::mt19937_64 gen_;
  std::uniform_int_distribution<uint64_t> uniform_;
  std::lognormal_distribution<double> lognormal_;
};

// One request's times, as the prefill rank measures them when its ack arrives.
struct ServeSample {
  double queue_us = 0;     // ready (arrival) until its transfer started
  double transfer_us = 0;  // transfer start until the decode rank's ack
  double total_us = 0;     // arrival until the ack
};

// What a serving run measured, kept as it happens in fixed-size histograms (kvserve_hist.h)
// instead of one record per request: over all requests, per decode rank (index into the
// decode ranks) and per rail (with --pin-rails), and the requests within the SLO's limit,
// counted exactly. Its size does not grow with the requests, so a rank's tally is what the
// ranks exchange.
struct ServeTally {
  struct Group {
    LatencyHistogram queue, transfer, total;
    void add(const ServeSample& s);
    void merge(const Group& other);
  };
  ServeTally(size_t decode_ranks, size_t rails, double slo_limit_us);
  // `rail` < 0: not pinned to one.
  void add(size_t decode, int rail, const ServeSample& s);
  void merge(const ServeTally& other);
  std::vector<double> words() const;  // fixed size for the same decode ranks and rails
  // Sums every rank's words into one tally of this shape.
  void merge_words(std::span<const double> words);

  Group all;
  std::vector<Group> per_decode, per_rail;
  double slo_limit_us = 0;  // <= 0: no SLO
  uint64_t within_slo = 0;  // requests whose total is at most the limit
};

struct ServeSummary {
  Summary queue_us, transfer_us, total_us;
  size_t requests = 0;
  double offered_rps = 0;  // requests / span of their arrival times
  double carried_rps = 0;  // requests / (first arrival to last ack)
  double offered_gbps = 0, carried_gbps = 0;
  bool overload = false;  // carried below 90% of offered: the queue grew for the whole run
  double goodput = -1;    // share of requests whose total is within the SLO limit; < 0 without --slo
  bool slo_met = false;   // the SLO percentile of total within the limit
  double slo_us = 0;      // the total at the SLO's percentile
};

// `span_s`: the last arrival time (first is 0); `wall_s`: first arrival to the last ack
// on the slowest prefill rank; `bytes`: one request's KV bytes. `slo` may be null.
ServeSummary summarize_serve(const ServeTally& tally, double span_s, double wall_s, uint64_t bytes, const Slo* slo);

}  // namespace railbench
