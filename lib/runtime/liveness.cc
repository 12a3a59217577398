#include "lib/runtime/liveness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "lib/core/clock.h"
#include "lib/runtime/bootstrap.h"

namespace railbench {

namespace {

// The pong is the responder's pid: a port reused by another process (or reached on
// another host through a loopback address) does not pass for the rank.
using Pong = int64_t;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// IPv4 addresses of the interfaces that are up, loopback last: a peer on another host
// reaches us on one of the first, a peer on this host (or in no other network) on lo.
std::vector<std::string> local_addresses() {
  std::vector<std::string> out, loopback;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next) {
      if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP)) continue;
      char text[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof(text));
      ((a->ifa_flags & IFF_LOOPBACK) ? loopback : out).push_back(text);
    }
    ::freeifaddrs(list);
  }
  if (loopback.empty()) loopback.push_back("127.0.0.1");
  out.insert(out.end(), loopback.begin(), loopback.end());
  return out;
}

std::string serialize(const LivenessEndpoint& e) {
  std::string s = fmt::format("{} {}", e.pid, e.port);
  for (const auto& a : e.addresses) s += " " + a;
  return s;
}

LivenessEndpoint deserialize(const std::string& s) {
  LivenessEndpoint e;
  std::istringstream in(s);
  in >> e.pid >> e.port;
  for (std::string a; in >> a;) e.addresses.push_back(a);
  if (!in.eof()) e.port = 0;
  return e;
}

// One connection attempt of a probe.
struct Attempt {
  size_t peer = 0;
  int fd = -1;
  bool connected = false;
  PeerState state = PeerState::unreachable;  // until it finishes
  bool finished = false;
};

void start_attempt(Attempt& a, const std::string& address, int port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    a.finished = true;
    return;
  }
  a.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (a.fd < 0) {
    a.finished = true;
    return;
  }
  if (::connect(a.fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 || errno == EINPROGRESS) return;
  a.state = errno == ECONNREFUSED ? PeerState::gone : PeerState::unreachable;
  a.finished = true;
}

// Moves an attempt on after poll() reported events on its socket.
void advance_attempt(Attempt& a, short revents, long pid) {
  if (!a.connected) {
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(a.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0 || (revents & (POLLERR | POLLHUP))) {
      a.state = err == ECONNREFUSED || err == 0 ? PeerState::gone : PeerState::unreachable;
      a.finished = true;
      return;
    }
    a.connected = true;
    a.state = PeerState::silent;  // connected; silent until the pong
    const Pong ping = 0;
    if (::send(a.fd, &ping, sizeof(ping), MSG_NOSIGNAL) != sizeof(ping)) a.finished = true;
    return;
  }
  Pong pong = 0;
  const ssize_t n = ::recv(a.fd, &pong, sizeof(pong), MSG_WAITALL);
  a.state = n == sizeof(pong) && pong == pid ? PeerState::alive : PeerState::gone;
  a.finished = true;
}

// The best of what the attempts on one peer's addresses found.
int rank_of(PeerState s) {
  switch (s) {
    case PeerState::alive: return 4;
    case PeerState::silent: return 3;
    case PeerState::gone: return 2;
    case PeerState::unreachable: return 1;
    case PeerState::unknown: return 0;
  }
  return 0;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += fmt::format("{}{}", i == 0 ? "" : (i + 1 == names.size() ? " and " : ", "), names[i]);
  return out;
}

}  // namespace

const char* to_string(PeerState state) {
  switch (state) {
    case PeerState::alive: return "alive";
    case PeerState::silent: return "silent";
    case PeerState::gone: return "gone";
    case PeerState::unreachable: return "unreachable";
    case PeerState::unknown: return "unknown";
  }
  return "unknown";
}

LivenessResponder::LivenessResponder() {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(sa);
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      ::listen(listener_, 128) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&sa), &len) != 0 ||
      ::pipe2(wake_, O_CLOEXEC) != 0) {
    close_fd(listener_);  // no probe for this rank; the run itself does not need one
    return;
  }
  port_ = ntohs(sa.sin_port);
  thread_ = std::thread([this] { serve(); });
}

LivenessResponder::~LivenessResponder() {
  if (thread_.joinable()) {
    const char stop = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_[1], &stop, 1);
    thread_.join();
  }
  close_fd(listener_);
  close_fd(wake_[0]);
  close_fd(wake_[1]);
}

LivenessEndpoint LivenessResponder::endpoint() const {
  return LivenessEndpoint{port_ ? local_addresses() : std::vector<std::string>{}, port_, static_cast<long>(::getpid())};
}

void LivenessResponder::set_silent(bool silent) {
  silent_ = silent;
  const char recheck = 0;  // wakes serve() to look at the flag again
  [[maybe_unused]] ssize_t n = ::write(wake_[1], &recheck, 1);
}

