// The TCP bootstrap's binomial tree (lib/runtime/bootstrap_tcp.cc): for worlds where the
// star through rank 0 costs too much, all-gathers, barriers and maxima travel up a tree
// of the ranks and back down, so rank 0 sends the world's data to log2(N) children, not to
// N-1 ranks (figures: scripts/bench/README.md, "The bootstrap's star against its tree").
// Rank r's parent is r with its lowest set bit cleared; its subtree is the contiguous
// ranks [r, r + subtree_size(r)), so a subtree's blocks travel as one piece.
//
// Rank 0's children reach it over their rendezvous connections; every other parent
// listens on an ephemeral port of the address its own rendezvous connection leaves from,
// and its children connect there with a hello that carries the job token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "lib/core/clock.h"
#include "lib/runtime/rendezvous_socket.h"

namespace railbench::rendezvous {

// Which layout the bootstrap's collectives take (RAILBENCH_BOOTSTRAP_TOPOLOGY).
enum class Topology : uint8_t { star = 0, tree = 1 };

// Worlds of this many ranks or more take the tree unless told otherwise: below it the
// star's N x N bytes are small and its one hop is the quickest.
inline constexpr int kTreeFromRanks = 64;

int tree_parent(int rank);                           // -1 for rank 0
std::vector<int> tree_children(int rank, int size);  // largest subtree first
int tree_subtree_size(int rank, int size);

// This rank's links in the tree and the collectives over them. `parent_fd` and
// `child_fds` may be connections owned elsewhere (rank 0's rendezvous connections);
// `owned` are the ones the tree opened, closed with it.
class TreeLinks {
 public:
  TreeLinks(int rank, int size, uint64_t token, int parent_fd, std::vector<int> child_fds, std::vector<Fd> owned);

  // Every rank's block of in.size() bytes, in rank order, on every rank.
  void all_gather(std::span<const std::byte> in, std::span<std::byte> out, const Deadline& deadline);
  // The elementwise maximum of every rank's values (the same count on every rank).
  void all_reduce_max(std::span<double> values, const Deadline& deadline);

 private:
  // Receives one frame of kind `gather` from every child, in whatever order they are
  // ready; `into(child)` says where child's `length(child)` bytes go.
  void from_children(const char* what, const Deadline& deadline, const std::function<size_t(int)>& length,
                     const std::function<std::byte*(int)>& into);
  // Sends `up` to the parent and receives `down` (the whole result) from it.
  void via_parent(const char* what, std::span<const std::byte> up, std::span<std::byte> down, const Deadline& deadline);
  void to_children(std::span<const std::byte> down, const Deadline& deadline);
  std::string child_name(int child) const;
  std::string parent_name() const;
  [[noreturn]] void timed_out(const char* what, const std::string& waiting_for) const;

  int rank_;
  int size_;
  uint64_t token_;
  int parent_fd_;
  std::vector<int> children_;  // ranks, as tree_children
  std::vector<int> child_fds_;
  std::vector<Fd> owned_;
};

// Setup, in the order the bootstrap runs it on a rank other than 0 whose tree parent is
// not rank 0: a listener for its children (none when it has none), the parent's address
// from rank 0, then connect_to_parent and accept_children.

// Listens on an ephemeral port of the address `root_fd` leaves from; returns the listener
// and sets `address` to "ip:port" (what rank 0 hands the children).
Fd listen_for_children(int root_fd, std::string& address);

// Connects to the parent at `address` and sends this rank's hello; the welcome is read by
// await_welcome once this rank has admitted its own children (so no rank waits on a
// parent that is itself still waiting).
Fd connect_to_parent(const std::string& address, int rank, int size, uint64_t token, const Deadline& deadline);
void await_welcome(int fd, int rank, uint64_t token, const Deadline& deadline);

// Admits exactly `children` (ranks) on `listener`, each with a hello carrying the job
// token and its rank; anything else is closed. Returns the connections in `children`'s order.
std::vector<Fd> accept_children(int listener, int rank, int size, const std::vector<int>& children, uint64_t token,
                                const Deadline& deadline);

}  // namespace railbench::rendezvous
