#include "bench/commands/validate/fabric/flow_probe.h"

#include <netinet/tcp.h>

#include <vector>

#include <fmt/format.h>

#include "bench/commands/validate/fabric/flow_socket.h"
#include "lib/core/errors.h"

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

}  // namespace railbench
