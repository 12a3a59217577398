#include "lib/observe/flow_trace.h"

#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "lib/core/clock.h"
#include "lib/core/errno_text.h"
#include "lib/observe/flow_socket.h"

namespace railbench {
namespace {

using flow_socket::bind_error;
using flow_socket::ProbeSocket;
using flow_socket::set_int;
using flow_socket::to_sockaddr;
using flow_socket::wait_for;

// ICMP types and codes the kernel reports in sock_extended_err (RFC 792).
constexpr uint8_t kIcmpUnreachable = 3, kIcmpTimeExceeded = 11;
constexpr uint8_t kIcmpPortUnreachable = 3;

std::string ip_text(const in_addr& a) {
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

double micros_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

enum class ProbeAnswer { silent, time_exceeded, reached, refused, unreachable, failed };

struct ProbeOutcome {
  ProbeAnswer answer = ProbeAnswer::silent;
  std::string from;  // who answered
  double rtt_us = 0;
  std::string error;   // ProbeAnswer::failed: why the probe could not go (setup or local error)
  ProbeSocket socket;  // TCP, ProbeAnswer::reached: the connection
};

struct IcmpReport {
  bool found = false;
  uint8_t type = 0, code = 0;
  std::string from;
};

// The ICMP answer the kernel queued on this socket (IP_RECVERR), with the address of the
// router or host that sent it (SO_EE_OFFENDER); local errors are skipped. `payload`: the
// probe's own bytes, to skip a late answer to an earlier probe of the same ports; an ICMP
// that quotes too little of the probe to tell (8 bytes past the IP header, RFC 792's
// minimum) is taken as this probe's.
IcmpReport read_icmp(int fd, const std::string& payload = "") {
  IcmpReport r;
  for (;;) {
    char data[64], control[512];
    iovec iov{data, sizeof data};
    sockaddr_in original{};
    msghdr msg{};
    msg.msg_name = &original;
    msg.msg_namelen = sizeof original;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t quoted = ::recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
    if (quoted < 0) return r;
    if (static_cast<size_t>(quoted) >= payload.size() && payload.compare(0, payload.size(), data, payload.size()) != 0)
      continue;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_IP || c->cmsg_type != IP_RECVERR) continue;
      // Copied out: the control buffer carries no alignment promise for these structs.
      sock_extended_err ee;
      std::memcpy(&ee, CMSG_DATA(c), sizeof ee);
      if (ee.ee_origin != SO_EE_ORIGIN_ICMP) continue;
      sockaddr_in offender;
      std::memcpy(&offender, CMSG_DATA(c) + sizeof ee, sizeof offender);
      r = {true, ee.ee_type, ee.ee_code, ip_text(offender.sin_addr)};
      return r;
    }
  }
}

const char* unreachable_text(uint8_t code) {
  switch (code) {
    case 0: return "network unreachable";
    case 1: return "host unreachable";
    case 2: return "protocol unreachable";
    case 3: return "port unreachable";
    case 4: return "fragmentation needed";
    case 9:
    case 10:
    case 13: return "administratively prohibited";
    default: return "unreachable";
  }
}

// What an ICMP answer means for the trace. Port unreachable from the destination is UDP's
// "reached" (nothing listens there, but the datagram arrived) and TCP's "refused".
void classify_icmp(const IcmpReport& icmp, const FlowTuple& t, FlowProto proto, ProbeOutcome& out) {
  out.from = icmp.from;
  if (icmp.type == kIcmpTimeExceeded) {
    out.answer = ProbeAnswer::time_exceeded;
  } else if (icmp.type == kIcmpUnreachable && icmp.code == kIcmpPortUnreachable && icmp.from == t.dst_ip) {
    out.answer = proto == FlowProto::udp ? ProbeAnswer::reached : ProbeAnswer::refused;
  } else {
    out.answer = ProbeAnswer::unreachable;
    out.error = icmp.type == kIcmpUnreachable
                    ? fmt::format("{} answered {} for {}", icmp.from, unreachable_text(icmp.code), t.dst_ip)
                    : fmt::format("{} answered ICMP type {} code {} for {}", icmp.from, icmp.type, icmp.code, t.dst_ip);
  }
}

// A fresh socket bound to the flow's own source, TTL-limited, with ICMP errors queued.
ProbeSocket open_probe(const FlowTuple& t, const sockaddr_in& src, int type, int ttl, std::string& error) {
  ProbeSocket s(::socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (s.get() < 0) {
    error = fmt::format("cannot open a probe socket: {}", errno_text(errno));
    return s;
  }
  // The previous probe of this flow let go of the port a moment ago; SO_REUSEADDR also
  // lets a flow share its source port with an open flow to another destination.
  set_int(s.get(), SOL_SOCKET, SO_REUSEADDR, 1);
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&src), sizeof src) != 0) {
    error = bind_error(t.src_ip, t.src_port, errno);
    return ProbeSocket();
  }
  set_int(s.get(), IPPROTO_IP, IP_TTL, ttl);
  set_int(s.get(), IPPROTO_IP, IP_RECVERR, 1);
  return s;
}