void LivenessResponder::serve() noexcept {
  const Pong pong = ::getpid();
  for (;;) {
    // Blocks without a timeout: no wake-ups while a benchmark runs. Silent: connections
    // stay in the backlog unanswered, as with a stopped process.
    pollfd fds[2] = {{wake_[0], POLLIN, 0}, {listener_, static_cast<short>(silent_ ? 0 : POLLIN), 0}};
    const int rc = ::poll(fds, 2, -1);
    if (rc < 0 && errno != EINTR) return;
    if (fds[0].revents) {
      char byte = 0;
      if (::read(wake_[0], &byte, 1) != 1 || byte != 0) return;  // 1, or the pipe closed: stop
      continue;
    }
    if (rc <= 0 || silent_ || !(fds[1].revents & POLLIN)) continue;
    int conn = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    // The ping is 8 bytes; a prober that sends nothing is not waited for long.
    pollfd in{conn, POLLIN, 0};
    Pong ping = 0;
    if (::poll(&in, 1, 200) > 0 && ::recv(conn, &ping, sizeof(ping), MSG_DONTWAIT) > 0) [[maybe_unused]]
      ssize_t n = ::send(conn, &pong, sizeof(pong), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(conn);
  }
}

std::vector<PeerState> probe_liveness(const std::vector<LivenessEndpoint>& peers, int self, double timeout_s) noexcept {
  std::vector<PeerState> states(peers.size(), PeerState::unknown);
  std::vector<Attempt> attempts;
  try {
    for (size_t p = 0; p < peers.size(); ++p) {
      if (static_cast<int>(p) == self || peers[p].port == 0) continue;
      states[p] = PeerState::unreachable;
      for (const auto& address : peers[p].addresses) {
        Attempt& a = attempts.emplace_back();
        a.peer = p;
        start_attempt(a, address, peers[p].port);
      }
    }
    const auto deadline = Deadline::after(timeout_s);
    std::vector<pollfd> fds;
    std::vector<Attempt*> who;
    for (;;) {
      fds.clear();
      who.clear();
      for (Attempt& a : attempts) {
        if (a.finished) continue;
        fds.push_back({a.fd, static_cast<short>(a.connected ? POLLIN : POLLOUT), 0});
        who.push_back(&a);
      }
      const int ms = static_cast<int>(deadline.remaining_seconds() * 1000.0);
      if (fds.empty() || ms <= 0) break;
      if (::poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) break;
      for (size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents) advance_attempt(*who[i], fds[i].revents, peers[who[i]->peer].pid);
    }
  } catch (...) {
    // Out of memory while probing: report what was found so far.
  }
  for (Attempt& a : attempts) {
    if (rank_of(a.state) > rank_of(states[a.peer])) states[a.peer] = a.state;
    close_fd(a.fd);
  }
  return states;
}

std::string describe_liveness(const std::vector<PeerState>& states, const std::vector<std::string>& names,
                              double probe_s, double stalled_s) {
  std::vector<std::string> silent, gone, unreachable;
  bool any_alive = false;
  for (size_t r = 0; r < states.size(); ++r) {
    const std::string name = r < names.size() ? names[r] : fmt::format("rank {}", r);
    switch (states[r]) {
      case PeerState::silent: silent.push_back(name); break;
      case PeerState::gone: gone.push_back(name); break;
      case PeerState::unreachable: unreachable.push_back(name); break;
      case PeerState::alive: any_alive = true; break;
      case PeerState::unknown: break;
    }
  }
  const bool any_failed = !silent.empty() || !gone.empty() || !unreachable.empty();
  std::vector<std::string> parts;
  if (stalled_s > 0) {
    parts.push_back(fmt::format("this rank was itself unresponsive (stopped?) for {:.0f} s", stalled_s));
  }
  const auto verb = [](const std::vector<std::string>& v) { return v.size() == 1 ? "did" : "do"; };
  if (!silent.empty()) {
    parts.push_back(fmt::format("{} {} not answer a liveness probe within {:g} s: stopped or hung", join_names(silent),
                                verb(silent), probe_s));
  }
  if (!gone.empty()) {
    parts.push_back(fmt::format("{} {}: {} liveness port refused the connection (exited or killed)", join_names(gone),
                                gone.size() == 1 ? "is gone" : "are gone", gone.size() == 1 ? "its" : "their"));
  }
  if (!unreachable.empty()) {
    parts.push_back(fmt::format("{} could not be reached within {:g} s (host down or network cut?)",
                                join_names(unreachable), probe_s));
  }
  if (stalled_s > 0 && any_failed) parts.push_back("the other ranks have gone on without this one");
  if (any_failed && any_alive) parts.push_back("every other rank answered");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

Liveness::Liveness(Bootstrap& bootstrap, std::vector<std::string> names, double probe_s)
    : responder_(std::make_unique<LivenessResponder>()),
      names_(std::move(names)),
      self_(bootstrap.rank()),
      probe_s_(probe_s) {
  for (const auto& s : bootstrap.all_gather_strings(serialize(responder_->endpoint())))
    endpoints_.push_back(deserialize(s));
}

Liveness::~Liveness() = default;

std::string Liveness::probe(double stalled_s) const {
  return describe_liveness(probe_liveness(endpoints_, self_, probe_s_), names_, probe_s_, stalled_s);
}

}  // namespace railbench
