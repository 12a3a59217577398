#include "bench/commands/validate/fabric/flow_probe.h"

#include <netinet/tcp.h>

#include <vector>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/observe/flow_socket.h"

namespace railbench {

using flow_socket::bind_error;
using flow_socket::ProbeSocket;
using flow_socket::set_int;
using flow_socket::to_sockaddr;
using flow_socket::wait_for;

FlowListener::FlowListener(const std::string& ip) {
  sockaddr_in addr;
  if (!to_sockaddr(ip, 0, addr))
    throw UsageError(fmt::format("flow listener: '{}' is not a dotted IPv4 address; give the rail's address", ip));
  ProbeSocket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (s.get() < 0)
    throw TransportError(fmt::format("flow listener on {}: cannot open a socket: {}", ip, errno_text(errno)));
  set_int(s.get(), SOL_SOCKET, SO_REUSEADDR, 1);
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    const std::string why = fmt::format("flow listener: {}", bind_error(ip, 0, err));
    if (err == EADDRNOTAVAIL) throw UsageError(why);
    throw TransportError(why);
  }
  if (::listen(s.get(), SOMAXCONN) != 0)
    throw TransportError(fmt::format("flow listener on {}: cannot listen: {}", ip, errno_text(errno)));
  socklen_t len = sizeof addr;
  ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  fd_ = s.release();
}

FlowListener::~FlowListener() {
  if (fd_ >= 0) ::close(fd_);
}

int FlowListener::accept_until(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) return fd;
    // A connection reset before it was taken is not the caller's; wait for the next.
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) return -1;
    if (wait_for(fd_, POLLIN, deadline) == 0) return -1;
  }
}

namespace {

tcp_info read_tcp_info(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len);
  return info;
}

void finish_figures(FlowFigures& f, uint64_t want, Clock::time_point first, Clock::time_point last) {
  f.completed = f.error.empty() && f.bytes == want;
  f.seconds = f.bytes ? seconds_between(first, last) : 0;
  f.gbps = f.seconds > 0 ? static_cast<double>(f.bytes) * 8 / f.seconds / 1e9 : 0;
}

// Sends or receives one byte, the end-of-flow answer, by the deadline: "" or why not.
std::string exchange_answer(int fd, bool send_it, Clock::time_point deadline) {
  char byte = '.';
  for (;;) {
    const ssize_t n = send_it ? ::send(fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL) : ::recv(fd, &byte, 1, MSG_DONTWAIT);
    if (n == 1) return "";
    if (n == 0) return "the peer closed the connection before the end-of-flow answer";
    if (errno != EAGAIN && errno != EINTR) return fmt::format("the end-of-flow answer failed: {}", errno_text(errno));
    if (wait_for(fd, send_it ? POLLOUT : POLLIN, deadline) == 0) return "no end-of-flow answer before the deadline";
  }
}

}  // namespace

FlowFigures send_flow(int fd, uint64_t bytes, std::chrono::steady_clock::time_point deadline) {
  FlowFigures f;
  static const std::vector<char> chunk(1 << 20);  // zeros: the content is not checked
  const uint32_t retrans_before = read_tcp_info(fd).tcpi_total_retrans;
  const auto start = Clock::now();
  while (f.bytes < bytes && f.error.empty()) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(bytes - f.bytes, chunk.size()));
    const ssize_t n = ::send(fd, chunk.data(), want, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      f.bytes += static_cast<uint64_t>(n);
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      f.error = fmt::format("send failed after {} of {} bytes: {}", f.bytes, bytes, errno_text(errno));
    } else if (wait_for(fd, POLLOUT, deadline) == 0) {
      f.error = fmt::format("the deadline passed with {} of {} bytes sent", f.bytes, bytes);
    }
  }
  // The last byte is "moved" when the receiver says so, not when the send buffer took it.
  if (f.error.empty()) f.error = exchange_answer(fd, false, deadline);
  finish_figures(f, bytes, start, Clock::now());
  const tcp_info after = read_tcp_info(fd);
  f.retransmits = after.tcpi_total_retrans - retrans_before;
  f.rtt_us = after.tcpi_rtt;
  return f;
}

FlowFigures receive_flow(int fd, uint64_t bytes, std::chrono::steady_clock::time_point deadline) {
  FlowFigures f;
  std::vector<char> buf(1 << 20);
  Clock::time_point first{}, last{};
  while (f.bytes < bytes && f.error.empty()) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(bytes - f.bytes, buf.size()));
    const ssize_t n = ::recv(fd, buf.data(), want, MSG_DONTWAIT);
    if (n > 0) {
      last = Clock::now();
      if (f.bytes == 0) first = last;
      f.bytes += static_cast<uint64_t>(n);
    } else if (n == 0) {
      f.error = fmt::format("the sender closed the connection after {} of {} bytes", f.bytes, bytes);
    } else if (errno != EAGAIN && errno != EINTR) {
      f.error = fmt::format("receive failed after {} of {} bytes: {}", f.bytes, bytes, errno_text(errno));
    } else if (wait_for(fd, POLLIN, deadline) == 0) {
      f.error = fmt::format("the deadline passed with {} of {} bytes received", f.bytes, bytes);
    }
  }
  if (f.error.empty()) f.error = exchange_answer(fd, true, deadline);
  finish_figures(f, bytes, first, last);
  return f;
}