std::string probe_connect_error(const FlowTuple& t, int err) {
  if (err == EADDRNOTAVAIL)
    return fmt::format(
        "cannot open {}:{} -> {}:{}: a connection with these ports is already open; choose another "
        "source port",
        t.src_ip, t.src_port, t.dst_ip, t.dst_port);
  return fmt::format("cannot reach {} from {}: {}", t.dst_ip, t.src_ip, errno_text(err));
}

using ProbeFn = ProbeOutcome (*)(const FlowTuple&, const sockaddr_in&, const sockaddr_in&, int,
                                 std::chrono::milliseconds);

// One SYN of the flow with this TTL: a router's time exceeded, the destination's SYN-ACK
// (the connection, kept) or RST, or silence until the timeout.
ProbeOutcome probe_tcp(const FlowTuple& t, const sockaddr_in& src, const sockaddr_in& dst, int ttl,
                       std::chrono::milliseconds timeout) {
  ProbeOutcome out;
  ProbeSocket s = open_probe(t, src, SOCK_STREAM, ttl, out.error);
  if (s.get() < 0) {
    out.answer = ProbeAnswer::failed;
    return out;
  }
  const auto sent = Clock::now();
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&dst), sizeof dst) != 0 && errno != EINPROGRESS) {
    out.answer = ProbeAnswer::failed;
    out.error = probe_connect_error(t, errno);
    return out;
  }
  const short ev = wait_for(s.get(), POLLOUT, sent + timeout);
  if (ev == 0) return out;
  out.rtt_us = micros_since(sent);
  const IcmpReport icmp = read_icmp(s.get());
  if (icmp.found) {
    classify_icmp(icmp, t, FlowProto::tcp, out);
    return out;
  }
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  out.from = t.dst_ip;
  if (err == 0 && (ev & POLLOUT)) {
    out.answer = ProbeAnswer::reached;
    out.socket = std::move(s);
  } else if (err == ECONNREFUSED) {
    out.answer = ProbeAnswer::refused;
  } else {
    out.answer = ProbeAnswer::failed;
    out.error = probe_connect_error(t, err ? err : EIO);
  }
  return out;
}

// One datagram of the flow with this TTL. The payload means nothing: a RoCE NIC drops
// it as a malformed packet, a host answers port unreachable.
ProbeOutcome probe_udp(const FlowTuple& t, const sockaddr_in& src, const sockaddr_in& dst, int ttl,
                       std::chrono::milliseconds timeout) {
  ProbeOutcome out;
  ProbeSocket s = open_probe(t, src, SOCK_DGRAM, ttl, out.error);
  if (s.get() < 0) {
    out.answer = ProbeAnswer::failed;
    return out;
  }
  // Connected, so that only this flow's answers reach the socket.
  static std::atomic<unsigned> probes{0};
  const std::string payload = fmt::format("railbench path probe {}", probes++);
  const auto sent = Clock::now();
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&dst), sizeof dst) != 0 ||
      ::send(s.get(), payload.data(), payload.size(), MSG_DONTWAIT) < 0) {
    out.answer = ProbeAnswer::failed;
    out.error = probe_connect_error(t, errno);
    return out;
  }
  for (;;) {
    const short ev = wait_for(s.get(), POLLIN, sent + timeout);
    if (ev == 0) return out;
    out.rtt_us = micros_since(sent);
    const IcmpReport icmp = read_icmp(s.get(), payload);
    if (icmp.found) {
      classify_icmp(icmp, t, FlowProto::udp, out);
      return out;
    }
    if (ev & POLLIN) {
      out.answer = ProbeAnswer::reached;
      out.from = t.dst_ip;
      return out;
    }
    // Only a late answer to an earlier probe: its pending error cleared, wait on.
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  }
}

std::string flow_text(const FlowTuple& t) {
  return fmt::format("{}:{} -> {}:{}", t.src_ip, t.src_port, t.dst_ip, t.dst_port);
}

// Why a trace that ran out of TTLs did not reach: nothing answered at all (ICMP filtered,
// or dead from the first hop), or the path is cut after the last hop that answered.
std::string not_reached_error(const FlowTrace& trace, const FlowTuple& t, const TraceOptions& o) {
  auto last =
      std::find_if(trace.hops.rbegin(), trace.hops.rend(), [](const TraceHop& h) { return !h.address.empty(); });
  if (last == trace.hops.rend())
    return fmt::format(
        "{}: nothing answered at ttl 1-{} (ICMP time exceeded filtered, or the path is dead from "
        "its first hop)",
        flow_text(t), trace.hops.empty() ? o.max_ttl : trace.hops.back().ttl);
  return fmt::format("{}: the path is cut after hop {} ({}): nothing answered at ttl {}-{}", flow_text(t), last->ttl,
                     last->address, last->ttl + 1, trace.hops.back().ttl);
}

