// TCP rendezvous: rank 0 listens on RAILBENCH_ROOT, every other rank connects to it,
// and collectives go through rank 0 (a star). Small messages only: addresses, keys and
// result summaries, never benchmark data. Every message is a frame with the job token's
// digest (lib/runtime/rendezvous_frame.h); rank 0 admits only hellos that carry it
// (lib/runtime/rendezvous_root.h).
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
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "lib/core/clock.h"
#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"
#include "lib/runtime/rendezvous_frame.h"
#include "lib/runtime/rendezvous_root.h"
#include "lib/runtime/rendezvous_socket.h"
#include "lib/runtime/rendezvous_tree.h"

namespace railbench {

namespace {

using namespace rendezvous;

// The most ranks the TCP rendezvous takes (bench/cli/README.md, "Limits"): rank 0 holds a connection
// per rank.
constexpr int kMaxTcpWorld = 65536;
// How long one connect attempt may take before the next address (or the next round) is
// tried: an address that drops SYNs must not use up the whole deadline.
constexpr double kConnectAttemptSeconds = 5.0;

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

class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(int rank, int size, const TcpRendezvous& where, double timeout_s)
      : rank_(rank), size_(size), token_(token_digest(where.job_token)), asked_topology_(where.topology) {
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
    auto [host, port] = split_host_port(where.root);
    if (rank == 0) {
      RootListener listener(host, port, where);
      peers_ = listener.admit(size_, token_, timeout_s_);
    } else {
      connect_to_root(host, port, where.root);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "tcp"; }

  void all_gather(std::span<const std::byte> in, std::span<std::byte> out) override {
    set_up_topology();
    auto deadline = Deadline::after(timeout_s_);
    if (tree_) return over_tree([&] { tree_->all_gather(in, out, deadline); });
    const uint64_t block = in.size();
    if (rank_ == 0) {
      std::memcpy(out.data(), in.data(), block);
      from_every_rank("all_gather", deadline, [&](int r, const std::string& peer) {
        const Header h = recv_header(peers_[r].get(), deadline, peer);
        if (Verdict v = check_header(h, token_, Kind::gather, block); !v) {
          if (v.fault == Fault::length) {
            throw BootstrapError(
                fmt::format("bootstrap all_gather: rank {} sent {} bytes, rank 0 expected {}", r, h.length, block));
          }
          throw BootstrapError(fmt::format("bootstrap all_gather: rank {} sent {}", r, v.why));
        }
        recv_all(peers_[r].get(), out.data() + block * r, block, deadline, peer);
      });
      for (int r = 1; r < size_; ++r)
        send_frame(peers_[r].get(), Kind::result, token_, out, deadline, fmt::format("rank {}", r));
    } else {
      naming_suspects([&] {
        send_frame(root_.get(), Kind::gather, token_, in, deadline, kRootPeer);
        recv_result(out, deadline, "all_gather");
      });
    }
  }

  // Through the tree, an all-gather of nothing: empty frames up and down, 2 log2(N) hops.
  void barrier() override {
    set_up_topology();
    if (tree_) return over_tree([&] { tree_->all_gather({}, {}, Deadline::after(timeout_s_)); });
    std::byte in{0};
    std::vector<std::byte> out(size_);
    all_gather(std::span(&in, 1), out);
  }

  std::vector<double> all_reduce_max(std::span<const double> mine) override {
    set_up_topology();
    if (!tree_) return Bootstrap::all_reduce_max(mine);
    std::vector<double> values(mine.begin(), mine.end());
    over_tree([&] { tree_->all_reduce_max(values, Deadline::after(timeout_s_)); });
    return values;
  }

  // Before the first collective, the layout rank 0 was asked for.
  std::string layout() const override {
    if (!topology_set_) return asked_topology_ == "tree" ? "tree" : "star";
    return tree_ ? "tree" : "star";
  }

 protected:
  // Every rank sends its block to rank 0 and nothing comes back: N x block bytes in, none
  // out. A root other than 0 (which has no connection but rank 0's) gets the blocks from
  // rank 0 afterwards: their lengths, then their bytes.
  std::vector<std::vector<uint8_t>> gather_blocks(std::span<const uint8_t> in, int root) override {
    set_up_topology();
    auto deadline = Deadline::after(timeout_s_);
    std::vector<std::vector<uint8_t>> out;
    if (rank_ == 0) {
      out.resize(size_);
      out[0].assign(in.begin(), in.end());
      from_every_rank("gather", deadline, [&](int r, const std::string& peer) {
        const Header h = recv_header(peers_[r].get(), deadline, peer);
        if (h.length > kMaxGatherBlock) {
          throw BootstrapError(
              fmt::format("bootstrap gather: rank {} announced a block of {} bytes, over the {} a "
                          "gather takes (a corrupt frame, or ranks calling different collectives)",
                          r, h.length, kMaxGatherBlock));
        }
        if (Verdict v = check_header(h, token_, Kind::block, h.length); !v)
          throw BootstrapError(fmt::format("bootstrap gather: rank {} sent {}", r, v.why));
        out[r].resize(h.length);
        recv_all(peers_[r].get(), out[r].data(), out[r].size(), deadline, peer);
      });
      if (root != 0) forward_blocks(out, root, deadline);
      return root == 0 ? std::move(out) : std::vector<std::vector<uint8_t>>{};
    }
    naming_suspects([&] {
      send_frame(root_.get(), Kind::block, token_, std::as_bytes(in), deadline, kRootPeer);
      if (rank_ == root) out = receive_forwarded(deadline);
    });
    return out;
  }

 private:
  static constexpr const char* kRootPeer = "rank 0 (bootstrap root)";

  // Rank 0: calls read(r, peer) for every other rank as its connection becomes readable,
  // in whatever order they are ready, so a timeout names every rank still missing rather
  // than only the first.
  template <class Read>
  void from_every_rank(const char* what, const Deadline& deadline, Read read) {
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
      if (ms <= 0) throw TimeoutError(missing_ranks_message(what, done, timeout_s_));
      int rc = ::poll(fds.data(), fds.size(), std::min(ms, 1000));
      if (rc < 0 && errno != EINTR) throw BootstrapError(fmt::format("poll failed: {}", std::strerror(errno)));
      for (size_t i = 0; rc > 0 && i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        read(who[i], fmt::format("rank {}", who[i]));
        done[who[i]] = true;
        --remaining;
      }
    }
  }