namespace {

// One flow of move_flows_at_once, at one end.
struct Moving {
  int id = 0, fd = -1;
  bool sender = false;
  bool answering = false;  // the data moved: the end-of-flow byte is next
  bool done = false;
  uint32_t retrans_before = 0;
  Clock::time_point first{}, last{};
  ConcurrentFlow result;
};

// Moves what the socket takes or has now (at most a few MiB, so that one fast flow does
// not starve the others of this loop), without blocking.
void step(Moving& m, uint64_t bytes, const std::vector<char>& zeros, std::vector<char>& buf, Clock::time_point t0) {
  FlowFigures& f = m.result.figures;
  for (int turns = 0; turns < 4 && !m.done; ++turns) {
    if (m.answering) {
      char byte = '.';
      const ssize_t n =
          m.sender ? ::recv(m.fd, &byte, 1, MSG_DONTWAIT) : ::send(m.fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n == 1) {
        m.done = true;
        if (m.sender) m.result.done_s = seconds_between(t0, Clock::now());
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        f.error = n == 0 ? "the peer closed the connection before the end-of-flow answer"
                         : fmt::format("the end-of-flow answer failed: {}", errno_text(errno));
        m.done = true;
      }
      return;
    }
    const size_t want = static_cast<size_t>(std::min<uint64_t>(bytes - f.bytes, zeros.size()));
    const ssize_t n = m.sender ? ::send(m.fd, zeros.data(), want, MSG_DONTWAIT | MSG_NOSIGNAL)
                               : ::recv(m.fd, buf.data(), want, MSG_DONTWAIT);
    if (n > 0) {
      if (!m.sender) {
        m.last = Clock::now();
        if (f.bytes == 0) m.first = m.last;
      }
      f.bytes += static_cast<uint64_t>(n);
      if (f.bytes == bytes) {
        m.answering = true;
        if (!m.sender) m.result.done_s = seconds_between(t0, m.last);
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    f.error = n == 0 ? fmt::format("the sender closed the connection after {} of {} bytes", f.bytes, bytes)
                     : fmt::format("{} failed after {} of {} bytes: {}", m.sender ? "send" : "receive", f.bytes, bytes,
                                   errno_text(errno));
    m.done = true;
  }
}

short events_of(const Moving& m) {
  return (m.sender != m.answering) ? POLLOUT : POLLIN;
}

}  // namespace

ConcurrentFlows move_flows_at_once(const std::map<int, int>& out, const std::map<int, int>& in, uint64_t bytes,
                                   std::chrono::steady_clock::time_point deadline) {
  static const std::vector<char> zeros(1 << 20);
  std::vector<char> buf(1 << 20);
  std::vector<Moving> flows;
  const auto t0 = Clock::now();
  for (const auto& [id, fd] : out) flows.push_back({id, fd, true, false, false, read_tcp_info(fd).tcpi_total_retrans});
  for (const auto& [id, fd] : in) flows.push_back({id, fd, false});
  size_t open = flows.size();
  std::vector<pollfd> fds;
  std::vector<size_t> which;
  while (open > 0) {
    const auto now = Clock::now();
    if (now >= deadline) break;
    fds.clear();
    which.clear();
    for (size_t i = 0; i < flows.size(); ++i) {
      if (flows[i].done) continue;
      fds.push_back({flows[i].fd, events_of(flows[i]), 0});
      which.push_back(i);
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    const int rc = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left, 100)));
    if (rc <= 0) continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Moving& m = flows[which[k]];
      step(m, bytes, zeros, buf, t0);
      open -= m.done;
    }
  }
  ConcurrentFlows result;
  for (auto& m : flows) {
    FlowFigures& f = m.result.figures;
    if (!m.done && f.error.empty())
      f.error =
          fmt::format("the deadline passed with {} of {} bytes {}", f.bytes, bytes, m.sender ? "sent" : "received");
    if (m.sender) {
      finish_figures(f, bytes, t0, Clock::now());
      f.seconds = m.result.done_s;
      f.gbps = f.seconds > 0 ? static_cast<double>(f.bytes) * 8 / f.seconds / 1e9 : 0;
      const tcp_info after = read_tcp_info(m.fd);
      f.retransmits = after.tcpi_total_retrans - m.retrans_before;
      f.rtt_us = after.tcpi_rtt;
      f.completed = f.completed && m.done;
      result.sent[m.id] = m.result;
    } else {
      finish_figures(f, bytes, m.first, m.last);
      f.completed = f.completed && m.done;
      result.received[m.id] = m.result;
    }
  }
  return result;
}

}  // namespace railbench
