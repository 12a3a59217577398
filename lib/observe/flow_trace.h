// One flow through the fabric, chosen by its 5-tuple: its switch path learned by
// TTL-limited probes that carry the flow's own header fields (the Paris-traceroute
// idea: same addresses, ports and protocol, so every ECMP hash on the way makes the
// same choice as for the flow itself), then the flow measured.
//
// TCP (ofi:tcp, netdev rails): the probes are the flow's own SYNs. A socket bound to
// (src_ip, src_port) with IP_TTL = h and IP_RECVERR connects to (dst_ip, dst_port); the
// switch where the TTL runs out answers ICMP time exceeded, which the kernel queues on
// that socket's error queue with the switch's address (SO_EE_OFFENDER). No raw socket,
// no CAP_NET_RAW. The SYN that reaches the destination opens the connection, which is
// then the measured flow: its path is the traced one, not a lookalike's.
// UDP (RoCE v2: destination port 4791, the QP's source port): the same with UDP
// datagrams; the destination's answer is ICMP port unreachable or nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace railbench {

enum class FlowProto { tcp, udp };

struct FlowTuple {
  std::string src_ip, dst_ip;  // dotted IPv4
  uint16_t src_port = 0, dst_port = 0;
  FlowProto proto = FlowProto::tcp;
};

// One TTL of a trace: who answered (the ICMP's source, "" when nobody did in time).
struct TraceHop {
  int ttl = 0;
  std::string address;
  double rtt_us = 0;
};

struct FlowTrace {
  std::vector<TraceHop> hops;  // ttl 1..n, in order; the last may be the destination
  bool reached = false;        // the destination answered (TCP: connected)
  std::string error;           // why the trace stopped, "" when it reached
};

// A cap on probes per second, shared by every trace of one process: switches answer
// ICMP from their CPU and rate-limit it (control-plane policing), so a probe too many
// looks like a lost hop. Thread-safe; blocks until the next probe may go.
class ProbePacer {
 public:
  explicit ProbePacer(double probes_per_s);
  void wait();

 private:
  double interval_s_;
  std::chrono::steady_clock::time_point next_;
};

struct TraceOptions {
  int first_ttl = 1;  // 2: only what lies past the first hop (a leaf-spine fabric's spine)
  int max_ttl = 8;
  std::chrono::milliseconds hop_timeout{300};  // wait for one hop's answer
  int tries = 2;                               // probes per TTL before the hop counts as silent
  int max_silent = 0;                          // stop after this many silent TTLs in a row (0: go to max_ttl)
};

// TCP: traces (src_ip:src_port -> dst_ip:dst_port) and, when a SYN reaches the
// destination, returns the connected socket in `fd` (IP_TTL back to the default; the
// caller owns it), else -1. A socket that cannot be bound (port in use, address not
// local) is a setup error: trace.error says which and `fd` is -1.
FlowTrace trace_and_connect(const FlowTuple& tuple, const TraceOptions& options, ProbePacer& pacer, int& fd);

// TCP, probes only: which switch answers at TTL `ttl` for this 5-tuple ("" when none
// did), no connection made (the SYN dies at that switch). A search for a source port
// whose path crosses a given spine costs one probe a port.
std::string switch_at_ttl(const FlowTuple& tuple, int ttl, const TraceOptions& options, ProbePacer& pacer);

// UDP (RoCE v2 paths): traces only; `reached` when the destination answered.
FlowTrace trace_udp(const FlowTuple& tuple, const TraceOptions& options, ProbePacer& pacer);

}  // namespace railbench