  // A non-root rank: one result frame of exactly out.size() bytes from rank 0.
  void recv_result(std::span<std::byte> out, const Deadline& deadline, const char* what) {
    if (Verdict v = rendezvous::recv_frame(root_.get(), Kind::result, token_, out, deadline, kRootPeer); !v)
      throw BootstrapError(fmt::format("bootstrap {}: rank 0 sent {}", what, v.why));
  }

  // Rank 0 to a gather's root other than itself: every block's length, then the blocks.
  void forward_blocks(const std::vector<std::vector<uint8_t>>& blocks, int root, const Deadline& deadline) {
    std::vector<uint64_t> lengths;
    std::vector<uint8_t> all;
    for (const auto& b : blocks) {
      lengths.push_back(b.size());
      all.insert(all.end(), b.begin(), b.end());
    }
    const std::string peer = fmt::format("rank {} (the gather's root)", root);
    send_frame(peers_[root].get(), Kind::result, token_, std::as_bytes(std::span(lengths)), deadline, peer);
    send_frame(peers_[root].get(), Kind::result, token_, std::as_bytes(std::span(all)), deadline, peer);
  }

  std::vector<std::vector<uint8_t>> receive_forwarded(const Deadline& deadline) {
    std::vector<uint64_t> lengths(size_);
    recv_result(std::as_writable_bytes(std::span(lengths)), deadline, "gather");
    uint64_t total = 0;
    for (const uint64_t n : lengths) {
      if (n > kMaxGatherBlock)
        throw BootstrapError(fmt::format("bootstrap gather: rank 0 forwarded a {}-byte block", n));
      total += n;
    }
    std::vector<uint8_t> all(total);
    recv_result(std::as_writable_bytes(std::span(all)), deadline, "gather");
    std::vector<std::vector<uint8_t>> out(size_);
    uint64_t at = 0;
    for (int r = 0; r < size_; ++r) {
      out[r].assign(all.begin() + at, all.begin() + at + lengths[r]);
      at += lengths[r];
    }
    return out;
  }

  // Runs a non-root rank's side of a collective; a timeout names the ranks the liveness
  // probe finds stopped or dead, since rank 0 is usually alive and waiting itself for them.
  template <class Step>
  void naming_suspects(Step step) {
    try {
      step();
    } catch (const TimeoutError& e) {
      const std::string culprits = suspects();
      if (culprits.empty()) throw;
      throw TimeoutError(fmt::format("rank {}: {}; {}", rank_, culprits, e.what()));
    }
  }

