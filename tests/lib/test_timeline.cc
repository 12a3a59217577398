// lib/timeline: the bucket arithmetic, the 1 ms / 1 s / 5 min views, the file format's
// round trip and its refusals, the completion recorder over the loopback transport and
// the interface sampler over a sysfs-shaped directory.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/observe/timeline.h"
#include "lib/observe/timeline_transport.h"
#include "tests/support/loopback_world.h"

using namespace railbench;
using namespace railbench::testing;
using Catch::Matchers::Contains;

namespace {

uint64_t sum(const BucketSeries& s) {
  uint64_t total = 0;
  for (size_t i = 0; i < s.used(); ++i) total += s.data()[i];
  return total;
}

}  // namespace

TEST_CASE("timeline: a completion lands in the 1 ms bucket of its time, past the cap it is counted", "[timeline]") {
  TimelineRecorder rec(2, 100);
  const auto t0 = rec.start();
  CHECK(rec.bucket_at(t0) == 0);
  CHECK(rec.bucket_at(t0 + std::chrono::microseconds(999)) == 0);
  CHECK(rec.bucket_at(t0 + std::chrono::microseconds(1000)) == 1);
  CHECK(rec.bucket_at(t0 + std::chrono::milliseconds(57) + std::chrono::microseconds(500)) == 57);
  rec.add(1, TimelineSeries::tx, 3, 500);
  rec.add(1, TimelineSeries::tx, 3, 250);
  rec.add(1, TimelineSeries::tx, -2, 7);    // a clock read before the start: bucket 0
  rec.add(1, TimelineSeries::tx, 100, 9);   // the 101st bucket of a 100-bucket cap
  rec.add(5, TimelineSeries::tx, 1, 1000);  // no such rail: ignored
  const BucketSeries& s = rec.series(1, TimelineSeries::tx);
  CHECK(s.used() == 4);
  CHECK(s.data()[0] == 7);
  CHECK(s.data()[3] == 750);
  CHECK(s.overflow() == 9);
  CHECK(sum(rec.series(0, TimelineSeries::tx)) == 0);
  CHECK(rec.present(0, TimelineSeries::rx));
  CHECK_FALSE(rec.present(0, TimelineSeries::iface_tx));
}

TEST_CASE("timeline: peak 1 ms, 1 s and 5 min views of a bursty series", "[timeline]") {
  // 2 s of buckets: 100 bursts of 1 ms at 400 Mb/s (50,000 B each) in the first second.
  std::vector<uint64_t> b(2000, 0);
  for (size_t i = 0; i < 1000; i += 10) b[i] = 50000;
  const TimelineWindows w = timeline_windows(b.data(), b.size());
  CHECK(w.bytes == 5000000);
  CHECK(w.peak_ms_gbps == Approx(0.4));
  CHECK(w.peak_1s_gbps == Approx(0.04));          // 5 MB in the first second
  CHECK(w.peak_5min_gbps == Approx(0.04 / 300));  // the same 5 MB over 300 s
  CHECK(w.busy_fraction == Approx(100.0 / 2000));
  const auto per_s = window_averages_gbps(b.data(), b.size(), 1000);
  REQUIRE(per_s.size() == 2);
  CHECK(per_s[1] == 0);
  // Nothing recorded: zeros, not NaN.
  const TimelineWindows none = timeline_windows(b.data(), 0);
  CHECK(none.peak_ms_gbps == 0);
  CHECK(none.busy_fraction == 0);
}

TEST_CASE("timeline: the bucket cap shrinks so a large job's gather stays in budget", "[timeline]") {
  CHECK(timeline_bucket_cap(4, 2) == kTimelineMaxBuckets);
  CHECK(timeline_bucket_cap(8, 2) == 524288);  // 8 x 2 x 4 series x 8 B = 512 B a bucket
  const size_t big = timeline_bucket_cap(256, 8);
  CHECK(big < kTimelineMaxBuckets);
  CHECK(big * 256 * 8 * kTimelineSeriesCount * 8 <= kTimelineGatherBudget);
}

