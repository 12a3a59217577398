// A millisecond traffic timeline (--timeline): bytes moved per 1 ms bucket per rank and
// rail, what a 5-minute SNMP utilisation graph averages away. Recorded from completions
// on the data path (an index and an add into memory reserved up front), optionally from a
// sampler thread reading the rail's network interface counters, plus every timed
// collective iteration's start and end. Written as one binary file (format in
// bench/commands/timeline/README.md, "Timeline file"), whose reader is here too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "lib/core/clock.h"

namespace railbench {

inline constexpr char kTimelineMagic[8] = {'R', 'B', 'T', 'L', 'I', 'N', 'E', '\0'};
inline constexpr uint32_t kTimelineVersion = 1;
inline constexpr uint32_t kTimelineBucketUs = 1000;
// The longest timeline a rank keeps: 10 minutes of 1 ms buckets. Bytes after it are
// counted (overflow), not placed.
inline constexpr size_t kTimelineMaxBuckets = 600000;
// What every rank may receive when the timelines are gathered to write the file: the
// bucket cap shrinks for large jobs so that ranks x rails x series x buckets x 8 B fits.
inline constexpr size_t kTimelineGatherBudget = 256u << 20;
// Timed collective iterations kept per rank.
inline constexpr size_t kTimelineMaxMarks = 1u << 20;

// What a series counts. tx/rx: payload of this rank's completed operations (sends,
// writes and native collectives are tx; receives, reads and arriving
// write-with-immediate are rx). iface_tx/iface_rx: the rail's network interface
// counters (/sys/class/net/IF/statistics), all traffic on it, headers included.
enum class TimelineSeries : uint8_t { tx = 0, rx = 1, iface_tx = 2, iface_rx = 3 };
inline constexpr int kTimelineSeriesCount = 4;
const char* to_string(TimelineSeries s);

// One timed collective iteration: its message size and when it started and ended, in
// ns since the timeline's start.
struct IterationMark {
  uint64_t bytes = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool operator==(const IterationMark&) const = default;
};

// One (rail, series) of one rank: buckets reserved up front (calloc: the kernel hands
// out zero pages as they are first touched, so memory grows with the run's length, not
// the cap) and written by one thread only.
class BucketSeries {
 public:
  explicit BucketSeries(size_t capacity);
  // Adds `bytes` at `bucket`; past the capacity they count as overflow. Never allocates.
  void add(int64_t bucket, uint64_t bytes) noexcept {
    if (bucket < 0) bucket = 0;
    const auto b = static_cast<size_t>(bucket);
    if (b >= capacity_) {
      overflow_ += bytes;
      return;
    }
    data_.get()[b] += bytes;
    if (b >= used_) used_ = b + 1;
  }
  const uint64_t* data() const { return data_.get(); }
  size_t used() const { return used_; }
  size_t capacity() const { return capacity_; }
  uint64_t overflow() const { return overflow_; }

 private:
  struct Free {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint64_t, Free> data_;
  size_t capacity_ = 0;
  size_t used_ = 0;
  uint64_t overflow_ = 0;
};

// One rank's timeline while it runs. The completion series are written by the thread
// that polls the transport, the interface series by the sampler thread: never both.
class TimelineRecorder {
 public:
  TimelineRecorder(int rails, size_t max_buckets);

  int rails() const { return rails_; }
  Clock::time_point start() const { return start_; }
  int64_t start_unix_ns() const { return start_unix_ns_; }
  int64_t bucket_at(Clock::time_point t) const noexcept {
    return std::chrono::duration_cast<std::chrono::microseconds>(t - start_).count() / kTimelineBucketUs;
  }
  int64_t ns_at(Clock::time_point t) const noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - start_).count();
  }
  // The data path: never allocates, never throws. Out-of-range rails are ignored.
  void add(int rail, TimelineSeries s, int64_t bucket, uint64_t bytes) noexcept {
    if (rail < 0 || rail >= rails_) return;
    series(rail, s).add(bucket, bytes);
  }
  BucketSeries& series(int rail, TimelineSeries s) {
    return series_[static_cast<size_t>(rail) * kTimelineSeriesCount + static_cast<size_t>(s)];
  }
  const BucketSeries& series(int rail, TimelineSeries s) const {
    return series_[static_cast<size_t>(rail) * kTimelineSeriesCount + static_cast<size_t>(s)];
  }
  // The sampler says which interface series it fills; the others stay out of the file.
  void set_present(int rail, TimelineSeries s) {
    present_[static_cast<size_t>(rail) * kTimelineSeriesCount + static_cast<size_t>(s)] = 1;
  }
  bool present(int rail, TimelineSeries s) const {
    return present_[static_cast<size_t>(rail) * kTimelineSeriesCount + static_cast<size_t>(s)] != 0;
  }

