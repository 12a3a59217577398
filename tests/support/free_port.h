// A loopback TCP port that was free a moment ago, for tests that start a rendezvous or
// a liveness responder on a port of their own. The kernel picks it (bind to port 0), so
// parallel tests do not collide the way fixed numbers would.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace railbench::testing {

inline int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("free_tcp_port: socket() failed");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("free_tcp_port: no loopback port to bind");
  return ntohs(sa.sin_port);
}

}  // namespace railbench::testing
