#include "lib/observe/timeline.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/results/results.h"

namespace railbench {

const char* to_string(TimelineSeries s) {
  switch (s) {
    case TimelineSeries::tx: return "tx";
    case TimelineSeries::rx: return "rx";
    case TimelineSeries::iface_tx: return "iface_tx";
    case TimelineSeries::iface_rx: return "iface_rx";
  }
  return "?";
}

BucketSeries::BucketSeries(size_t capacity) : capacity_(capacity) {
  if (capacity_ == 0) return;
  data_.reset(static_cast<uint64_t*>(std::calloc(capacity_, sizeof(uint64_t))));
  if (!data_) throw std::bad_alloc();
}

TimelineRecorder::TimelineRecorder(int rails, size_t max_buckets)
    : rails_(rails),
      start_(Clock::now()),
      start_unix_ns_(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count()),
      present_(static_cast<size_t>(rails) * kTimelineSeriesCount, 0) {
  series_.reserve(static_cast<size_t>(rails) * kTimelineSeriesCount);
  for (int r = 0; r < rails; ++r) {
    for (int s = 0; s < kTimelineSeriesCount; ++s) {
      // Interface series get memory only if a sampler fills them (set_present first).
      series_.emplace_back(s < 2 ? max_buckets : 0);
    }
    set_present(r, TimelineSeries::tx);
    set_present(r, TimelineSeries::rx);
  }
}

void TimelineRecorder::reserve_marks(size_t more) {
  const size_t want = std::min(kTimelineMaxMarks, marks_.size() + more);
  if (want > marks_.capacity()) marks_.reserve(std::max(want, std::min(kTimelineMaxMarks, marks_.capacity() * 2)));
}

size_t timeline_bucket_cap(int ranks, int rails) {
  const size_t per_bucket = static_cast<size_t>(std::max(ranks, 1)) * static_cast<size_t>(std::max(rails, 1)) *
                            kTimelineSeriesCount * sizeof(uint64_t);
  return std::max<size_t>(1000, std::min(kTimelineMaxBuckets, kTimelineGatherBudget / per_bucket));
}

namespace {

// Little-endian on every host, so a file moves between machines.
class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { little_endian(v); }
  void u64(uint64_t v) { little_endian(v); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void pad8() {
    while (out_.size() % 8 != 0) out_.push_back(0);
  }
  void reserve(size_t n) { out_.reserve(n); }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  template <typename T>
  void little_endian(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) out_.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
  }
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  Reader(const std::vector<uint8_t>& in, std::string name) : in_(in), name_(std::move(name)) {}
  void need(size_t n, const char* what) const {
    if (in_.size() - pos_ < n)
      throw UsageError(fmt::format(
          "timeline '{}' is cut short: {} needs {} bytes at offset {}, the file has {}: rerun with --timeline "
          "to write it again",
          name_, what, n, pos_, in_.size()));
  }
  uint8_t u8(const char* what) {
    need(1, what);
    return in_[pos_++];
  }
  uint32_t u32(const char* what) { return little_endian<uint32_t>(what); }
  uint64_t u64(const char* what) { return little_endian<uint64_t>(what); }
  int64_t i64(const char* what) { return static_cast<int64_t>(u64(what)); }
  void pad8() { pos_ = std::min(in_.size(), (pos_ + 7) / 8 * 8); }
  size_t left() const { return in_.size() - pos_; }
  size_t pos() const { return pos_; }

 private:
  template <typename T>
  T little_endian(const char* what) {
    need(sizeof(T), what);
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(in_[pos_ + i]) << (8 * i);
    pos_ += sizeof(T);
    return static_cast<T>(v);
  }
  const std::vector<uint8_t>& in_;
  std::string name_;
  size_t pos_ = 0;
};

void write_mark(Writer& w, const IterationMark& m) {
  w.u64(m.bytes);
  w.i64(m.start_ns);
  w.i64(m.end_ns);
}

IterationMark read_mark(Reader& r) {
  IterationMark m;
  m.bytes = r.u64("an iteration mark");
  m.start_ns = r.i64("an iteration mark");
  m.end_ns = r.i64("an iteration mark");
  return m;
}

}  // namespace

// A rank's blob: start_unix_ns, overflow, dropped marks, used buckets, present flags,
// then each present series' used buckets, then the marks.
std::vector<uint8_t> serialize_rank(const TimelineRecorder& rec) {
  Writer w;
  uint64_t overflow = 0;
  size_t used = 0;
  for (int rail = 0; rail < rec.rails(); ++rail) {
    for (int s = 0; s < kTimelineSeriesCount; ++s) {
      const auto series = static_cast<TimelineSeries>(s);
      if (!rec.present(rail, series)) continue;
      overflow += rec.series(rail, series).overflow();
      used = std::max(used, rec.series(rail, series).used());
    }
  }
  w.i64(rec.start_unix_ns());
  w.u64(overflow);
  w.u64(rec.dropped_marks());
  w.u64(used);
  for (int rail = 0; rail < rec.rails(); ++rail)
    for (int s = 0; s < kTimelineSeriesCount; ++s) w.u8(rec.present(rail, static_cast<TimelineSeries>(s)) ? 1 : 0);
  for (int rail = 0; rail < rec.rails(); ++rail) {
    for (int s = 0; s < kTimelineSeriesCount; ++s) {
      const auto series = static_cast<TimelineSeries>(s);
      if (!rec.present(rail, series)) continue;
      const BucketSeries& b = rec.series(rail, series);
      for (size_t i = 0; i < used; ++i) w.u64(i < b.used() ? b.data()[i] : 0);
    }
  }
  w.u64(rec.marks().size());
  for (const auto& m : rec.marks()) write_mark(w, m);
  return w.take();
}

