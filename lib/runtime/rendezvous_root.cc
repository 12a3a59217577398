#include "lib/runtime/rendezvous_root.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::rendezvous {

namespace {

bool is_numeric_address(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  return ::inet_pton(AF_INET, host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

std::string address_only(const sockaddr* sa) {
  std::string text = address_text(sa);
  text = text.substr(0, text.rfind(':'));
  if (text.size() > 2 && text.front() == '[') text = text.substr(1, text.size() - 2);
  return text;
}

// Refusals printed one by one up to kLoggedRefusals, then counted by reason and printed
// as one line when the rendezvous ends: 200 strangers make 11 lines, not 200.
class RefusalLog {
 public:
  explicit RefusalLog(std::string port) : port_(std::move(port)) {}
  RefusalLog(const RefusalLog&) = delete;
  RefusalLog& operator=(const RefusalLog&) = delete;
  ~RefusalLog() { summary(); }

  void refused(const std::string& peer, const std::string& why, const std::string& reason) {
    if (printed_ < kLoggedRefusals) {
      fmt::print(stderr, "bootstrap: refused a connection from {}: {}\n", peer, why);
      if (++printed_ == kLoggedRefusals) {
        fmt::print(stderr, "bootstrap: further refused connections to port {} are counted, not printed\n", port_);
      }
    } else {
      ++quiet_;
      ++by_reason_[reason];
    }
  }

  void summary() {
    if (quiet_ == 0) return;
    std::string reasons;
    for (const auto& [reason, n] : by_reason_)
      reasons += fmt::format("{}{}: {}", reasons.empty() ? "" : ", ", reason, n);
    fmt::print(stderr, "bootstrap: refused {} more connection(s) to port {} ({})\n", quiet_, port_, reasons);
    quiet_ = 0;
    by_reason_.clear();
  }

 private:
  std::string port_;
  int printed_ = 0;
  long quiet_ = 0;
  std::map<std::string, long> by_reason_;
};

const char* reason_of(Fault f) {
  switch (f) {
    case Fault::not_railbench: return "not railbench";
    case Fault::version: return "other protocol version";
    case Fault::token: return "wrong job token";
    case Fault::kind: return "not a hello";
    case Fault::length: return "wrong hello length";
    case Fault::none: break;
  }
  return "?";
}

// A connection that has not sent its whole hello yet. The buffer is fixed: nothing a
// stranger sends sizes an allocation.
struct Pending {
  Fd fd;
  std::string peer;
  Clock::time_point deadline;
  std::array<std::byte, kHeaderBytes + kHelloBytes> buf{};
  size_t got = 0;
  bool finished = false;  // admitted or refused: dropped from the list
};

class Admission {
 public:
  Admission(int size, uint64_t token, double hello_s, const std::string& port)
      : size_(size), token_(token), hello_s_(hello_s), arrived_(size, false), peers_(size), log_(port) {
    arrived_[0] = true;
  }

  int remaining() const { return remaining_; }
  const std::vector<bool>& arrived() const { return arrived_; }
  std::vector<Fd> take_peers() { return std::move(peers_); }

  // One round: expire late connections, wait for input, read what came, accept new ones.
  void step(const std::vector<Fd>& listeners, const Deadline& deadline) {
    auto now = Clock::now();
    for (auto& p : pending_) {
      if (now >= p.deadline)
        refuse(p, fmt::format("sent no complete hello within {:g} s", hello_s_), "no hello in time");
    }
    drop_finished();

    std::vector<pollfd> fds;
    for (const auto& l : listeners) fds.push_back({l.get(), POLLIN, 0});
    auto wake = deadline.at();
    for (const auto& p : pending_) {
      fds.push_back({p.fd.get(), POLLIN, 0});
      wake = std::min(wake, p.deadline);
    }
    const double wait_s = wake <= now ? 0.0 : seconds_between(now, wake);
    const int ms = static_cast<int>(std::min(1000.0, std::ceil(wait_s * 1000.0)));
    int rc = ::poll(fds.data(), fds.size(), ms);
    if (rc < 0 && errno != EINTR) throw BootstrapError(fmt::format("poll failed: {}", std::strerror(errno)));
    if (rc <= 0) return;

    for (size_t i = 0; i < pending_.size(); ++i) {
      if (fds[listeners.size() + i].revents) read_hello(pending_[i]);
    }
    drop_finished();
    for (size_t i = 0; i < listeners.size() && remaining_ > 0; ++i) {
      if (fds[i].revents) accept_from(listeners[i].get());
    }
  }

  // Every rank has joined: whoever is still waiting is a stranger.
  void close_pending() {
    for (auto& p : pending_)
      refuse(p, "still had no complete hello when every rank had joined", "open when every rank had joined");
    pending_.clear();
  }

 private:
  void accept_from(int listener) {
    for (int i = 0; i < kMaxPending && remaining_ > 0; ++i) {
      sockaddr_storage sa{};
      socklen_t len = sizeof(sa);
      Fd fd(::accept4(listener, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!fd) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if ((errno == EMFILE || errno == ENFILE) && !pending_.empty()) {
          refuse(pending_.front(), "closed to free a file descriptor for a newer connection",
                 "file descriptors ran out");
          drop_finished();
          continue;
        }
        // EAGAIN: nothing more to accept. Out of descriptors with nothing to free: the
        // connection waits in the backlog; a short pause keeps poll from spinning.
        if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return;
      }
      if (pending_.size() >= static_cast<size_t>(kMaxPending)) {
        // The oldest is the one most likely to be holding its socket: a real rank sends
        // its hello as soon as it connects.
        refuse(pending_.front(),
               fmt::format("{} connections were waiting for their hello: closed the oldest", kMaxPending),
               "over the pending limit");
        drop_finished();
      }
      set_nodelay(fd.get());
      Pending& p = pending_.emplace_back();
      p.fd = std::move(fd);
      p.peer = address_text(reinterpret_cast<sockaddr*>(&sa));
      p.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(hello_s_));
      // A real rank's hello usually came with the connection: read it now rather than
      // risk its eviction by a flood accepted after it.
      read_hello(p);
      drop_finished();
    }
  }

  // Reads what has come of p's hello and admits or refuses it once it is whole.
  void read_hello(Pending& p) {
    while (!p.finished) {
      const size_t want = (p.got < kHeaderBytes ? kHeaderBytes : p.buf.size()) - p.got;
      ssize_t n = ::recv(p.fd.get(), p.buf.data() + p.got, want, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        refuse(p,
               p.got == 0 ? std::string("closed the connection without sending anything (a port scan or health check?)")
                          : fmt::format("closed the connection after {} bytes of a hello", p.got),
               "closed early");
        return;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        refuse(p, fmt::format("connection error: {}", std::strerror(errno)), "connection error");
        return;
      }
      const size_t before = p.got;
      p.got += static_cast<size_t>(n);
      if (before < 4) {
        if (Verdict v = check_prefix(std::span(p.buf.data(), p.got)); !v) {
          refuse(p, v.why, reason_of(v.fault));
          return;
        }
      }
      if (before < kHeaderBytes && p.got == kHeaderBytes) {
        const Header h = decode_header(std::span<const std::byte, kHeaderBytes>(p.buf.data(), kHeaderBytes));
        if (Verdict v = check_header(h, token_, Kind::hello, kHelloBytes); !v) {
          // A railbench of another job or build is told why, with its own digest echoed:
          // the refusal must not hand our digest to whoever asks.
          std::optional<Refusal> answer;
          if (v.fault == Fault::token) answer = Refusal::wrong_token;
          if (v.fault == Fault::version) answer = Refusal::wrong_version;
          refuse(p, v.why, reason_of(v.fault), answer, h.token);
          return;
        }
      }
      if (p.got == p.buf.size()) admit(p);
    }
  }

  // A whole hello with our job token: a rank of this launch, or a mistake in it.
  void admit(Pending& p) {
    const Hello h = decode_hello(std::span<const std::byte, kHelloBytes>(p.buf.data() + kHeaderBytes, kHelloBytes));
    // The launch was set up wrong, not a run that failed: bad input, exit 2.
    if (h.size != size_) {
      tell(p, Refusal::world_size);
      throw UsageError(
          fmt::format("bootstrap: rank {} was started with RAILBENCH_WORLD_SIZE={}, rank 0 with {}: "
                      "give every rank the same RAILBENCH_WORLD_SIZE",
                      h.rank, h.size, size_));
    }
    if (h.rank < 0 || h.rank >= size_) {
      tell(p, Refusal::rank_out_of_range);
      throw UsageError(
          fmt::format("bootstrap: a process from {} joined as RAILBENCH_RANK={} of world size {}: "
                      "give each rank its own RAILBENCH_RANK, 0..{}",
                      p.peer, h.rank, size_, size_ - 1));
    }
    if (arrived_[h.rank]) {
      tell(p, Refusal::duplicate_rank);
      throw UsageError(
          fmt::format("bootstrap: two processes were started with RAILBENCH_RANK={} (world size {}): "
                      "give each rank its own RAILBENCH_RANK, 0..{}",
                      h.rank, size_, size_ - 1));
    }
    try {
      send_frame(p.fd.get(), Kind::welcome, token_, {}, Deadline::after(hello_s_), fmt::format("rank {}", h.rank));
    } catch (const Error&) {
      refuse(p, fmt::format("rank {} closed the connection before it was admitted", h.rank), "closed early");
      return;
    }
    arrived_[h.rank] = true;
    peers_[h.rank] = std::move(p.fd);
    p.finished = true;
    --remaining_;
  }

  // Best effort: a refused rank learns why, if its socket takes a few bytes now.
  static void tell(Pending& p, Refusal r, uint64_t token = 0) {
    auto frame = encode(Header{kMagic, kVersion, static_cast<uint16_t>(Kind::refused), token, kRefusalBytes});
    const auto code = encode(r);
    std::array<std::byte, kHeaderBytes + kRefusalBytes> bytes{};
    std::copy(frame.begin(), frame.end(), bytes.begin());
    std::copy(code.begin(), code.end(), bytes.begin() + kHeaderBytes);
    [[maybe_unused]] ssize_t n = ::send(p.fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    // Closing with unread bytes (the rest of its hello) would send a reset that can
    // overtake the refusal: read them first, a bounded few.
    std::array<std::byte, 64> rest{};
    for (int i = 0; i < 4 && ::recv(p.fd.get(), rest.data(), rest.size(), MSG_DONTWAIT) > 0; ++i) {
    }
  }

  void refuse(Pending& p, const std::string& why, const std::string& reason, std::optional<Refusal> r = {},
              uint64_t their_token = 0) {
    if (p.finished) return;
    if (r) tell(p, *r, their_token);
    log_.refused(p.peer, why, reason);
    p.fd.reset();
    p.finished = true;
  }

  void drop_finished() {
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Pending& p) { return p.finished; }),
                   pending_.end());
  }

