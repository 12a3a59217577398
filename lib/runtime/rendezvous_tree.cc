#include "lib/runtime/rendezvous_tree.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::rendezvous {

namespace {

int lowest_bit(int rank) {
  return rank & -rank;
}

// A child that has not sent its hello within this long after connecting is dropped, so a
// stray connection on the ephemeral port cannot hold a parent until the deadline.
constexpr double kChildHelloSeconds = 5.0;

}  // namespace

int tree_parent(int rank) {
  return rank == 0 ? -1 : rank - lowest_bit(rank);
}

std::vector<int> tree_children(int rank, int size) {
  // Rank 0's lowest bit is above every rank: all of 1, 2, 4, ... are its children.
  const int64_t below = rank == 0 ? int64_t{1} << 31 : lowest_bit(rank);
  std::vector<int> out;
  for (int64_t step = 1; step < below && rank + step < size; step <<= 1) out.push_back(rank + static_cast<int>(step));
  std::reverse(out.begin(), out.end());
  return out;
}

int tree_subtree_size(int rank, int size) {
  return rank == 0 ? size : std::min(lowest_bit(rank), size - rank);
}

TreeLinks::TreeLinks(int rank, int size, uint64_t token, int parent_fd, std::vector<int> child_fds,
                     std::vector<Fd> owned)
    : rank_(rank),
      size_(size),
      token_(token),
      parent_fd_(parent_fd),
      children_(tree_children(rank, size)),
      child_fds_(std::move(child_fds)),
      owned_(std::move(owned)) {
  if (child_fds_.size() != children_.size()) {
    throw BootstrapError(fmt::format("bootstrap tree: rank {} has {} child connections for {} children", rank,
                                     child_fds_.size(), children_.size()));
  }
}

std::string TreeLinks::child_name(int child) const {
  const int last = child + tree_subtree_size(child, size_) - 1;
  return last == child ? fmt::format("rank {}", child) : fmt::format("rank {} (for ranks {}-{})", child, child, last);
}

std::string TreeLinks::parent_name() const {
  return fmt::format("rank {} (rank {}'s parent in the bootstrap tree)", tree_parent(rank_), rank_);
}

void TreeLinks::timed_out(const char* what, const std::string& waiting_for) const {
  throw TimeoutError(fmt::format("rank {}: bootstrap {} timed out waiting for {}", rank_, what, waiting_for));
}

void TreeLinks::from_children(const char* what, const Deadline& deadline, const std::function<size_t(int)>& length,
                              const std::function<std::byte*(int)>& into) {
  std::vector<bool> done(children_.size(), false);
  size_t remaining = children_.size();
  while (remaining > 0) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < children_.size(); ++i) {
      if (done[i]) continue;
      fds.push_back({child_fds_[i], POLLIN, 0});
      which.push_back(i);
    }
    const int ms = static_cast<int>(deadline.remaining_seconds() * 1000.0);
    if (ms <= 0) {
      std::string missing;
      for (size_t i : which) missing += (missing.empty() ? "" : ", ") + child_name(children_[i]);
      timed_out(what, missing);
    }
    const int rc = ::poll(fds.data(), fds.size(), std::min(ms, 1000));
    if (rc < 0 && errno != EINTR) throw BootstrapError(fmt::format("poll failed: {}", std::strerror(errno)));
    for (size_t k = 0; rc > 0 && k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      const size_t i = which[k];
      const int child = children_[i];
      const std::string peer = child_name(child);
      try {
        const std::span<std::byte> payload(into(child), length(child));
        if (Verdict v = recv_frame(child_fds_[i], Kind::gather, token_, payload, deadline, peer); !v)
          throw BootstrapError(fmt::format("bootstrap {}: {} sent {}", what, peer, v.why));
      } catch (const TimeoutError&) {
        timed_out(what, peer);
      }
      done[i] = true;
      --remaining;
    }
  }
}

void TreeLinks::via_parent(const char* what, std::span<const std::byte> up, std::span<std::byte> down,
                           const Deadline& deadline) {
  const std::string peer = parent_name();
  try {
    send_frame(parent_fd_, Kind::gather, token_, up, deadline, peer);
    if (Verdict v = recv_frame(parent_fd_, Kind::result, token_, down, deadline, peer); !v)
      throw BootstrapError(fmt::format("bootstrap {}: {} sent {}", what, peer, v.why));
  } catch (const TimeoutError&) {
    timed_out(what, peer);
  }
}

void TreeLinks::to_children(std::span<const std::byte> down, const Deadline& deadline) {
  for (size_t i = 0; i < children_.size(); ++i)
    send_frame(child_fds_[i], Kind::result, token_, down, deadline, child_name(children_[i]));
}

void TreeLinks::all_gather(std::span<const std::byte> in, std::span<std::byte> out, const Deadline& deadline) {
  const size_t block = in.size();
  std::byte* base = out.data();
  if (block > 0) std::memcpy(base + block * static_cast<size_t>(rank_), in.data(), block);
  // Up: each child brings its subtree's blocks, which sit next to each other in `out`.
  from_children(
      "all_gather", deadline, [&](int child) { return block * static_cast<size_t>(tree_subtree_size(child, size_)); },
      [&](int child) { return base + block * static_cast<size_t>(child); });
  if (rank_ != 0) {
    const auto mine =
        out.subspan(block * static_cast<size_t>(rank_), block * static_cast<size_t>(tree_subtree_size(rank_, size_)));
    via_parent("all_gather", mine, out, deadline);
  }
  to_children(out, deadline);
}