TimelineData merge_ranks(const std::vector<std::vector<uint8_t>>& per_rank, int rails) {
  struct Parsed {
    int64_t start = 0;
    uint64_t used = 0;
    std::vector<uint8_t> present;
    size_t values_at = 0;
  };
  TimelineData d;
  d.ranks = static_cast<uint32_t>(per_rank.size());
  d.rails = static_cast<uint32_t>(rails);
  const size_t flags = static_cast<size_t>(rails) * kTimelineSeriesCount;
  std::vector<Parsed> parsed(per_rank.size());
  for (size_t r = 0; r < per_rank.size(); ++r) {
    Reader in(per_rank[r], fmt::format("rank {}", r));
    parsed[r].start = in.i64("the start");
    d.overflow_bytes.push_back(in.u64("overflow"));
    d.dropped_marks.push_back(in.u64("dropped marks"));
    parsed[r].used = in.u64("buckets");
    for (size_t i = 0; i < flags; ++i) parsed[r].present.push_back(in.u8("present flags"));
    parsed[r].values_at = in.pos();
  }
  d.start_unix_ns = parsed.empty() ? 0 : parsed[0].start;
  for (const auto& p : parsed) d.start_unix_ns = std::min(d.start_unix_ns, p.start);
  const int64_t bucket_ns = static_cast<int64_t>(d.bucket_us) * 1000;
  std::vector<uint64_t> shift(parsed.size());
  for (size_t r = 0; r < parsed.size(); ++r) {
    shift[r] = static_cast<uint64_t>((parsed[r].start - d.start_unix_ns + bucket_ns / 2) / bucket_ns);
    d.buckets = std::max<uint64_t>(d.buckets, parsed[r].used + shift[r]);
  }
  d.present.assign(per_rank.size() * flags, 0);
  d.values.assign(d.present.size() * d.buckets, 0);
  d.marks.resize(per_rank.size());
  for (size_t r = 0; r < per_rank.size(); ++r) {
    Reader in(per_rank[r], fmt::format("rank {}", r));
    while (in.pos() < parsed[r].values_at) in.u8("header");
    for (uint32_t rail = 0; rail < d.rails; ++rail) {
      for (int s = 0; s < kTimelineSeriesCount; ++s) {
        const auto series = static_cast<TimelineSeries>(s);
        const size_t idx = d.index(static_cast<uint32_t>(r), rail, series);
        if (parsed[r].present[rail * kTimelineSeriesCount + static_cast<size_t>(s)] == 0) continue;
        d.present[idx] = 1;
        uint64_t* out = d.values.data() + idx * d.buckets + shift[r];
        for (uint64_t i = 0; i < parsed[r].used; ++i) out[i] = in.u64("buckets");
      }
    }
    const uint64_t n = in.u64("marks");
    const int64_t offset = parsed[r].start - d.start_unix_ns;
    for (uint64_t i = 0; i < n; ++i) {
      IterationMark m = read_mark(in);
      m.start_ns += offset;
      m.end_ns += offset;
      d.marks[r].push_back(m);
    }
  }
  return d;
}

std::vector<uint8_t> encode_timeline(const TimelineData& d) {
  Writer w;
  size_t present_series = 0;
  for (uint8_t p : d.present) present_series += p;
  w.reserve(64 + d.present.size() + present_series * d.buckets * 8);
  w.bytes(kTimelineMagic, sizeof(kTimelineMagic));
  w.u32(kTimelineVersion);
  w.u32(d.ranks);
  w.u32(d.rails);
  w.u32(kTimelineSeriesCount);
  w.u32(d.bucket_us);
  w.u32(0);
  w.u64(d.buckets);
  w.i64(d.start_unix_ns);
  for (uint32_t r = 0; r < d.ranks; ++r) {
    w.u64(d.overflow_bytes[r]);
    w.u64(d.dropped_marks[r]);
    w.u64(d.marks[r].size());
  }
  for (uint8_t p : d.present) w.u8(p);
  w.pad8();
  for (size_t i = 0; i < d.present.size(); ++i) {
    if (d.present[i] == 0) continue;
    const uint64_t* v = d.values.data() + i * d.buckets;
    for (uint64_t b = 0; b < d.buckets; ++b) w.u64(v[b]);
  }
  for (const auto& marks : d.marks)
    for (const auto& m : marks) write_mark(w, m);
  return w.take();
}

