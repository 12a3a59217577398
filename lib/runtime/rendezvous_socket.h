// Sockets for the TCP rendezvous (lib/runtime/bootstrap_tcp.cc, lib/runtime/rendezvous_root.cc): an
// owned descriptor, sends and receives that end at a deadline, and frames
// (lib/runtime/rendezvous_frame.h) on top of them.
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "lib/core/clock.h"
#include "lib/runtime/rendezvous_frame.h"

namespace railbench::rendezvous {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// Waits for `events` on fd until the deadline; throws TimeoutError with `what`.
void wait_fd(int fd, short events, const Deadline& deadline, const std::string& what);

// Non-blocking sends and receives that wait at most until the deadline; `peer` names
// the other end in errors.
void send_all(int fd, const void* data, size_t len, const Deadline& deadline, const std::string& peer);
// False when the peer closed or reset the connection before `len` bytes came.
bool recv_exact(int fd, void* data, size_t len, const Deadline& deadline, const std::string& peer);
// Throws BootstrapError when the peer closed the connection.
void recv_all(int fd, void* data, size_t len, const Deadline& deadline, const std::string& peer);

// A non-blocking connect that gives up at the deadline or after attempt_s, so an address
// that drops SYNs does not use up the whole deadline. An empty Fd and `error` set when it
// fails, and when the socket connected to itself (TCP's simultaneous open: the kernel
// picked the listening port as the source while nothing listened there yet).
Fd connect_before(const addrinfo* ai, const Deadline& deadline, double attempt_s, std::string& error);

// A frame's header, read whole (BootstrapError when the peer closed first).
Header recv_header(int fd, const Deadline& deadline, const std::string& peer);
// A frame of `kind` whose payload is exactly payload.size() bytes, read into `payload`.
// Anything else is returned as the Verdict, its payload unread (the caller's error names
// the collective and the sender).
Verdict recv_frame(int fd, Kind kind, uint64_t token, std::span<std::byte> payload, const Deadline& deadline,
                   const std::string& peer);

// One frame: header, then payload.
void send_frame(int fd, Kind kind, uint64_t token, std::span<const std::byte> payload, const Deadline& deadline,
                const std::string& peer);

// "10.0.0.7:51234" or "[fe80::1]:51234".
std::string address_text(const sockaddr* sa);
bool is_loopback(const sockaddr* sa);
void set_nodelay(int fd);

}  // namespace railbench::rendezvous