  // Control path: room for `more` marks (up to kTimelineMaxMarks), so that mark()
  // inside a timed loop never allocates. The size the next marks carry.
  void reserve_marks(size_t more);
  void set_mark_bytes(uint64_t bytes) { mark_bytes_ = bytes; }
  // Data path: records one iteration if there is reserved room, else counts it dropped.
  void mark(Clock::time_point start, Clock::time_point end) noexcept {
    if (marks_.size() < marks_.capacity()) {
      marks_.push_back(IterationMark{mark_bytes_, ns_at(start), ns_at(end)});
    } else {
      ++dropped_marks_;
    }
  }
  const std::vector<IterationMark>& marks() const { return marks_; }
  uint64_t dropped_marks() const { return dropped_marks_; }

 private:
  int rails_;
  Clock::time_point start_;
  int64_t start_unix_ns_;
  std::vector<BucketSeries> series_;
  std::vector<uint8_t> present_;
  std::vector<IterationMark> marks_;
  uint64_t mark_bytes_ = 0;
  uint64_t dropped_marks_ = 0;
};

// The bucket cap for a job: kTimelineMaxBuckets, less where the gathered timelines of
// `ranks` x `rails` would exceed kTimelineGatherBudget.
size_t timeline_bucket_cap(int ranks, int rails);

// A whole job's timeline: what the file holds. All series share one time axis, bucket 0
// starting at start_unix_ns (the earliest rank's start; each rank's buckets are shifted
// by its own start on the wall clock, so ranks on different hosts line up to within
// their clocks' agreement).
struct TimelineData {
  uint32_t ranks = 0;
  uint32_t rails = 0;
  uint32_t bucket_us = kTimelineBucketUs;
  uint64_t buckets = 0;  // per series
  int64_t start_unix_ns = 0;
  std::vector<uint64_t> overflow_bytes;  // per rank: bytes past the cap, all series
  std::vector<uint64_t> dropped_marks;   // per rank
  // [rank][rail][series]: recorded or not. Series that were not take no room in the file.
  std::vector<uint8_t> present;
  // [rank][rail][series][bucket], zeros where not present.
  std::vector<uint64_t> values;
  std::vector<std::vector<IterationMark>> marks;  // per rank, ns since start_unix_ns

  size_t index(uint32_t rank, uint32_t rail, TimelineSeries s) const {
    return (static_cast<size_t>(rank) * rails + rail) * kTimelineSeriesCount + static_cast<size_t>(s);
  }
  bool has(uint32_t rank, uint32_t rail, TimelineSeries s) const { return present[index(rank, rail, s)] != 0; }
  const uint64_t* series(uint32_t rank, uint32_t rail, TimelineSeries s) const {
    return values.data() + index(rank, rail, s) * buckets;
  }
  bool operator==(const TimelineData&) const = default;
};

// One rank's recorder as bytes for the gather, and the job's timeline from every rank's.
std::vector<uint8_t> serialize_rank(const TimelineRecorder& rec);
TimelineData merge_ranks(const std::vector<std::vector<uint8_t>>& per_rank, int rails);

// The file: write (atomically, beside it then renamed; IoError naming `option`) and read
// (UsageError naming the file and what is wrong with it).
std::vector<uint8_t> encode_timeline(const TimelineData& data);
TimelineData decode_timeline(const std::vector<uint8_t>& bytes, const std::string& name);
void write_timeline_file(const std::string& path, const TimelineData& data, const std::string& option);
TimelineData read_timeline_file(const std::string& path);

// What an operator's graphs would show of one series: the busiest 1 ms bucket, the
// busiest 1 s window and the busiest 5 min window (windows aligned to the start, as a
// poller's intervals are; a run shorter than 5 minutes is averaged over the full 5
// minutes, the rest idle, as the poller would see it), in Gb/s (1e9 bits/s).
struct TimelineWindows {
  uint64_t bytes = 0;
  double peak_ms_gbps = 0;
  double peak_1s_gbps = 0;
  double peak_5min_gbps = 0;
  double busy_fraction = 0;  // buckets that moved anything, over the run's buckets
};
TimelineWindows timeline_windows(const uint64_t* buckets, size_t count, uint32_t bucket_us = kTimelineBucketUs);
// Averages of `window` buckets each (the last one may be partial: divided by the full
// window all the same), as Gb/s.
std::vector<double> window_averages_gbps(const uint64_t* buckets, size_t count, size_t window,
                                         uint32_t bucket_us = kTimelineBucketUs);

}  // namespace railbench