std::string trace_options_error(const TraceOptions& o) {
  if (o.max_ttl < 1 || o.max_ttl > 255) return fmt::format("max_ttl {} is not in 1..255", o.max_ttl);
  if (o.first_ttl < 1 || o.first_ttl > o.max_ttl)
    return fmt::format("first_ttl {} is not in 1..max_ttl ({})", o.first_ttl, o.max_ttl);
  if (o.tries < 1) return fmt::format("tries {} must be at least 1", o.tries);
  if (o.hop_timeout.count() <= 0) return "the hop timeout must be positive";
  return "";
}

// TTL 1..max_ttl, `tries` probes each until one is answered. The trailing silent hops of a
// cut trace are dropped: they say only that nothing answered, which `error` says.
FlowTrace run_trace(const FlowTuple& t, const TraceOptions& o, ProbePacer& pacer, ProbeFn probe,
                    ProbeSocket* connection) {
  FlowTrace trace;
  sockaddr_in src, dst;
  if (!to_sockaddr(t.src_ip, t.src_port, src) || !to_sockaddr(t.dst_ip, t.dst_port, dst)) {
    trace.error = fmt::format("{}: give dotted IPv4 addresses", flow_text(t));
    return trace;
  }
  if (trace.error = trace_options_error(o); !trace.error.empty()) return trace;
  int silent = 0;
  for (int ttl = o.first_ttl; ttl <= o.max_ttl; ++ttl) {
    ProbeOutcome out;
    for (int i = 0; i < o.tries && out.answer == ProbeAnswer::silent; ++i) {
      pacer.wait();
      out = probe(t, src, dst, ttl, o.hop_timeout);
    }
    if (out.answer == ProbeAnswer::failed) {
      trace.error = out.error;
      return trace;
    }
    trace.hops.push_back({ttl, out.from, out.answer == ProbeAnswer::silent ? 0 : out.rtt_us});
    silent = out.answer == ProbeAnswer::silent ? silent + 1 : 0;
    // A cut path answers nothing past the cut: the remaining TTLs would only wait.
    if (o.max_silent > 0 && silent >= o.max_silent) break;
    if (out.answer == ProbeAnswer::reached) {
      trace.reached = true;
      if (connection) *connection = std::move(out.socket);
      return trace;
    }
    if (out.answer == ProbeAnswer::refused) {
      trace.error =
          fmt::format("{}: {} refused the connection (nothing listens on port {})", flow_text(t), t.dst_ip, t.dst_port);
      return trace;
    }
    if (out.answer == ProbeAnswer::unreachable) {
      trace.error = fmt::format("{}: {}", flow_text(t), out.error);
      return trace;
    }
  }
  trace.error = not_reached_error(trace, t, o);
  while (!trace.hops.empty() && trace.hops.back().address.empty()) trace.hops.pop_back();
  return trace;
}

// Every ProbePacer shares this lock: the header keeps the pacer a plain value, and the
// lock is held only to take the next slot, never while sleeping.
std::mutex& pacer_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

ProbePacer::ProbePacer(double probes_per_s)
    : interval_s_(probes_per_s > 0 ? 1.0 / probes_per_s : 0), next_(std::chrono::steady_clock::now()) {}

void ProbePacer::wait() {
  std::chrono::steady_clock::time_point slot;
  {
    std::lock_guard<std::mutex> lock(pacer_mutex());
    slot = std::max(std::chrono::steady_clock::now(), next_);
    next_ = slot +
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(interval_s_));
  }
  std::this_thread::sleep_until(slot);
}

FlowTrace trace_and_connect(const FlowTuple& tuple, const TraceOptions& options, ProbePacer& pacer, int& fd) {
  fd = -1;
  ProbeSocket connection;
  FlowTrace trace = run_trace(tuple, options, pacer, probe_tcp, &connection);
  if (trace.reached) {
    // Now an ordinary connection: the default TTL (-1), and ICMP errors soft again; with
    // IP_RECVERR on, a connected TCP socket dies of the first unreachable a flapping
    // route sends, where TCP would otherwise retransmit through it.
    set_int(connection.get(), IPPROTO_IP, IP_TTL, -1);
    set_int(connection.get(), IPPROTO_IP, IP_RECVERR, 0);
    while (read_icmp(connection.get()).found) {
    }
    fd = connection.release();
  }
  return trace;
}

std::string switch_at_ttl(const FlowTuple& tuple, int ttl, const TraceOptions& options, ProbePacer& pacer) {
  TraceOptions o = options;
  o.first_ttl = o.max_ttl = ttl;
  ProbeSocket connection;  // a SYN that reached the destination after all: closed here
  const FlowTrace trace = run_trace(tuple, o, pacer, probe_tcp, &connection);
  return trace.hops.empty() || trace.reached ? "" : trace.hops.front().address;
}

FlowTrace trace_udp(const FlowTuple& tuple, const TraceOptions& options, ProbePacer& pacer) {
  return run_trace(tuple, options, pacer, probe_udp, nullptr);
}

}  // namespace railbench
