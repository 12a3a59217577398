// Socket helpers shared by the flow probes (flow_trace.cc) and validate's measured flows
// (bench/commands/validate/fabric/flow_measure.cc).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "lib/core/clock.h"
#include "lib/core/errno_text.h"

namespace railbench::flow_socket {

// Closes with SO_LINGER {1, 0}: no FIN exchange and no TIME_WAIT, so the next probe of the
// same flow can bind the same 4-tuple at once.
inline void abort_close(int fd) {
  if (fd < 0) return;
  const linger off{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off);
  ::close(fd);
}

inline bool to_sockaddr(const std::string& ip, uint16_t port, sockaddr_in& out) {
  out = {};
  out.sin_family = AF_INET;
  out.sin_port = htons(port);
  return ::inet_pton(AF_INET, ip.c_str(), &out.sin_addr) == 1;
}

inline void set_int(int fd, int level, int name, int value) {
  ::setsockopt(fd, level, name, &value, sizeof value);
}

// poll() until one of `events` (or an error) or the deadline: the revents, 0 at the deadline.
inline short wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto now = Clock::now();
    if (now >= deadline) return 0;
    // Rounded up so that a wait never ends a little before its deadline and spins.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (rc > 0) return p.revents;
    if (rc < 0 && errno != EINTR) return POLLERR;
  }
}

// `port` 0: a listener's bind, the kernel choosing the port.
inline std::string bind_error(const std::string& ip, uint16_t port, int err) {
  const std::string where = port ? fmt::format("bind {}:{}", ip, port) : fmt::format("listen on {}", ip);
  if (err == EADDRNOTAVAIL)
    return fmt::format(
        "cannot {}: {} is not an address of this host; give the rail's own IPv4 address "
        "(`ip -4 addr` lists them)",
        where, ip);
  if (err == EADDRINUSE)
    return fmt::format("cannot {}: another socket holds that port; choose another source port", where);
  return fmt::format("cannot {}: {}", where, errno_text(err));
}

// A probe's socket, closed however the probe ends unless it becomes the flow.
class ProbeSocket {
 public:
  ProbeSocket() = default;
  explicit ProbeSocket(int fd) : fd_(fd) {}
  ~ProbeSocket() { abort_close(fd_); }
  ProbeSocket(ProbeSocket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  ProbeSocket& operator=(ProbeSocket&& o) noexcept {
    if (this != &o) {
      abort_close(fd_);
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

}  // namespace railbench::flow_socket
