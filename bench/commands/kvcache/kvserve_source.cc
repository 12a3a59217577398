#include "bench/commands/kvcache/kvserve_source.h"

#include <algorithm>
#include <cmath>

namespace railbench {

ServeSource::ServeSource(ServeSourceSpec spec) : spec_(std::move(spec)) {
  rewind();
}

void ServeSource::rewind() {
  i_ = 0;
  clock_.reset();
  draws_.reset();
  if (!spec_.trace_arrivals) clock_.emplace(spec_.rate, spec_.burstiness, spec_.seed);
  if (spec_.tokens.kind == TokenDist::Kind::uniform || spec_.tokens.kind == TokenDist::Kind::lognormal)
    draws_.emplace(spec_.tokens, spec_.seed, spec_.max_tokens);
  router_.emplace(spec_.route);
  busy_until_.assign(std::max<size_t>(spec_.prefill_ranks, 1), 0);
}

bool ServeSource::next(KvServeRequest& out) {
  if (i_ >= spec_.requests) return false;
  const size_t i = i_++;
  out = KvServeRequest{};
  out.id = static_cast<uint32_t>(i);
  out.arrival_s = spec_.trace_arrivals ? (*spec_.trace_arrivals)[i] : clock_->next();
  const bool fixed = spec_.tokens.kind == TokenDist::Kind::fixed;
  if (fixed) {
    tokens_ = spec_.fixed_tokens;
  } else if (spec_.tokens.kind == TokenDist::Kind::trace) {
    tokens_ = std::max<uint64_t>((*spec_.trace_tokens)[i], 1);  // a logged 0 still holds a block
  } else {
    tokens_ = draws_->next();
  }
  const uint64_t bt = std::max<uint64_t>(spec_.block_tokens, 1);
  route_blocks_ = fixed ? spec_.shape_blocks : (tokens_ + bt - 1) / bt;
  if (!fixed) out.blocks = route_blocks_;
  static const std::vector<uint64_t> kNone;
  const auto& ids = spec_.hash_ids && i < spec_.hash_ids->size() ? (*spec_.hash_ids)[i] : kNone;
  const KvRouter::Choice c = router_->next(route_blocks_, ids);
  decode_ = c.decode;
  out.skip = c.skip;
  const size_t prefill = i % std::max<size_t>(spec_.prefill_ranks, 1);
  if (spec_.mesh) {
    out.pair = static_cast<int>(prefill) * spec_.route.decode_ranks + c.decode;
  } else {
    out.pair = static_cast<int>(i % std::max<size_t>(spec_.pairs, 1));
  }
  out.ready_s = out.arrival_s;
  if (spec_.prefill_us_per_token > 0) {
    // Pair k's prefill rank is k mod prefill ranks (kv_pairs); with a mesh, i mod it.
    const size_t p = spec_.mesh ? prefill : static_cast<size_t>(out.pair) % busy_until_.size();
    double& busy = busy_until_[p];
    busy = std::max(out.arrival_s, busy) + spec_.prefill_us_per_token * 1e-6 * static_cast<double>(tokens_);
    out.ready_s = busy;
  }
  return true;
}

ServeScheduleStats schedule_stats(ServeSource& source, size_t decode_ranks) {
  ServeScheduleStats st;
  st.requests_per_decode.assign(decode_ranks, 0);
  st.saved_per_decode.assign(decode_ranks, 0);
  source.rewind();
  KvServeRequest r;
  while (source.next(r)) {
    ++st.requests;
    st.span_s = r.arrival_s;
    const auto d = static_cast<size_t>(source.decode());
    if (d < decode_ranks) {
      ++st.requests_per_decode[d];
      st.saved_per_decode[d] += r.skip;
    }
    st.blocks += source.route_blocks();
    st.saved += r.skip;
    ++st.request_blocks[source.route_blocks()];
    st.prefill_us.add((r.ready_s - r.arrival_s) * 1e6);
  }
  source.rewind();
  return st;
}

Summary summarize_counts(const std::map<uint64_t, uint64_t>& counts, double scale) {
  Summary s;
  uint64_t n = 0;
  double sum = 0;
  for (const auto& [v, c] : counts) {
    n += c;
    sum += static_cast<double>(v) * scale * static_cast<double>(c);
  }
  if (n == 0) return s;
  s.count = n;
  s.min = static_cast<double>(counts.begin()->first) * scale;
  s.max = static_cast<double>(counts.rbegin()->first) * scale;
  s.mean = sum / static_cast<double>(n);
  double sq = 0;
  for (const auto& [v, c] : counts) {
    const double d = static_cast<double>(v) * scale - s.mean;
    sq += d * d * static_cast<double>(c);
  }
  s.stdev = n > 1 ? std::sqrt(sq / static_cast<double>(n - 1)) : 0;
  // Nearest rank as percentile_sorted computes it, walking the counts instead of a sorted copy.
  const auto at = [&](double p) {
    const auto nn = static_cast<long long>(n);
    const auto rank = static_cast<uint64_t>(std::clamp((std::llround(p * 10.0) * nn + 999) / 1000, 1LL, nn));
    uint64_t seen = 0;
    for (const auto& [v, c] : counts) {
      seen += c;
      if (seen >= rank) return static_cast<double>(v) * scale;
    }
    return s.max;
  };
  s.p50 = at(50);
  s.p90 = at(90);
  s.p99 = at(99);
  s.p999 = at(99.9);
  return s;
}

}  // namespace railbench