  // Runs a collective over the tree. A wait that timed out, or a link that closed, names
  // only a neighbour, which may be a whole subtree away from the rank that stopped or
  // died: what the liveness probe finds follows the error.
  template <class Step>
  void over_tree(Step step) {
    try {
      step();
    } catch (const TimeoutError& e) {
      const std::string culprits = suspects();
      if (culprits.empty()) throw;
      throw TimeoutError(fmt::format("{}; {}", e.what(), culprits));
    } catch (const BootstrapError& e) {
      const std::string culprits = suspects();
      if (culprits.empty()) throw;
      throw BootstrapError(fmt::format("rank {}: {}; {}", rank_, e.what(), culprits));
    }
  }

  // Sends this rank's hello and reads rank 0's answer: true when admitted, false when the
  // connection was closed before an answer (rank 0 sheds its oldest waiting connection
  // under a flood: try again). A refusal is a mistake in the launch: UsageError.
  bool join(int fd, const Deadline& deadline, const std::string& root, std::string& error) {
    const std::string peer = "rank 0 (bootstrap root)";
    try {
      send_frame(fd, Kind::hello, token_, encode(Hello{rank_, size_}), deadline, peer);
    } catch (const BootstrapError& e) {
      error = e.what();
      return false;
    }
    std::array<std::byte, kHeaderBytes> bytes{};
    try {
      if (!recv_exact(fd, bytes.data(), bytes.size(), deadline, peer)) {
        error = "rank 0 closed the connection before answering this rank's hello";
        return false;
      }
    } catch (const TimeoutError&) {
      throw TimeoutError(
          fmt::format("rank {}: something accepted the connection at RAILBENCH_ROOT={} but sent no railbench "
                      "welcome within {:.0f} s: is another program listening on that port?",
                      rank_, root, timeout_s_));
    }
    const Header h = decode_header(bytes);
    if (Verdict v = check_prefix(bytes); !v) {
      throw UsageError(fmt::format("rank {}: what answers at RAILBENCH_ROOT={} is {}: pick a port nothing else uses",
                                   rank_, root, v.why));
    }
    if (h.version != kVersion) {
      throw UsageError(
          fmt::format("rank {}: rank 0 at RAILBENCH_ROOT={} speaks rendezvous protocol version {}, this "
                      "railbench {}: run the same railbench build on every rank",
                      rank_, root, h.version, kVersion));
    }
    if (h.kind == static_cast<uint16_t>(Kind::refused) && h.length == kRefusalBytes) {
      std::array<std::byte, kRefusalBytes> code{};
      recv_all(fd, code.data(), code.size(), deadline, peer);
      throw UsageError(fmt::format("rank {}: rank 0 at RAILBENCH_ROOT={} refused this rank: {}", rank_, root,
                                   describe(static_cast<Refusal>(decode_refusal(code)))));
    }
    if (Verdict v = check_header(h, token_, Kind::welcome, 0); !v) {
      throw BootstrapError(
          fmt::format("rank {}: rank 0 at RAILBENCH_ROOT={} answered the hello with {}", rank_, root, v.why));
    }
    return true;
  }