TEST_CASE("timeline: ranks merge onto one axis, the file round-trips and refuses damage", "[timeline]") {
  TimelineRecorder r0(2, 1000), r1(2, 1000);
  r0.add(0, TimelineSeries::tx, 0, 100);
  r0.add(1, TimelineSeries::rx, 9, 200);
  r1.add(0, TimelineSeries::tx, 4, 300);
  r1.set_mark_bytes(4096);
  r1.reserve_marks(2);
  r1.mark(r1.start() + std::chrono::milliseconds(1), r1.start() + std::chrono::milliseconds(3));
  r1.mark(r1.start() + std::chrono::milliseconds(3), r1.start() + std::chrono::milliseconds(4));
  r1.mark(r1.start(), r1.start());  // no room reserved: counted, not kept
  const TimelineData d = merge_ranks({serialize_rank(r0), serialize_rank(r1)}, 2);
  CHECK(d.ranks == 2);
  CHECK(d.rails == 2);
  REQUIRE(d.buckets >= 10);
  uint64_t total = 0;
  for (uint32_t r = 0; r < 2; ++r)
    for (uint32_t rail = 0; rail < 2; ++rail)
      for (uint64_t i = 0; i < d.buckets; ++i) total += d.series(r, rail, TimelineSeries::tx)[i];
  CHECK(total == 400);
  CHECK(d.series(0, 1, TimelineSeries::rx)[9] == 200);
  REQUIRE(d.marks[1].size() == 2);
  CHECK(d.marks[1][0].bytes == 4096);
  CHECK(d.marks[1][0].end_ns - d.marks[1][0].start_ns == 2000000);
  CHECK(d.dropped_marks[1] == 1);
  CHECK_FALSE(d.has(0, 0, TimelineSeries::iface_tx));

  const auto bytes = encode_timeline(d);
  CHECK(std::string(bytes.begin(), bytes.begin() + 7) == "RBTLINE");
  // Header 48 B, 3 x 24 B per rank, 16 flags, 8 present series of d.buckets, 2 marks.
  CHECK(bytes.size() == 48 + 2 * 24 + 16 + 8 * 8 * d.buckets + 2 * 24);
  CHECK(decode_timeline(bytes, "t") == d);

  const auto dir = std::filesystem::temp_directory_path() / fmt::format("rb-timeline-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.bin").string();
  write_timeline_file(path, d, "--timeline");
  CHECK(read_timeline_file(path) == d);

  auto cut = bytes;
  cut.resize(bytes.size() - 5);
  CHECK_THROWS_WITH(decode_timeline(cut, "cut.bin"), Contains("cut short") && Contains("cut.bin"));
  auto wrong = bytes;
  wrong[0] = 'X';
  CHECK_THROWS_WITH(decode_timeline(wrong, "w.bin"), Contains("not a railbench timeline"));
  auto newer = bytes;
  newer[8] = 9;
  CHECK_THROWS_WITH(decode_timeline(newer, "n.bin"), Contains("version 9"));
  auto huge = bytes;
  huge[32] = 0xff;  // buckets: far more than the file holds
  huge[38] = 0x01;
  CHECK_THROWS_AS(decode_timeline(huge, "h.bin"), UsageError);
  CHECK_THROWS_WITH(read_timeline_file((dir / "missing.bin").string()), Contains("cannot open timeline"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("timeline: the transport wrapper counts every completed byte by rail and direction", "[timeline]") {
  LoopbackWorld w(2, {.rails = 2});
  TimelineRecorder rec0(2, 10000), rec1(2, 10000);
  w.transports[0] = std::make_unique<TimelineTransport>(std::move(w.transports[0]), rec0);
  w.transports[1] = std::make_unique<TimelineTransport>(std::move(w.transports[1]), rec1);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(w.t(1).post_recv(0, 1, w.local(1, 0, 64), 100 + i) == Status::ok);
    REQUIRE(w.t(0).post_send(1, 1, w.local(0, 0, 40), 1 + i) == Status::ok);
  }
  REQUIRE(w.t(0).post_write_imm(1, 0, w.local(0, 0, 16), w.remote(1, 128), 7, 9) == Status::ok);
  Completion batch[4];
  size_t got0 = 0, got1 = 0;
  for (int spin = 0; spin < 1000 && (got0 < 6 || got1 < 6); ++spin) {
    got0 += w.t(0).poll(batch);
    got1 += w.t(1).poll(batch);
  }
  REQUIRE(got0 == 6);
  REQUIRE(got1 == 6);
  CHECK(sum(rec0.series(1, TimelineSeries::tx)) == 200);
  CHECK(sum(rec0.series(0, TimelineSeries::tx)) == 16);
  CHECK(sum(rec1.series(1, TimelineSeries::rx)) == 200);
  CHECK(sum(rec1.series(0, TimelineSeries::rx)) == 16);
  CHECK(sum(rec1.series(1, TimelineSeries::tx)) == 0);
  CHECK(w.t(0).num_rails() == 2);
}

TEST_CASE("timeline: the interface sampler turns a counter's steps into bytes per bucket", "[timeline]") {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("rb-sysfs-{}", ::getpid());
  std::filesystem::create_directories(dir / "rail0" / "statistics");
  for (const char* f : {"tx_bytes", "rx_bytes"}) std::ofstream(dir / "rail0" / "statistics" / f) << "0000000000\n";
  TimelineRecorder rec(2, 10000);
  // A sysfs counter is rewritten in place: same width, so a read never sees half a number.
  const int fd = ::open((dir / "rail0" / "statistics" / "tx_bytes").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  {
    InterfaceSampler sampler(rec, {"rail0", "shm"}, dir.string());
    CHECK(sampler.sampled() == std::vector<std::string>{"rail0"});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(::pwrite(fd, "0000012345", 10, 0) == 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(::pwrite(fd, "0000020000", 10, 0) == 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(fd);
  CHECK(rec.present(0, TimelineSeries::iface_tx));
  CHECK(rec.present(0, TimelineSeries::iface_rx));
  CHECK_FALSE(rec.present(1, TimelineSeries::iface_tx));
  CHECK(sum(rec.series(0, TimelineSeries::iface_tx)) == 20000);
  CHECK(sum(rec.series(0, TimelineSeries::iface_rx)) == 0);
  // Two steps ~20 ms apart, each spread over the time since the read before it: one run
  // of consecutive buckets each (one run when a stalled thread read both steps at once),
  // never scattered. How many buckets a run spans is the thread's timing, not a verdict:
  // ~1 ms apart on a quiet host, 10 ms and more under a sanitizer at idle priority.
  const auto& tx = rec.series(0, TimelineSeries::iface_tx);
  size_t nonzero = 0, runs = 0;
  for (size_t i = 0; i < tx.used(); ++i) {
    nonzero += tx.data()[i] != 0;
    runs += tx.data()[i] != 0 && (i == 0 || tx.data()[i - 1] == 0);
  }
  CHECK(nonzero >= 1);
  CHECK(runs >= 1);
  CHECK(runs <= 2);
  CHECK(rec.series(0, TimelineSeries::iface_tx).used() >= 30);
  std::filesystem::remove_all(dir);
}

TEST_CASE("timeline: a verbs rail is sampled from its port counters, in units of 4 bytes", "[timeline]") {
  const auto root = std::filesystem::temp_directory_path() / fmt::format("rb-sysfs-ib-{}", ::getpid());
  const auto counters = root / "infiniband" / "rxe0" / "ports" / "1" / "counters";
  std::filesystem::create_directories(counters);
  std::filesystem::create_directories(root / "net");
  for (const char* f : {"port_xmit_data", "port_rcv_data"}) std::ofstream(counters / f) << "0000000100\n";
  TimelineRecorder rec(2, 10000);
  const int fd = ::open((counters / "port_rcv_data").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  {
    InterfaceSampler sampler(rec, {"rxe0:1", "rxe0:2"}, (root / "net").string(), (root / "infiniband").string());
    CHECK(sampler.sampled() == std::vector<std::string>{"rxe0:1"});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(::pwrite(fd, "0000001100", 10, 0) == 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(fd);
  CHECK(sum(rec.series(0, TimelineSeries::iface_rx)) == 4000);
  CHECK(sum(rec.series(0, TimelineSeries::iface_tx)) == 0);
  CHECK_FALSE(rec.present(1, TimelineSeries::iface_rx));
  std::filesystem::remove_all(root);
}
