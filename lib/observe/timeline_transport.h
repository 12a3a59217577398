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
#include "lib/transport/forwarding_transport.h"
#include "lib/transport/transport.h"

namespace railbench {

class TimelineTransport final : public ForwardingTransport {
 public:
  TimelineTransport(std::unique_ptr<Transport> inner, TimelineRecorder& recorder)
      : ForwardingTransport(std::move(inner)), rec_(recorder) {}

  // One clock read per batch that returned anything, then an add per completion (a
  // batch of writes is recorded when its one completion comes back, its bytes the
  // batch's sum, like a single write's).
  size_t poll(std::span<Completion> out) noexcept override;

 private:
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
  void sample();  // one read of every counter, its bytes since the last spread over the buckets
  void loop();

  TimelineRecorder& rec_;
  std::vector<Counter> counters_;
  std::vector<std::string> sampled_names_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace railbench
