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

// The part of a run that is judged, in the schedule's seconds (arrival times count from
// the run's start): requests arriving at or after `from_s` are judged (their times kept),
// earlier ones are the warm-up; an ack counts as carried when it lands within
// [from_s, to_s] (to_s: the last arrival). A whole --rate run is the window [0, last arrival].
struct ServeWindow {
  double from_s = 0;
  double to_s = 0;
  double seconds() const { return to_s - from_s; }
};

// What a serving run measured, kept as it happens in fixed-size histograms (kvserve_hist.h)
// instead of one record per request: over all requests, per decode rank (index into the
// decode ranks) and per rail (with --pin-rails), the requests within the SLO's limit,
// counted exactly, and per group the acks that landed inside the window (what it carried).
// Its size does not grow with the requests, so a rank's tally is what the ranks exchange.
struct ServeTally {
  struct Group {
    LatencyHistogram queue, transfer, total;  // judged requests only
    uint64_t acked_in_window = 0;             // acks inside the window, warm-up requests' included
    void add(const ServeSample& s);
    void merge(const Group& other);
  };
  ServeTally(size_t decode_ranks, size_t rails, double slo_limit_us, ServeWindow window = {0, 1e300});
  // `rail` < 0: not pinned to one. `arrival_s`: the request's arrival in the schedule's time.
  void add(size_t decode, int rail, const ServeSample& s, double arrival_s = 0);
  void merge(const ServeTally& other);
  std::vector<double> words() const;  // fixed size for the same decode ranks and rails
  // Sums every rank's words into one tally of this shape.
  void merge_words(std::span<const double> words);

  Group all;
  std::vector<Group> per_decode, per_rail;
  double slo_limit_us = 0;  // <= 0: no SLO
  ServeWindow window;
  uint64_t within_slo = 0;  // judged requests whose total is at most the limit
  uint64_t warmup = 0;      // requests before the window: carried, not judged
};

// The rules every verdict of a serving run follows (the run's, each probe's, each decode
// rank's and each rail's):
// - load: the group carried what arrived: its acks inside the window are at least
//   kCarriedShare of its arrivals in the window. Carried and arrived are counted over the
//   same window, so the luck of a Poisson draw (the arrivals' count is off the asked
//   rate by about 1/sqrt(n)) cancels; judged only with kMinLoadRequests arrivals or more.
// - percentile: the nearest-rank P-th percentile is judged only with min_samples(P)
//   requests or more, enough that it is not simply the largest.
inline constexpr double kCarriedShare = 0.95;
inline constexpr uint64_t kMinLoadRequests = 100;
inline constexpr uint64_t kMinPercentileSamples = 10;
// max(10, ceil(1 / (1 - P/100))): p50 and p90 10, p99 100, p99.9 1,000, p99.99 10,000; p100 10.
uint64_t min_samples(double percentile);

// A group's load over the window: arrived and carried per second and the verdict.
struct LoadVerdict {
  double arrival_rps = 0, carried_rps = 0;
  bool judged = false;    // enough arrivals to judge
  bool overload = false;  // judged and carried below kCarriedShare of arrived
};
LoadVerdict judge_load(uint64_t arrived, uint64_t acked_in_window, double window_s);

struct ServeSummary {
  Summary queue_us, transfer_us, total_us;  // judged requests
  size_t requests = 0;                      // judged
  size_t warmup_requests = 0;               // before the window
  double window_s = 0;
  double offered_rps = 0;  // asked for (--rate, a probe's rate); a trace's: its arrivals' rate
  double arrival_rps = 0;  // measured: judged arrivals / window
  double carried_rps = 0;  // acks inside the window / window
  double offered_gbps = 0, carried_gbps = 0;
  bool load_judged = false;  // at least kMinLoadRequests arrivals in the window
  bool overload = false;     // judged, and carried below kCarriedShare of arrived
  double goodput = -1;       // share of judged requests whose total is within the SLO limit; < 0 without --slo
  bool slo_judged = false;   // at least min_samples(P) judged requests
  bool slo_met = false;      // judged, and the SLO percentile of total within the limit
  double slo_us = 0;         // the total at the SLO's percentile
  double slo_xfer_us = 0;    // the transfer time alone at the SLO's percentile
};

// `asked_rps`: the rate the arrivals were drawn at (<= 0: a trace's, the measured one
// stands for it); `bytes`: one request's KV bytes. `slo` may be null.
ServeSummary summarize_serve(const ServeTally& tally, double asked_rps, uint64_t bytes, const Slo* slo);

// A probe of --find-max-rate (or any judged run) meets the SLO only when the load and the
// percentile are both judged, the load carried and the percentile within the limit.
// `why` says what failed it, in words ("" when met).
struct RunVerdict {
  bool met = false;
  std::string why;
};
RunVerdict judge_run(const ServeSummary& s, const Slo& slo);

}  // namespace railbench
