// A flow through the fabric measured: the listener and the two ends of a timed TCP
// flow, alone or many at once. Each flow's path comes from its own TTL-limited probes
// (lib/observe/flow_trace.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "lib/observe/flow_trace.h"

namespace railbench {

// A TCP listener on one address (the rail's), port chosen by the kernel.
class FlowListener {
 public:
  explicit FlowListener(const std::string& ip);  // throws UsageError / TransportError naming the address
  ~FlowListener();
  FlowListener(const FlowListener&) = delete;
  FlowListener& operator=(const FlowListener&) = delete;
  uint16_t port() const { return port_; }
  // The next connection, or -1 when none came before the deadline.
  int accept_until(std::chrono::steady_clock::time_point deadline);

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

struct FlowFigures {
  bool completed = false;    // every byte moved before the deadline
  uint64_t bytes = 0;        // moved (receiver: arrived)
  double seconds = 0;        // first to last byte
  double gbps = 0;           // bytes * 8 / seconds / 1e9
  uint32_t retransmits = 0;  // sender: TCP_INFO tcpi_total_retrans during the send
  double rtt_us = 0;         // sender: TCP_INFO tcpi_rtt at the end
  std::string error;         // why it did not complete
};

// The two ends of one measured flow: the sender writes `bytes`, the receiver reads them
// and answers one byte, so both know when it is over. Both return by the deadline.
FlowFigures send_flow(int fd, uint64_t bytes, std::chrono::steady_clock::time_point deadline);
FlowFigures receive_flow(int fd, uint64_t bytes, std::chrono::steady_clock::time_point deadline);

// Many flows at once, as an all-to-all runs them: this rank sends `bytes` on each of
// `out` and receives `bytes` on each of `in` (flow id -> connected socket) in one poll
// loop, each flow ending with the receiver's one-byte answer as above. Each flow's
// figures, and `done_s`: seconds from the call to its last byte (receiver) or to the
// answer (sender). Returns by the deadline; a flow not done by then has an error.
struct ConcurrentFlow {
  FlowFigures figures;
  double done_s = 0;
};
struct ConcurrentFlows {
  std::map<int, ConcurrentFlow> sent, received;
};
ConcurrentFlows move_flows_at_once(const std::map<int, int>& out, const std::map<int, int>& in, uint64_t bytes,
                                   std::chrono::steady_clock::time_point deadline);

}  // namespace railbench
