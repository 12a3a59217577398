#include "lib/runtime/rendezvous_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::rendezvous {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void wait_fd(int fd, short events, const Deadline& deadline, const std::string& what) {
  for (;;) {
    int ms = static_cast<int>(deadline.remaining_seconds() * 1000.0);
    if (ms <= 0) throw TimeoutError(what);
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, std::min(ms, 1000));
    if (rc > 0) return;
    if (rc < 0 && errno != EINTR) throw BootstrapError(fmt::format("poll failed: {}", std::strerror(errno)));
  }
}

void send_all(int fd, const void* data, size_t len, const Deadline& deadline, const std::string& peer) {
  const auto* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      wait_fd(fd, POLLOUT, deadline, fmt::format("bootstrap: timed out sending to {}", peer));
    } else {
      throw BootstrapError(fmt::format("bootstrap: lost connection to {}: {}", peer, std::strerror(errno)));
    }
  }
}

bool recv_exact(int fd, void* data, size_t len, const Deadline& deadline, const std::string& peer) {
  auto* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
    } else if (n == 0 || errno == ECONNRESET) {
      return false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      wait_fd(fd, POLLIN, deadline, fmt::format("bootstrap: timed out waiting for {}", peer));
    } else {
      throw BootstrapError(fmt::format("bootstrap: lost connection to {}: {}", peer, std::strerror(errno)));
    }
  }
  return true;
}

void recv_all(int fd, void* data, size_t len, const Deadline& deadline, const std::string& peer) {
  if (!recv_exact(fd, data, len, deadline, peer)) {
    throw BootstrapError(fmt::format("bootstrap: {} closed the connection (did it exit with an error?)", peer));
  }
}

namespace {

// Whether a connected socket's two ends are the same address and port.
bool connected_to_itself(int fd) {
  sockaddr_storage local{};
  sockaddr_storage remote{};
  socklen_t local_len = sizeof(local);
  socklen_t remote_len = sizeof(remote);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remote_len) != 0) {
    return false;
  }
  return local_len == remote_len && std::memcmp(&local, &remote, local_len) == 0;
}

}  // namespace

Fd connect_before(const addrinfo* ai, const Deadline& deadline, double attempt_s, std::string& error) {
  Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
  if (!fd) {
    error = std::strerror(errno);
    return {};
  }
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      error = std::strerror(errno);
      return {};
    }
    const double wait_s = std::min(deadline.remaining_seconds(), attempt_s);
    pollfd p{fd.get(), POLLOUT, 0};
    int rc = ::poll(&p, 1, static_cast<int>(wait_s * 1000.0));
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    if (rc <= 0) {
      error = "connect timed out";
      return {};
    }
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
      error = std::strerror(so_error);
      return {};
    }
  }
  if (connected_to_itself(fd.get())) {
    // Rank 0 is not listening yet and the kernel picked the root's own port as this
    // socket's source port: TCP's simultaneous open joins the socket to itself, and
    // while it lives rank 0 cannot bind its port. Drop it with a reset (linger 0), not
    // a FIN: a FIN leaves it in TIME_WAIT on that port, which blocks rank 0's bind
    // for a minute even with SO_REUSEADDR. Then try again.
    const linger abort{1, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
    error = "connection to itself (rank 0 not listening yet)";
    return {};
  }
  set_nodelay(fd.get());
  return fd;
}

Header recv_header(int fd, const Deadline& deadline, const std::string& peer) {
  std::array<std::byte, kHeaderBytes> bytes{};
  recv_all(fd, bytes.data(), bytes.size(), deadline, peer);
  return decode_header(bytes);
}

Verdict recv_frame(int fd, Kind kind, uint64_t token, std::span<std::byte> payload, const Deadline& deadline,
                   const std::string& peer) {
  Verdict v = check_header(recv_header(fd, deadline, peer), token, kind, payload.size());
  if (v) recv_all(fd, payload.data(), payload.size(), deadline, peer);
  return v;
}

void send_frame(int fd, Kind kind, uint64_t token, std::span<const std::byte> payload, const Deadline& deadline,
                const std::string& peer) {
  const auto header = encode(Header{kMagic, kVersion, static_cast<uint16_t>(kind), token, payload.size()});
  send_all(fd, header.data(), header.size(), deadline, peer);
  send_all(fd, payload.data(), payload.size(), deadline, peer);
}

std::string address_text(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    return fmt::format("{}:{}", text, ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    return fmt::format("[{}]:{}", text, ntohs(in6->sin6_port));
  }
  return "an address of family " + std::to_string(sa->sa_family);
}

bool is_loopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
  }
  return false;
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace railbench::rendezvous
