// TCP rendezvous: rank 0 listens on RAILBENCH_ROOT, every other rank connects to it,
// and collectives go through rank 0 (a star). Small messages only: addresses, keys and
// result summaries, never benchmark data.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "lib/bootstrap.h"
#include "lib/clock.h"
#include "lib/errors.h"

namespace railbench {

namespace {

constexpr uint32_t kMagic = 0x7261696c;  // "rail"
// The most ranks the TCP rendezvous takes (README "Limits"): rank 0 holds a connection
// per rank.
constexpr int kMaxTcpWorld = 65536;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Hello {
  uint32_t magic;
  int32_t rank;
  int32_t size;
};

// Waits for `events` on fd until the deadline; throws TimeoutError with `what`.
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

void recv_all(int fd, void* data, size_t len, const Deadline& deadline, const std::string& peer) {
  auto* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
    } else if (n == 0) {
      throw BootstrapError(fmt::format("bootstrap: {} closed the connection (did it exit with an error?)", peer));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      wait_fd(fd, POLLIN, deadline, fmt::format("bootstrap: timed out waiting for {}", peer));
    } else {
      throw BootstrapError(fmt::format("bootstrap: lost connection to {}: {}", peer, std::strerror(errno)));
    }
  }
}

std::pair<std::string, std::string> split_host_port(const std::string& root) {
  auto colon = root.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == root.size()) {
    throw UsageError(fmt::format("RAILBENCH_ROOT='{}' is not host:port: e.g. RAILBENCH_ROOT=node001:29500", root));
  }
  // Port 0 would make rank 0 listen on a random port nobody else knows: every other
  // rank would then wait out its whole deadline.
  const std::string port = root.substr(colon + 1);
  const bool digits = port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535) {
    throw UsageError(
        fmt::format("RAILBENCH_ROOT='{}': port '{}' is not a port number 1..65535: e.g. "
                    "RAILBENCH_ROOT=node001:29500",
                    root, port));
  }
  std::string host = root.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, port};
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(int rank, int size, const std::string& root, double timeout_s) : rank_(rank), size_(size) {
    timeout_s_ = timeout_s;
    if (size < 1 || rank < 0 || rank >= size) {
      throw UsageError(
          fmt::format("RAILBENCH_RANK={} is outside 0..RAILBENCH_WORLD_SIZE-1 (world size {})", rank, size));
    }
    // Rank 0 keeps one connection (and its bookkeeping) per rank.
    if (size > kMaxTcpWorld) {
      throw UsageError(
          fmt::format("RAILBENCH_WORLD_SIZE={} is more than the TCP bootstrap takes ({}): launch larger "
                      "jobs with mpirun or srun",
                      size, kMaxTcpWorld));
    }
    auto [host, port] = split_host_port(root);
    if (rank == 0) {
      listen_and_accept(host, port);
    } else {
      connect_to_root(host, port, root);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "tcp"; }

  void all_gather(std::span<const std::byte> in, std::span<std::byte> out) override {
    auto deadline = Deadline::after(timeout_s_);
    const uint64_t block = in.size();
    if (rank_ == 0) {
      std::memcpy(out.data(), in.data(), block);
      // Receive from every rank, in whatever order they are ready, so a timeout can
      // name all the ranks that are missing rather than only the first.
      std::vector<bool> done(size_, false);
      done[0] = true;
      int remaining = size_ - 1;
      while (remaining > 0) {
        std::vector<pollfd> fds;
        std::vector<int> who;
        for (int r = 1; r < size_; ++r) {
          if (!done[r]) {
            fds.push_back({peers_[r].get(), POLLIN, 0});
            who.push_back(r);
          }
        }
        int ms = static_cast<int>(deadline.remaining_seconds() * 1000.0);
        if (ms <= 0) throw TimeoutError(missing_message("all_gather", done));
        int rc = ::poll(fds.data(), fds.size(), std::min(ms, 1000));
        if (rc < 0 && errno != EINTR) throw BootstrapError(fmt::format("poll failed: {}", std::strerror(errno)));
        for (size_t i = 0; rc > 0 && i < fds.size(); ++i) {
          if (!fds[i].revents) continue;
          const int r = who[i];
          uint64_t len = 0;
          recv_all(peers_[r].get(), &len, sizeof(len), deadline, fmt::format("rank {}", r));
          if (len != block) {
            throw BootstrapError(
                fmt::format("bootstrap all_gather: rank {} sent {} bytes, rank 0 expected {}", r, len, block));
          }
          recv_all(peers_[r].get(), out.data() + block * r, block, deadline, fmt::format("rank {}", r));
          done[r] = true;
          --remaining;
        }
      }
      for (int r = 1; r < size_; ++r)
        send_all(peers_[r].get(), out.data(), out.size(), deadline, fmt::format("rank {}", r));
    } else {
      try {
        send_all(root_.get(), &block, sizeof(block), deadline, "rank 0 (bootstrap root)");
        send_all(root_.get(), in.data(), block, deadline, "rank 0 (bootstrap root)");
        recv_all(root_.get(), out.data(), out.size(), deadline, "rank 0 (bootstrap root)");
      } catch (const TimeoutError& e) {
        // Rank 0 is usually alive and waiting itself for the rank that stopped or died.
        const std::string culprits = suspects();
        if (culprits.empty()) throw;
        throw TimeoutError(fmt::format("rank {}: {}; {}", rank_, culprits, e.what()));
      }
    }
  }

  void barrier() override {
    std::byte in{0};
    std::vector<std::byte> out(size_);
    all_gather(std::span(&in, 1), out);
  }

 private:
  std::string missing_message(const char* what, const std::vector<bool>& arrived) const {
    std::string missing;
    for (int r = 0; r < size_; ++r)
      if (!arrived[r]) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", r);
    return fmt::format(
        "bootstrap {} timed out after {:.0f} s: rank(s) {} did not arrive (check that they were "
        "started with the same RAILBENCH_ROOT and have not failed)",
        what, timeout_s_, missing);
  }

  void listen_and_accept(const std::string& host, const std::string& port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* res = nullptr;
    // Bind every address (passing nullptr host) so ranks can reach the root by any name.
    if (int rc = ::getaddrinfo(nullptr, port.c_str(), &hints, &res); rc != 0) {
      throw UsageError(fmt::format("RAILBENCH_ROOT port '{}' is not valid: {}", port, gai_strerror(rc)));
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);
    for (auto* ai = res; ai; ai = ai->ai_next) {
      Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
      if (!fd) continue;
      int one = 1;
      ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (ai->ai_family == AF_INET6) {
        int zero = 0;
        ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      }
      if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd.get(), 1024) == 0) {
        listener_ = std::move(fd);
        break;
      }
    }
    if (!listener_) {
      throw BootstrapError(
          fmt::format("rank 0 cannot listen on port {} ({}): pick a free port in RAILBENCH_ROOT "
                      "(host {})",
                      port, std::strerror(errno), host));
    }
    peers_.resize(size_);
    std::vector<bool> arrived(size_, false);
    arrived[0] = true;
    auto deadline = Deadline::after(timeout_s_);
    for (int accepted = 1; accepted < size_;) {
      int ms = static_cast<int>(deadline.remaining_seconds() * 1000.0);
      if (ms <= 0) throw TimeoutError(missing_message("connect", arrived));
      pollfd p{listener_.get(), POLLIN, 0};
      if (::poll(&p, 1, std::min(ms, 1000)) <= 0) continue;
      Fd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) continue;
      set_nodelay(conn.get());
      Hello h{};
      recv_all(conn.get(), &h, sizeof(h), deadline, "a connecting rank");
      if (h.magic != kMagic) {
        throw BootstrapError(
            fmt::format("bootstrap: something that is not a railbench rank connected to "
                        "RAILBENCH_ROOT's port {}: pick a port nothing else uses",
                        port));
      }
      // The launch was set up wrong, not a run that failed: bad input, exit 2.
      if (h.size != size_) {
        throw UsageError(
            fmt::format("bootstrap: rank {} was started with RAILBENCH_WORLD_SIZE={}, rank 0 with {}: "
                        "give every rank the same RAILBENCH_WORLD_SIZE",
                        h.rank, h.size, size_));
      }
      if (h.rank <= 0 || h.rank >= size_ || arrived[h.rank]) {
        throw UsageError(
            fmt::format("bootstrap: two processes were started with RAILBENCH_RANK={} (world size {}): "
                        "give each rank its own RAILBENCH_RANK, 0..{}",
                        h.rank, size_, size_ - 1));
      }
      arrived[h.rank] = true;
      peers_[h.rank] = std::move(conn);
      ++accepted;
    }
  }

  void connect_to_root(const std::string& host, const std::string& port, const std::string& root) {
    auto deadline = Deadline::after(timeout_s_);
    std::string last_error = "no address";
    // Rank 0 may start later than we do: retry until the deadline.
    while (!deadline.passed()) {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
        throw UsageError(fmt::format("RAILBENCH_ROOT='{}': cannot resolve '{}': {}", root, host, gai_strerror(rc)));
      }
      std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);
      for (auto* ai = res; ai; ai = ai->ai_next) {
        Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
        if (!fd) continue;
        if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0) {
          set_nodelay(fd.get());
          Hello h{kMagic, rank_, size_};
          send_all(fd.get(), &h, sizeof(h), deadline, "rank 0 (bootstrap root)");
          root_ = std::move(fd);
          return;
        }
        last_error = std::strerror(errno);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw TimeoutError(
        fmt::format("rank {}: could not reach rank 0 at RAILBENCH_ROOT={} within {:.0f} s ({}): is "
                    "rank 0 running and the port reachable?",
                    rank_, root, timeout_s_, last_error));
  }

  int rank_;
  int size_;
  Fd listener_;
  Fd root_;                // non-root ranks
  std::vector<Fd> peers_;  // rank 0: one connection per other rank
};

}  // namespace

std::unique_ptr<Bootstrap> make_tcp_bootstrap(int rank, int size, const TcpRendezvous& where, double timeout_s) {
  return std::make_unique<TcpBootstrap>(rank, size, where.root, timeout_s);
}

}  // namespace railbench
