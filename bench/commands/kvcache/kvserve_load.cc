#include "bench/commands/kvcache/kvserve_load.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/core/sizes.h"

namespace railbench {

std::vector<double> arrival_times(double rate, double burstiness, uint64_t seed, size_t n) {
  ArrivalClock clock(rate, burstiness, seed);
  std::vector<double> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(clock.next());
  return out;
}

// mt19937_64 and gamma_distribution are specified well enough that every rank of one job
// (one libstdc++) draws the same sequence; the prefill ranks rely on that.
ArrivalClock::ArrivalClock(double rate, double burstiness, uint64_t seed)
    : gen_((check_serve_load(rate, burstiness), seed)), gap_(burstiness, 1.0 / (rate * burstiness)) {}

double ArrivalClock::next() {
  const double t = t_;
  t_ += gap_(gen_);
  return t;
}

void check_serve_load(double rate, double burstiness) {
  if (!std::isfinite(rate) || rate <= 0)
    throw UsageError(fmt::format("--rate {} must be a number of requests per second above 0 (e.g. --rate 100)", rate));
  if (!std::isfinite(burstiness) || burstiness <= 0)
    throw UsageError(fmt::format(
        "--burstiness {} must be a number above 0: 1 is Poisson, below 1 burstier, above 1 more regular", burstiness));
}

Slo parse_slo(const std::string& text) {
  const auto bad = [&] {
    return UsageError(
        fmt::format("--slo '{}': expected pP:LIMIT with a unit, such as p99:50ms, p50:800us or p99.9:1s", text));
  };
  const auto colon = text.find(':');
  if (text.size() < 4 || text[0] != 'p' || colon == std::string::npos) throw bad();
  Slo s;
  s.text = text;
  try {
    size_t used = 0;
    const std::string pct = text.substr(1, colon - 1);
    s.percentile = std::stod(pct, &used);
    if (used != pct.size()) throw bad();
    const std::string lim = text.substr(colon + 1);
    const double v = std::stod(lim, &used);
    const std::string unit = lim.substr(used);
    const double scale = unit == "us" ? 1 : unit == "ms" ? 1e3 : unit == "s" ? 1e6 : -1;
    if (scale < 0) throw bad();
    s.limit_us = v * scale;
  } catch (const std::logic_error&) {  // stod's invalid_argument and out_of_range
    throw bad();
  }
  if (!(s.percentile > 0 && s.percentile <= 100) || !(s.limit_us > 0) || !std::isfinite(s.limit_us)) throw bad();
  return s;
}

namespace {

// A count of tokens in 1..max_tokens, else UsageError naming the whole --tokens value.
uint64_t token_count(const std::string& part, const std::string& text, uint64_t max_tokens) {
  uint64_t n = 0;
  try {
    n = parse_size(part);
  } catch (const std::exception&) {
    n = 0;
  }
  if (n == 0 || n > max_tokens)
    throw UsageError(fmt::format("--tokens {}: '{}' is not a token count from 1 to {}: give e.g. uniform:512-8K", text,
                                 part, max_tokens));
  return n;
}

}  // namespace

TokenDist parse_token_dist(const std::string& text, uint64_t max_tokens) {
  TokenDist d;
  d.text = text;
  const auto colon = text.find(':');
  if (text == "trace") {
    d.kind = TokenDist::Kind::trace;
    return d;
  }
  if (colon == std::string::npos) {
    d.lo = d.hi = token_count(text, text, max_tokens);
    return d;
  }
  const std::string kind = text.substr(0, colon), rest = text.substr(colon + 1);
  if (kind == "uniform") {
    const auto dash = rest.find('-');
    if (dash == std::string::npos)
      throw UsageError(fmt::format("--tokens {}: expected uniform:A-B, such as uniform:512-8K", text));
    d.kind = TokenDist::Kind::uniform;
    d.lo = token_count(rest.substr(0, dash), text, max_tokens);
    d.hi = token_count(rest.substr(dash + 1), text, max_tokens);
    if (d.lo > d.hi)
      throw UsageError(fmt::format("--tokens {}: the low end {} is above the high end {}: give uniform:{}-{}", text,
                                   d.lo, d.hi, d.hi, d.lo));
    return d;
  }
  if (kind == "lognormal") {
    const auto comma = rest.find(',');
    if (comma == std::string::npos)
      throw UsageError(fmt::format("--tokens {}: expected lognormal:MEDIAN,SIGMA, such as lognormal:2K,0.8", text));
    d.kind = TokenDist::Kind::lognormal;
    d.median = static_cast<double>(token_count(rest.substr(0, comma), text, max_tokens));
    const std::string sig = rest.substr(comma + 1);
    size_t used = 0;
    try {
      d.sigma = std::stod(sig, &used);
    } catch (const std::logic_error&) {  // stod's invalid_argument and out_of_range
      used = 0;
    }
    if (used == 0 || used != sig.size() || !std::isfinite(d.sigma) || d.sigma < 0 || d.sigma > 10)
      throw UsageError(
          fmt::format("--tokens {}: sigma '{}' must be a number from 0 to 10, such as lognormal:2K,0.8", text, sig));
    return d;
  }
  throw UsageError(fmt::format(
      "--tokens {}: unknown distribution '{}': give a count (4096), uniform:A-B, lognormal:MEDIAN,SIGMA or trace", text,
      kind));
}

std::vector<uint64_t> draw_tokens(const TokenDist& dist, uint64_t seed, size_t n, uint64_t max_tokens) {
  TokenDraws draws(dist, seed, max_tokens);
  std::vector<uint64_t> out(n);
  for (auto& t : out) t = draws.next();
  return out;
}

// An odd constant added to the seed: a stream apart from the arrivals' mt19937_64(seed).
TokenDraws::TokenDraws(const TokenDist& dist, uint64_t seed, uint64_t max_tokens)
    : dist_(dist),
      max_tokens_(max_tokens),
      gen_(seed + 0x9E3779B97F4A7C15ULL),
      uniform_(dist.lo, std::max(dist.lo, dist.hi)),
      lognormal_(std::log(std::max(dist.median, 1.0)), dist.sigma) {
  if (dist.kind == TokenDist::Kind::trace)
    throw UsageError("--tokens trace takes the lengths from --trace: give --trace FILE or a count");
}

uint64_t TokenDraws::next() {
  if (dist_.kind == TokenDist::Kind::uniform) return uniform_(gen_);
  if (dist_.kind == TokenDist::Kind::lognormal)
    return static_cast<uint64_t>(std::clamp(std::round(lognormal_(gen_)), 1.0, static_cast<double>(max_tokens_)));
  return dist_.lo;
}

void ServeTally::Group::add(const ServeSample& s) {
  queue.add(s.queue_us);
  transfer.add(s.transfer_us);
  total.add(s.total_us);
}

void ServeTally::Group::merge(const Group& other) {
  queue.merge(other.queue);
  transfer.merge(other.transfer);
  total.merge(other.total);
  acked_in_window += other.acked_in_window;
}

ServeTally::ServeTally(size_t decode_ranks, size_t rails, double slo_limit_us_, ServeWindow window_)
    : per_decode(decode_ranks), per_rail(rails), slo_limit_us(slo_limit_us_), window(window_) {}

void ServeTally::add(size_t decode, int rail, const ServeSample& s, double arrival_s) {
  Group* d = decode < per_decode.size() ? &per_decode[decode] : nullptr;
  Group* r = rail >= 0 && static_cast<size_t>(rail) < per_rail.size() ? &per_rail[static_cast<size_t>(rail)] : nullptr;
  // The ack's time on the schedule's clock: a warm-up request acked inside the window was
  // carried inside it, so it counts there.
  const double ack_s = arrival_s + s.total_us * 1e-6;
  if (ack_s >= window.from_s && ack_s <= window.to_s) {
    for (Group* g : {&all, d, r})
      if (g) ++g->acked_in_window;
  }
  if (arrival_s < window.from_s) {
    ++warmup;
    return;
  }
  for (Group* g : {&all, d, r})
    if (g) g->add(s);
  if (slo_limit_us > 0 && s.total_us <= slo_limit_us) ++within_slo;
}

void ServeTally::merge(const ServeTally& other) {
  all.merge(other.all);
  for (size_t d = 0; d < per_decode.size() && d < other.per_decode.size(); ++d)
    per_decode[d].merge(other.per_decode[d]);
  for (size_t r = 0; r < per_rail.size() && r < other.per_rail.size(); ++r) per_rail[r].merge(other.per_rail[r]);
  within_slo += other.within_slo;
  warmup += other.warmup;
}

std::vector<double> ServeTally::words() const {
  std::vector<double> out{static_cast<double>(within_slo), static_cast<double>(warmup)};
  const auto group = [&](const Group& g) {
    for (const LatencyHistogram* h : {&g.queue, &g.transfer, &g.total}) h->append_words(out);
    out.push_back(static_cast<double>(g.acked_in_window));
  };
  group(all);
  for (const Group& g : per_decode) group(g);
  for (const Group& g : per_rail) group(g);
  return out;
}

void ServeTally::merge_words(std::span<const double> words) {
  ServeTally other(per_decode.size(), per_rail.size(), slo_limit_us, window);
  size_t at = 0;
  other.within_slo = static_cast<uint64_t>(words[at++]);
  other.warmup = static_cast<uint64_t>(words[at++]);
  const auto group = [&](Group& g) {
    for (LatencyHistogram* h : {&g.queue, &g.transfer, &g.total}) *h = LatencyHistogram::from_words(words, at);
    g.acked_in_window = static_cast<uint64_t>(words[at++]);
  };
  group(other.all);
  for (Group& g : other.per_decode) group(g);
  for (Group& g : other.per_rail) group(g);
  merge(other);
}

uint64_t min_samples(double percentile) {
  if (!(percentile < 100)) return kMinPercentileSamples;
  // The nearest rank ceil(P/100 x n) is below n (not the largest) once n > 1 / (1 - P/100);
  // rounded to a whole count first, so that p99's 100.0000001 stays 100.
  const double need = std::round(1e6 / (1 - percentile / 100)) / 1e6;
  return std::max<uint64_t>(kMinPercentileSamples, static_cast<uint64_t>(std::ceil(need)));
}

LoadVerdict judge_load(uint64_t arrived, uint64_t acked_in_window, double window_s) {
  LoadVerdict v;
  if (window_s > 0) {
    v.arrival_rps = static_cast<double>(arrived) / window_s;
    v.carried_rps = static_cast<double>(acked_in_window) / window_s;
  }
  v.judged = window_s > 0 && arrived >= kMinLoadRequests;
  v.overload = v.judged && static_cast<double>(acked_in_window) < kCarriedShare * static_cast<double>(arrived);
  return v;
}

ServeSummary summarize_serve(const ServeTally& tally, double asked_rps, uint64_t bytes, const Slo* slo) {
  ServeSummary s;
  s.requests = tally.all.total.count();
  s.warmup_requests = tally.warmup;
  s.queue_us = tally.all.queue.summary();
  s.transfer_us = tally.all.transfer.summary();
  s.total_us = tally.all.total.summary();
  s.window_s = std::max(0.0, tally.window.seconds());
  const LoadVerdict load = judge_load(s.requests, tally.all.acked_in_window, s.window_s);
  s.arrival_rps = load.arrival_rps;
  s.carried_rps = load.carried_rps;
  s.offered_rps = asked_rps > 0 ? asked_rps : load.arrival_rps;
  s.offered_gbps = s.offered_rps * static_cast<double>(bytes) / 1e9;
  s.carried_gbps = s.carried_rps * static_cast<double>(bytes) / 1e9;
  s.load_judged = load.judged;
  s.overload = load.overload;
  if (slo) {
    const auto n = static_cast<double>(s.requests);
    s.goodput = n > 0 ? static_cast<double>(tally.within_slo) / n : 0;
    s.slo_us = tally.all.total.percentile(slo->percentile);
    s.slo_xfer_us = tally.all.transfer.percentile(slo->percentile);
    // Exact, unlike slo_us: the nearest-rank P-th percentile is within the limit exactly
    // when at least that rank's count of requests are.
    const auto rank =
        std::clamp<long long>((std::llround(slo->percentile * 10.0) * static_cast<long long>(s.requests) + 999) / 1000,
                              1, std::max<long long>(static_cast<long long>(s.requests), 1));
    s.slo_judged = s.requests >= min_samples(slo->percentile);
    s.slo_met = s.slo_judged && tally.within_slo >= static_cast<uint64_t>(rank);
  }
  return s;
}

RunVerdict judge_run(const ServeSummary& s, const Slo& slo) {
  RunVerdict v;
  if (!s.load_judged || !s.slo_judged) {
    v.why = fmt::format("not judged: {} requests in the window, {} needs {} or more", s.requests, slo.text,
                        std::max(min_samples(slo.percentile), kMinLoadRequests));
  } else if (s.overload) {
    v.why = fmt::format("overload: carried {:.1f} req/s, below {:.0f}% of the {:.1f} that arrived", s.carried_rps,
                        100 * kCarriedShare, s.arrival_rps);
  } else if (!s.slo_met) {
    v.why = fmt::format("p{} of total {:.1f} us is above {:.0f} us", slo.percentile, s.slo_us, slo.limit_us);
  } else {
    v.met = true;
  }
  return v;
}

}  // namespace railbench
