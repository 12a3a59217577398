// --timeline's two recorders. TimelineTransport wraps the run's transport and adds every
// completed operation's bytes to its rank's 1 ms bucket on the completion's rail: poll()
// is the one place that sees every completed byte per (rank, rail), whatever the
// transport and whoever posted. InterfaceSampler reads the rails' network interface
// counters about every millisecond on a thread of its own.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lib/observe/timeline.h"
#include "lib/transport/transport.h"

namespace railbench {

class TimelineTransport final : public Transport {
 public:
  TimelineTransport(std::unique_ptr<Transport> inner, TimelineRecorder& recorder)
      : inner_(std::move(inner)), rec_(recorder) {}

  std::string name() const override { return inner_->name(); }
  std::string provider() const override { return inner_->provider(); }
  const Capabilities& caps() const override { return inner_->caps(); }
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  int num_rails() const override { return inner_->num_rails(); }
  RailInfo rail_info(int rail) const override { return inner_->rail_info(rail); }
  std::vector<uint8_t> local_address(int rail) const override { return inner_->local_address(rail); }
  void connect(int peer, int rail, std::span<const uint8_t> remote_address) override {
    inner_->connect(peer, rail, remote_address);
  }
  void connect_all(Bootstrap& bootstrap) override { inner_->connect_all(bootstrap); }
  std::unique_ptr<MemoryRegion> register_memory(void* data, size_t length, MemoryKind kind) override {
    return inner_->register_memory(data, length, kind);
  }
  Status post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept override {
    return inner_->post_send(peer, rail, src, wr_id);
  }
  Status post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept override {
    return inner_->post_recv(peer, rail, dst, wr_id);
  }
  Status post_write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint64_t wr_id) noexcept override {
    return inner_->post_write(peer, rail, src, dst, wr_id);
  }
  Status post_write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm,
                        uint64_t wr_id) noexcept override {
    return inner_->post_write_imm(peer, rail, src, dst, imm, wr_id);
  }
  Status post_read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src, uint64_t wr_id) noexcept override {
    return inner_->post_read(peer, rail, dst, src, wr_id);
  }
  // A batch's bytes are recorded when its one completion comes back (its bytes are the
  // batch's sum), like a single write's.
  Status post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                          uint64_t wr_id) noexcept override {
    return inner_->post_write_batch(peer, rail, ops, imm, wr_id);
  }
  Status post_collective(const CollectiveOp& op, uint64_t wr_id) noexcept override {
    return inner_->post_collective(op, wr_id);
  }
  // One clock read per batch that returned anything, then an add per completion.
  size_t poll(std::span<Completion> out) noexcept override;
  std::string last_error() const override { return inner_->last_error(); }
  std::vector<ChannelCounters> channel_counters() const override { return inner_->channel_counters(); }
  double device_time_us() const override { return inner_->device_time_us(); }

 private:
  std::unique_ptr<Transport> inner_;
  TimelineRecorder& rec_;
};

// Reads each rail's byte counters about every millisecond into the recorder's iface
// series: /sys/class/net/IF/statistics/{tx,rx}_bytes where the rail's name is a network
// interface (libfabric tcp's domains are), and a verbs rail's ("DEV:PORT") port counters
// /sys/class/infiniband/DEV/ports/PORT/counters/port_{xmit,rcv}_data (in units of 4
// bytes, as the InfiniBand spec counts them). Rails with neither are left out. Stops
// (joins) when destroyed or stop()ped; start it after the transport opened.
class InterfaceSampler {
 public:
  InterfaceSampler(TimelineRecorder& recorder, const std::vector<std::string>& rail_names,
                   const std::string& sysfs_net = "/sys/class/net",
                   const std::string& sysfs_ib = "/sys/class/infiniband");
  ~InterfaceSampler();
  InterfaceSampler(const InterfaceSampler&) = delete;
  InterfaceSampler& operator=(const InterfaceSampler&) = delete;
  void stop();
  // The rails it samples, e.g. {"rail0", "rail1"}.
  const std::vector<std::string>& sampled() const { return sampled_names_; }

 private:
  struct Counter {
    int rail;
    TimelineSeries series;
    int fd;
    uint64_t unit = 1;  // bytes per count: 4 for InfiniBand port_*_data
    uint64_t last = 0;
    int64_t last_ns = 0;  // when `last` was read, ns since the recorder's start
    bool seen = false;
  };
  void loop();

  TimelineRecorder& rec_;
  std::vector<Counter> counters_;
  std::vector<std::string> sampled_names_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace railbench