TimelineData decode_timeline(const std::vector<uint8_t>& bytes, const std::string& name) {
  if (bytes.size() < sizeof(kTimelineMagic) || std::memcmp(bytes.data(), kTimelineMagic, sizeof(kTimelineMagic)) != 0)
    throw UsageError(
        fmt::format("'{}' is not a railbench timeline (no RBTLINE magic): give the file that --timeline wrote", name));
  Reader in(bytes, name);
  for (size_t i = 0; i < sizeof(kTimelineMagic); ++i) in.u8("the magic");
  const uint32_t version = in.u32("the version");
  if (version != kTimelineVersion)
    throw UsageError(
        fmt::format("timeline '{}' is format version {}; this railbench reads version {}: read it with "
                    "the railbench that wrote it",
                    name, version, kTimelineVersion));
  TimelineData d;
  d.ranks = in.u32("ranks");
  d.rails = in.u32("rails");
  const uint32_t series = in.u32("series");
  d.bucket_us = in.u32("bucket width");
  in.u32("reserved");
  d.buckets = in.u64("buckets");
  d.start_unix_ns = in.i64("the start");
  if (series != kTimelineSeriesCount || d.bucket_us == 0 || d.ranks > (1u << 20) || d.rails > 4096)
    throw UsageError(
        fmt::format("timeline '{}' has an impossible header ({} ranks, {} rails, {} series, {} us "
                    "buckets): the file is damaged; rerun with --timeline",
                    name, d.ranks, d.rails, series, d.bucket_us));
  std::vector<uint64_t> nmarks;
  for (uint32_t r = 0; r < d.ranks; ++r) {
    d.overflow_bytes.push_back(in.u64("overflow"));
    d.dropped_marks.push_back(in.u64("dropped marks"));
    nmarks.push_back(in.u64("mark count"));
  }
  const size_t flags = static_cast<size_t>(d.ranks) * d.rails * kTimelineSeriesCount;
  size_t present_series = 0;
  for (size_t i = 0; i < flags; ++i) {
    d.present.push_back(in.u8("present flags") != 0 ? 1 : 0);
    present_series += d.present.back();
  }
  in.pad8();
  // Sizes from the header are checked against the file before anything is allocated.
  if (present_series != 0 && d.buckets > in.left() / 8 / present_series) in.need(in.left() + 1, "the bucket arrays");
  d.values.assign(flags * d.buckets, 0);
  for (size_t i = 0; i < flags; ++i) {
    if (d.present[i] == 0) continue;
    uint64_t* v = d.values.data() + i * d.buckets;
    for (uint64_t b = 0; b < d.buckets; ++b) v[b] = in.u64("buckets");
  }
  d.marks.resize(d.ranks);
  for (uint32_t r = 0; r < d.ranks; ++r) {
    if (nmarks[r] > in.left() / 24) in.need(in.left() + 1, "the iteration marks");
    for (uint64_t i = 0; i < nmarks[r]; ++i) d.marks[r].push_back(read_mark(in));
  }
  return d;
}

void write_timeline_file(const std::string& path, const TimelineData& data, const std::string& option) {
  const auto bytes = encode_timeline(data);
  write_text_file(path, std::string(bytes.begin(), bytes.end()), option);
}

TimelineData read_timeline_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UsageError(
        fmt::format("cannot open timeline '{}': give the file that --timeline wrote (its path is in the "
                    "results' \"timeline\" field)",
                    path));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode_timeline(bytes, path);
}

std::vector<double> window_averages_gbps(const uint64_t* buckets, size_t count, size_t window, uint32_t bucket_us) {
  std::vector<double> out;
  if (window == 0) return out;
  const double window_s = static_cast<double>(window) * bucket_us * 1e-6;
  for (size_t start = 0; start < count; start += window) {
    uint64_t sum = 0;
    for (size_t i = start; i < std::min(count, start + window); ++i) sum += buckets[i];
    out.push_back(static_cast<double>(sum) * 8 / window_s / 1e9);
  }
  return out;
}

TimelineWindows timeline_windows(const uint64_t* buckets, size_t count, uint32_t bucket_us) {
  TimelineWindows w;
  size_t busy = 0;
  uint64_t peak = 0;
  for (size_t i = 0; i < count; ++i) {
    w.bytes += buckets[i];
    peak = std::max(peak, buckets[i]);
    if (buckets[i] != 0) ++busy;
  }
  w.peak_ms_gbps = static_cast<double>(peak) * 8 / (bucket_us * 1e-6) / 1e9;
  const size_t per_s = std::max<size_t>(1, 1000000 / bucket_us);
  for (double v : window_averages_gbps(buckets, count, per_s, bucket_us)) w.peak_1s_gbps = std::max(w.peak_1s_gbps, v);
  for (double v : window_averages_gbps(buckets, count, per_s * 300, bucket_us))
    w.peak_5min_gbps = std::max(w.peak_5min_gbps, v);
  w.busy_fraction = count ? static_cast<double>(busy) / static_cast<double>(count) : 0;
  return w;
}

}  // namespace railbench