void TreeLinks::all_reduce_max(std::span<double> values, const Deadline& deadline) {
  const size_t bytes = values.size_bytes();
  std::vector<std::vector<double>> from(children_.size(), std::vector<double>(values.size()));
  auto slot = [&](int child) {
    const auto at = std::find(children_.begin(), children_.end(), child) - children_.begin();
    return reinterpret_cast<std::byte*>(from[static_cast<size_t>(at)].data());
  };
  from_children(
      "all_reduce_max", deadline, [&](int) { return bytes; }, slot);
  for (const auto& theirs : from)
    for (size_t i = 0; i < values.size(); ++i) values[i] = std::max(values[i], theirs[i]);
  const auto as_bytes = std::as_writable_bytes(values);
  if (rank_ != 0) via_parent("all_reduce_max", as_bytes, as_bytes, deadline);
  to_children(as_bytes, deadline);
}

// ---- setup ----

Fd listen_for_children(int root_fd, std::string& address) {
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (::getsockname(root_fd, reinterpret_cast<sockaddr*>(&local), &len) != 0)
    throw BootstrapError(fmt::format("bootstrap tree: getsockname failed: {}", std::strerror(errno)));
  if (local.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&local)->sin_port = 0;
  if (local.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&local)->sin6_port = 0;
  Fd fd(::socket(local.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&local), len) != 0 || ::listen(fd.get(), kListenBacklog) != 0)
    throw BootstrapError(
        fmt::format("bootstrap tree: cannot listen for this rank's children: {}", std::strerror(errno)));
  len = sizeof(local);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len);
  address = address_text(reinterpret_cast<sockaddr*>(&local));
  return fd;
}

Fd connect_to_parent(const std::string& address, int rank, int size, uint64_t token, const Deadline& deadline) {
  const int parent = tree_parent(rank);
  const auto colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || !res)
    throw BootstrapError(
        fmt::format("bootstrap tree: rank 0 gave rank {} the parent address '{}', not ip:port", rank, address));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);
  std::string error;
  Fd fd = connect_before(res, deadline, deadline.remaining_seconds(), error);
  if (!fd) {
    throw BootstrapError(
        fmt::format("rank {}: cannot connect to rank {}, its parent in the bootstrap tree, at {}: {}: the ranks must "
                    "reach each other on the addresses they reach rank 0 from (or set "
                    "RAILBENCH_BOOTSTRAP_TOPOLOGY=star on rank 0: every collective through rank 0)",
                    rank, parent, address, error));
  }
  send_frame(fd.get(), Kind::hello, token, encode(Hello{rank, size}), deadline, fmt::format("rank {}", parent));
  return fd;
}

void await_welcome(int fd, int rank, uint64_t token, const Deadline& deadline) {
  const std::string peer = fmt::format("rank {} (rank {}'s parent in the bootstrap tree)", tree_parent(rank), rank);
  if (Verdict v = recv_frame(fd, Kind::welcome, token, {}, deadline, peer); !v)
    throw BootstrapError(fmt::format("rank {}: {} answered its hello with {}", rank, peer, v.why));
}

namespace {

// The rank a connection's hello names, or -1 when it is not a hello of this job.
int read_child_hello(int fd, int size, uint64_t token, const Deadline& deadline) {
  const Deadline hello_deadline = Deadline::after(std::min(kChildHelloSeconds, deadline.remaining_seconds()));
  std::array<std::byte, kHeaderBytes> bytes{};
  std::array<std::byte, kHelloBytes> hello{};
  try {
    if (!recv_exact(fd, bytes.data(), bytes.size(), hello_deadline, "a child")) return -1;
    if (!check_header(decode_header(bytes), token, Kind::hello, kHelloBytes)) return -1;
    if (!recv_exact(fd, hello.data(), hello.size(), hello_deadline, "a child")) return -1;
  } catch (const TimeoutError&) {
    return -1;
  }
  const Hello h = decode_hello(hello);
  return h.size == size ? h.rank : -1;
}

}  // namespace

std::vector<Fd> accept_children(int listener, int rank, int size, const std::vector<int>& children, uint64_t token,
                                const Deadline& deadline) {
  std::vector<Fd> out(children.size());
  size_t remaining = children.size();
  while (remaining > 0) {
    const int ms = static_cast<int>(deadline.remaining_seconds() * 1000.0);
    if (ms <= 0) {
      std::string missing;
      for (size_t i = 0; i < children.size(); ++i)
        if (!out[i]) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", children[i]);
      throw TimeoutError(
          fmt::format("rank {}: bootstrap tree: rank(s) {} did not connect to it, their parent", rank, missing));
    }
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, std::min(ms, 1000)) <= 0) continue;
    Fd fd(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) continue;
    const int child = read_child_hello(fd.get(), size, token, deadline);
    const auto at = std::find(children.begin(), children.end(), child);
    // A stranger, another job, or a rank that is not this one's child: closed, not admitted.
    if (at == children.end() || out[static_cast<size_t>(at - children.begin())]) continue;
    set_nodelay(fd.get());
    send_frame(fd.get(), Kind::welcome, token, {}, deadline, fmt::format("rank {}", child));
    out[static_cast<size_t>(at - children.begin())] = std::move(fd);
    --remaining;
  }
  return out;
}

}  // namespace railbench::rendezvous
