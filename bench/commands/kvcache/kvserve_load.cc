#include "bench/commands/kvcache/kvserve_load.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/core/sizes.h"

namespace railbench {

std::vector<double> arrival_times(double rate, double burstiness, uint64_t seed, size_t n) {
  check_serve_load(rate, burstiness);
  // mt19937_64 and gamma_distribution are specified well enough that every rank of one
  // job (one libstdc++) draws the same sequence; the prefill ranks rely on that.
  std::mt19937_64 gen(seed);
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  std::vector<double> out;
  out.reserve(n);
  double t = 0;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(t);
    t += gap(gen);
  }
  return out;
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
  if (dist.kind == TokenDist::Kind::trace)
    throw UsageError("--tokens trace takes the lengths from --trace: give --trace FILE or a count");
  // An odd constant added to the seed: a stream apart from the arrivals' mt19937_64(seed).
  std::mt19937_64 gen(seed + 0x9E3779B97F4A7C15ULL);
  std::vector<uint64_t> out(n, dist.lo);
  if (dist.kind == TokenDist::Kind::uniform) {
    std::uniform_int_distribution<uint64_t> u(dist.lo, dist.hi);
    for (auto& t : out) t = u(gen);
  } else if (dist.kind == TokenDist::Kind::lognormal) {
    std::lognormal_distribution<double> ln(std::log(dist.median), dist.sigma);
    const auto top = static_cast<double>(max_tokens);
    for (auto& t : out) t = static_cast<uint64_t>(std::clamp(std::round(ln(gen)), 1.0, top));
  }
  return out;
}

ServeSummary summarize_serve(const std::vector<ServeSample>& samples, double span_s, double wall_s, uint64_t bytes,
                             const Slo* slo) {
  ServeSummary s;
  s.requests = samples.size();
  std::vector<double> v(samples.size());
  const auto column = [&](double ServeSample::*field) {
    for (size_t i = 0; i < samples.size(); ++i) v[i] = samples[i].*field;
    return summarize(v);
  };
  s.queue_us = column(&ServeSample::queue_us);
  s.transfer_us = column(&ServeSample::transfer_us);
  s.total_us = column(&ServeSample::total_us);
  const auto n = static_cast<double>(s.requests);
  // n requests span n-1 gaps; the offered rate is what the generator asked for.
  s.offered_rps = span_s > 0 && n > 1 ? (n - 1) / span_s : 0;
  s.carried_rps = wall_s > 0 ? n / wall_s : 0;
  s.offered_gbps = s.offered_rps * static_cast<double>(bytes) / 1e9;
  s.carried_gbps = s.carried_rps * static_cast<double>(bytes) / 1e9;
  s.overload = s.offered_rps > 0 && s.carried_rps < 0.9 * s.offered_rps;
  if (slo) {
    const auto within = std::count_if(samples.begin(), samples.end(),
                                      [&](const ServeSample& x) { return x.total_us <= slo->limit_us; });
    s.goodput = n > 0 ? static_cast<double>(within) / n : 0;
    std::sort(v.begin(), v.end());  // v holds the totals (the last column)
    s.slo_us = v.empty() ? 0 : percentile_sorted(v, slo->percentile);
    s.slo_met = !v.empty() && s.slo_us <= slo->limit_us;
  }
  return s;
}

}  // namespace railbench
