#include "lib/observe/timeline_transport.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace railbench {

namespace {

TimelineSeries series_of(OpKind op) {
  switch (op) {
    case OpKind::recv:
    case OpKind::read:
    case OpKind::remote_write_imm: return TimelineSeries::rx;
    case OpKind::send:
    case OpKind::write:
    case OpKind::collective: return TimelineSeries::tx;
  }
  return TimelineSeries::tx;
}

// A sysfs counter re-read from offset 0 (sysfs answers each read afresh); false when
// the read fails or is not a number.
bool read_counter(int fd, uint64_t& value) {
  char buf[32];
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  char* end = nullptr;
  value = std::strtoull(buf, &end, 10);
  return end != buf;
}

// The bytes a counter moved between two reads, spread evenly over the buckets the
// interval covers: a read that comes late (a busy host did not run the sampler for a
// few ms) must not pile those milliseconds' traffic into one bucket.
void spread(BucketSeries& series, int64_t from_ns, int64_t to_ns, uint64_t bytes) {
  constexpr int64_t kBucketNs = int64_t{kTimelineBucketUs} * 1000;
  if (bytes == 0) return;
  if (to_ns <= from_ns) {
    series.add(to_ns / kBucketNs, bytes);
    return;
  }
  const double per_ns = static_cast<double>(bytes) / static_cast<double>(to_ns - from_ns);
  uint64_t placed = 0;
  for (int64_t b = from_ns / kBucketNs; b <= (to_ns - 1) / kBucketNs; ++b) {
    const int64_t lo = std::max(from_ns, b * kBucketNs), hi = std::min(to_ns, (b + 1) * kBucketNs);
    // The last bucket takes what rounding left, so the series sums to the counter's delta.
    const uint64_t share = b == (to_ns - 1) / kBucketNs
                               ? bytes - placed
                               : std::min(bytes - placed, static_cast<uint64_t>(per_ns * static_cast<double>(hi - lo)));
    series.add(b, share);
    placed += share;
  }
}

}  // namespace

size_t TimelineTransport::poll(std::span<Completion> out) noexcept {
  const size_t n = inner().poll(out);
  if (n == 0) return 0;
  const int64_t bucket = rec_.bucket_at(Clock::now());
  for (size_t i = 0; i < n; ++i) {
    const Completion& c = out[i];
    if (c.status != Status::ok) continue;
    rec_.add(c.rail, series_of(c.op), bucket, c.bytes);
  }
  return n;
}

InterfaceSampler::InterfaceSampler(TimelineRecorder& recorder, const std::vector<std::string>& rail_names,
                                   const std::string& sysfs_net, const std::string& sysfs_ib)
    : rec_(recorder) {
  for (size_t rail = 0; rail < rail_names.size() && static_cast<int>(rail) < rec_.rails(); ++rail) {
    const std::string& name = rail_names[rail];
    if (name.empty() || name.find('/') != std::string::npos || name.front() == '.') continue;
    // A network interface, else a verbs port ("mlx5_0:1"; a bare device is its port 1).
    std::string tx = sysfs_net + "/" + name + "/statistics/tx_bytes";
    std::string rx = sysfs_net + "/" + name + "/statistics/rx_bytes";
    uint64_t unit = 1;
    if (::access(tx.c_str(), R_OK) != 0) {
      const auto colon = name.find(':');
      const std::string dev = name.substr(0, colon);
      const std::string port = colon == std::string::npos ? "1" : name.substr(colon + 1);
      tx = sysfs_ib + "/" + dev + "/ports/" + port + "/counters/port_xmit_data";
      rx = sysfs_ib + "/" + dev + "/ports/" + port + "/counters/port_rcv_data";
      unit = 4;
    }
    bool any = false;
    for (const auto& [path, series] :
         {std::pair{tx, TimelineSeries::iface_tx}, std::pair{rx, TimelineSeries::iface_rx}}) {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      const int r = static_cast<int>(rail);
      // The sampler's series get their memory here, before its thread writes them.
      rec_.series(r, series) = BucketSeries(rec_.series(r, TimelineSeries::tx).capacity());
      rec_.set_present(r, series);
      counters_.push_back(Counter{r, series, fd, unit});
      any = true;
    }
    if (any) sampled_names_.push_back(name);
  }
  // The first read here, not in the thread: on a busy host the thread may first run
  // well after the work began, and bytes before a counter's first read are not counted.
  sample();
  if (!counters_.empty()) thread_ = std::thread([this] { loop(); });
}

InterfaceSampler::~InterfaceSampler() {
  stop();
  for (const auto& c : counters_) ::close(c.fd);
}

void InterfaceSampler::stop() {
  stop_ = true;
  if (!thread_.joinable()) return;
  thread_.join();
  sample();  // the last read at the end: the bytes since the thread's last one count too
}

void InterfaceSampler::sample() {
  for (auto& c : counters_) {
    uint64_t v = 0;
    if (!read_counter(c.fd, v)) continue;
    const int64_t at_ns = rec_.ns_at(Clock::now());
    if (c.seen && v >= c.last) spread(rec_.series(c.rail, c.series), c.last_ns, at_ns, (v - c.last) * c.unit);
    c.last = v;
    c.last_ns = at_ns;
    c.seen = true;
  }
}

void InterfaceSampler::loop() {
  auto next = Clock::now();
  while (!stop_.load(std::memory_order_relaxed)) {
    const auto now = Clock::now();
    sample();
    next += std::chrono::microseconds(kTimelineBucketUs);
    if (next < now) next = now;  // fell behind (a busy host): no burst of catch-up reads
    std::this_thread::sleep_until(next);
  }
}

}  // namespace railbench