  int size_;
  uint64_t token_;
  double hello_s_;
  int remaining_ = size_ - 1;
  std::vector<bool> arrived_;
  std::vector<Fd> peers_;
  std::vector<Pending> pending_;
  RefusalLog log_;
};

}  // namespace

std::string missing_ranks_message(const char* what, const std::vector<bool>& arrived, double timeout_s) {
  std::string missing;
  for (size_t r = 0; r < arrived.size(); ++r)
    if (!arrived[r]) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", r);
  return fmt::format(
      "bootstrap {} timed out after {:.0f} s: rank(s) {} did not arrive (check that they were "
      "started in this job, meeting at the same rendezvous address, and have not failed)",
      what, timeout_s, missing);
}

RootListener::RootListener(const std::string& host, const std::string& port, const TcpRendezvous& where)
    : host_(host), port_(port) {
  const bool any = where.bind_any;
  const bool override_address = !any && !where.bind_address.empty();
  const std::string bind_host = override_address ? where.bind_address : host;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (any ? AI_PASSIVE : 0);
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(any ? nullptr : bind_host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    if (override_address) {
      throw UsageError(
          fmt::format("RAILBENCH_BIND='{}' does not resolve ({}): set it to an address of this host, or to "
                      "'any' to listen on every address",
                      bind_host, gai_strerror(rc)));
    }
    throw UsageError(
        fmt::format("RAILBENCH_ROOT host '{}' does not resolve on rank 0 ({}): use a name or address of "
                    "this host",
                    bind_host, gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);

  std::vector<std::string> not_here;  // resolved addresses this machine does not have
  for (auto* ai = res; ai; ai = ai->ai_next) {
    const std::string text = address_text(ai->ai_addr);
    if (std::find(addresses_.begin(), addresses_.end(), text) != addresses_.end()) continue;  // /etc/hosts twice
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd) continue;
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6) {
      // Every address when binding any (one dual-stack socket); only this one otherwise.
      int v6only = any ? 0 : 1;
      ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
    }
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd.get(), kListenBacklog) == 0) {
      loopback_only_ = loopback_only_ && is_loopback(ai->ai_addr);
      listeners_.push_back(std::move(fd));
      addresses_.push_back(text);
      if (any) break;
      continue;
    }
    if (errno == EADDRNOTAVAIL) {
      not_here.push_back(address_only(ai->ai_addr));
      continue;
    }
    // Something else holds the port on one of the root's addresses: ranks could reach it
    // instead of us, so this is a failure even if another address was free.
    throw BootstrapError(fmt::format("rank 0 cannot listen on {} ({}): pick a free port in RAILBENCH_ROOT (host {})",
                                     text, std::strerror(errno), host));
  }
  if (!listeners_.empty()) return;
  if (!not_here.empty()) {
    std::string list;
    for (const auto& a : not_here) list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
    if (override_address) {
      throw UsageError(
          fmt::format("RAILBENCH_BIND='{}' ({}) is not an address of this machine: set it to one of this "
                      "host's addresses, or to 'any' to listen on every address",
                      bind_host, list));
    }
    throw UsageError(
        fmt::format("rank 0 cannot listen on RAILBENCH_ROOT's host '{}': it resolves to {}, which is not an address of "
                    "this machine (rank 0 listens only on the root's address): start rank 0 on that host, give "
                    "RAILBENCH_ROOT a name that resolves to this host, or set RAILBENCH_BIND=any (every address) or "
                    "RAILBENCH_BIND=<an address of this host>",
                    host, list));
  }
  throw BootstrapError(fmt::format("rank 0 cannot listen on port {} of '{}' ({}): pick a free port in RAILBENCH_ROOT",
                                   port, any ? std::string("any address") : bind_host, std::strerror(errno)));
}

