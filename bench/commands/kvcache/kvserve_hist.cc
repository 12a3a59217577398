#include "bench/commands/kvcache/kvserve_hist.h"

#include <algorithm>
#include <cmath>

namespace railbench {

namespace {

const double kGamma = (1 + LatencyHistogram::kRelativeError) / (1 - LatencyHistogram::kRelativeError);
const double kLogGamma = std::log(kGamma);

}  // namespace

size_t LatencyHistogram::buckets() {
  // Bucket 0 (at or below kLowUs), then enough to pass kHighUs, then the overflow.
  static const auto n = static_cast<size_t>(std::ceil(std::log(kHighUs / kLowUs) / kLogGamma)) + 2;
  return n;
}

LatencyHistogram::LatencyHistogram() : counts_(buckets(), 0) {}

size_t LatencyHistogram::bucket(double us) const {
  if (!(us > kLowUs)) return 0;  // NaN too: counted, never indexed past the end
  const double i = std::ceil(std::log(us / kLowUs) / kLogGamma);
  return std::min(static_cast<size_t>(std::max(i, 1.0)), counts_.size() - 1);
}

void LatencyHistogram::add(double us) {
  ++counts_[bucket(us)];
  if (n_ == 0) {
    min_ = max_ = us;
  } else {
    min_ = std::min(min_, us);
    max_ = std::max(max_, us);
  }
  ++n_;
  const double d = us - mean_;
  mean_ += d / static_cast<double>(n_);
  m2_ += d * (us - mean_);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (other.n_ == 0) return;
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  if (n_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  // Chan et al.'s pairwise update: exact in exact arithmetic, stable in floating point.
  const double na = static_cast<double>(n_), nb = static_cast<double>(other.n_), n = na + nb;
  const double d = other.mean_ - mean_;
  mean_ += d * nb / n;
  m2_ += other.m2_ + d * d * na * nb / n;
  n_ += other.n_;
}

double LatencyHistogram::percentile(double p) const {
  if (n_ == 0) return 0;
  // The nearest rank as percentile_sorted computes it (per mille, integer arithmetic).
  const auto n = static_cast<long long>(n_);
  const long long rank = std::clamp((std::llround(p * 10.0) * n + 999) / 1000, 1LL, n);
  uint64_t seen = 0;
  size_t i = 0;
  for (; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= static_cast<uint64_t>(rank)) break;
  }
  const double value = i == 0 ? min_ : 2 * kLowUs * std::pow(kGamma, static_cast<double>(i)) / (kGamma + 1);
  return std::clamp(value, min_, max_);
}

Summary LatencyHistogram::summary() const {
  Summary s;
  s.count = n_;
  if (n_ == 0) return s;
  s.min = min_;
  s.max = max_;
  s.mean = mean_;
  s.stdev = n_ > 1 ? std::sqrt(m2_ / static_cast<double>(n_ - 1)) : 0;
  s.p50 = percentile(50);
  s.p90 = percentile(90);
  s.p99 = percentile(99);
  s.p999 = percentile(99.9);
  return s;
}

void LatencyHistogram::append_words(std::vector<double>& out) const {
  // Counts as doubles: exact up to 2^53 requests.
  out.insert(out.end(), {static_cast<double>(n_), min_, max_, mean_, m2_});
  for (uint64_t c : counts_) out.push_back(static_cast<double>(c));
}

LatencyHistogram LatencyHistogram::from_words(std::span<const double> words, size_t& at) {
  LatencyHistogram h;
  h.n_ = static_cast<uint64_t>(words[at]);
  h.min_ = words[at + 1];
  h.max_ = words[at + 2];
  h.mean_ = words[at + 3];
  h.m2_ = words[at + 4];
  at += 5;
  for (uint64_t& c : h.counts_) c = static_cast<uint64_t>(words[at++]);
  return h;
}

}  // namespace railbench