  void connect_to_root(const std::string& host, const std::string& port, const std::string& root) {
    auto deadline = Deadline::after(timeout_s_);
    std::string last_error = "no address";
    // Rank 0 may start later than we do: retry until the deadline.
    while (!deadline.passed()) {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      hints.ai_flags = AI_NUMERICSERV;
      addrinfo* res = nullptr;
      if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
        throw UsageError(fmt::format("RAILBENCH_ROOT='{}': cannot resolve '{}': {}", root, host, gai_strerror(rc)));
      }
      std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);
      for (auto* ai = res; ai && !deadline.passed(); ai = ai->ai_next) {
        Fd fd = connect_before(ai, deadline, kConnectAttemptSeconds, last_error);
        if (fd && join(fd.get(), deadline, root, last_error)) {
          root_ = std::move(fd);
          return;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw TimeoutError(
        fmt::format("rank {}: could not reach rank 0 at RAILBENCH_ROOT={} within {:.0f} s ({}): is "
                    "rank 0 running and the port reachable?",
                    rank_, root, timeout_s_, last_error));
  }

  // Rank 0 picks the layout and tells every rank (a `topology` frame), so ranks launched
  // with different settings cannot disagree. For the tree, every parent other than rank 0
  // listens and rank 0, having gathered those addresses, hands each rank its parent's.
  // Done in the first collective, not the constructor: every rank calls that one, and by
  // then its owner has set the liveness probe that names a rank that never came.
  void set_up_topology() {
    using rendezvous::Topology;
    if (topology_set_) return;
    topology_set_ = true;
    const std::string& asked = asked_topology_;
    auto deadline = Deadline::after(timeout_s_);
    Topology topology = Topology::star;
    if (rank_ == 0) {
      const bool tree = asked == "tree" || (asked != "star" && size_ >= rendezvous::kTreeFromRanks);
      topology = tree && size_ > 2 ? Topology::tree : Topology::star;
      const std::byte wire{static_cast<uint8_t>(topology)};
      for (int r = 1; r < size_; ++r)
        send_frame(peers_[r].get(), Kind::topology, token_, std::span(&wire, 1), deadline, fmt::format("rank {}", r));
    } else {
      std::byte wire{};
      size_t got = 0;
      naming_suspects([&] { got = recv_from_root(Kind::topology, std::span(&wire, 1), deadline, "topology"); });
      topology = static_cast<Topology>(wire);
      if (got != 1 || (topology != Topology::star && topology != Topology::tree))
        throw BootstrapError(fmt::format("rank {}: rank 0 named bootstrap topology {}, not star or tree", rank_,
                                         static_cast<int>(wire)));
    }
    if (topology == Topology::tree) join_tree(deadline);
  }

  void join_tree(const Deadline& deadline) {
    using namespace rendezvous;
    const std::vector<int> children = tree_children(rank_, size_);
    if (rank_ == 0) {
      const auto addresses = gather_blocks({}, 0);
      for (int r = 1; r < size_; ++r) {
        const int parent = tree_parent(r);
        const auto& address = parent == 0 ? std::vector<uint8_t>{} : addresses[parent];
        send_frame(peers_[r].get(), Kind::parent, token_, std::as_bytes(std::span(address)), deadline,
                   fmt::format("rank {}", r));
      }
      std::vector<int> fds;
      for (int c : children) fds.push_back(peers_[c].get());
      tree_.emplace(rank_, size_, token_, -1, std::move(fds), std::vector<Fd>{});
    } else {
      std::string address;
      Fd listener = children.empty() ? Fd{} : listen_for_children(root_.get(), address);
      gather_blocks({reinterpret_cast<const uint8_t*>(address.data()), address.size()}, 0);
      std::vector<std::byte> parent_address(kMaxAddressBytes);
      naming_suspects([&] { parent_address.resize(recv_from_root(Kind::parent, parent_address, deadline, "tree")); });
      std::vector<Fd> owned;
      int parent_fd = root_.get();
      if (tree_parent(rank_) != 0) {
        owned.push_back(connect_to_parent({reinterpret_cast<const char*>(parent_address.data()), parent_address.size()},
                                          rank_, size_, token_, deadline));
        parent_fd = owned.back().get();
      }
      std::vector<Fd> links = accept_children(listener.get(), rank_, size_, children, token_, deadline);
      if (tree_parent(rank_) != 0) await_welcome(parent_fd, rank_, token_, deadline);
      std::vector<int> fds;
      for (auto& fd : links) {
        fds.push_back(fd.get());
        owned.push_back(std::move(fd));
      }
      tree_.emplace(rank_, size_, token_, parent_fd, std::move(fds), std::move(owned));
    }
  }

  // A non-root rank: one frame of `kind` from rank 0 of at most out.size() bytes; returns
  // its length.
  size_t recv_from_root(Kind kind, std::span<std::byte> out, const Deadline& deadline, const char* what) {
    const Header h = recv_header(root_.get(), deadline, kRootPeer);
    const uint64_t length = std::min<uint64_t>(h.length, out.size());
    if (Verdict v = check_header(h, token_, kind, length); !v)
      throw BootstrapError(fmt::format("bootstrap {}: rank 0 sent {}", what, v.why));
    recv_all(root_.get(), out.data(), length, deadline, kRootPeer);
    return length;
  }

  // An "ip:port" a parent listens on: far longer than any IPv6 text.
  static constexpr size_t kMaxAddressBytes = 128;

  int rank_;
  int size_;
  uint64_t token_;                             // digest of the job token, in every frame
  Fd root_;                                    // non-root ranks
  std::vector<Fd> peers_;                      // rank 0: one connection per other rank
  std::optional<rendezvous::TreeLinks> tree_;  // the collectives' links when rank 0 chose the tree
  std::string asked_topology_;                 // RAILBENCH_BOOTSTRAP_TOPOLOGY (rank 0's counts)
  bool topology_set_ = false;
};

}  // namespace

std::unique_ptr<Bootstrap> make_tcp_bootstrap(int rank, int size, const TcpRendezvous& where, double timeout_s) {
  return std::make_unique<TcpBootstrap>(rank, size, where, timeout_s);
}

}  // namespace railbench