std::string RootListener::listening_hint() const {
  std::string list;
  for (const auto& a : addresses_) list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
  std::string hint = fmt::format("; rank 0 listened on {}", list);
  // Debian's /etc/hosts maps the machine's own name to 127.0.1.1: ranks on this host
  // reach it by that name, ranks on other hosts cannot.
  if (loopback_only_ && !is_numeric_address(host_)) {
    hint += fmt::format(
        ", loopback only, because '{}' resolves to a loopback address here: ranks on other hosts cannot reach "
        "it; give RAILBENCH_ROOT this host's network address or set RAILBENCH_BIND=any",
        host_);
  }
  return hint;
}

int open_files_needed(int size) {
  // One socket per peer for the whole run (the star), kMaxPending connections waiting
  // for their hello, and room for what the rank opens beside them: the transport's
  // endpoints and devices, results files, /proc and /sys reads.
  return size - 1 + kMaxPending + 256;
}

void ensure_open_files(int size) {
  const rlim_t need = static_cast<rlim_t>(open_files_needed(size));
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= need) return;
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < need) {
    // Fail before any rank is admitted: running out of descriptors half-way through
    // the rendezvous would read as ranks that never arrived.
    throw UsageError(fmt::format(
        "rank 0 needs {} open files for {} ranks (a socket per peer) but its hard limit is {}: raise it where "
        "the job starts (ulimit -n {}; LimitNOFILE= in a systemd unit; /etc/security/limits.conf for nofile; "
        "srun --propagate=NOFILE)",
        need, size, lim.rlim_max, need));
  }
  lim.rlim_cur = need;
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) {
    throw UsageError(fmt::format("rank 0 needs {} open files for {} ranks and could not raise its limit to that: {}",
                                 need, size, std::strerror(errno)));
  }
}

std::vector<Fd> RootListener::admit(int size, uint64_t token, double timeout_s) {
  ensure_open_files(size);
  auto deadline = Deadline::after(timeout_s);
  // Every rank connects at once: a backlog shorter than the world drops SYNs, and the
  // kernel retries each after 1 s, then 2 s (at 1,024 ranks the rendezvous took 2.2 s,
  // nearly all of it those retries). Listening again sets the new length; the kernel
  // caps it at net.core.somaxconn.
  for (const auto& l : listeners_) ::listen(l.get(), std::max(kListenBacklog, size));
  Admission admission(size, token, std::min(kHelloSeconds, timeout_s), port_);
  while (admission.remaining() > 0) {
    if (deadline.passed()) {
      admission.close_pending();
      throw TimeoutError(missing_ranks_message("connect", admission.arrived(), timeout_s) + listening_hint());
    }
    admission.step(listeners_, deadline);
  }
  listeners_.clear();  // later connections are refused by the kernel
  admission.close_pending();
  return admission.take_peers();
}

}  // namespace railbench::rendezvous
