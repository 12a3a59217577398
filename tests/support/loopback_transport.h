// An in-memory Transport for algorithm tests: ranks are threads of one process, and
// all of them share one LoopbackFabric. Every (initiator, target, rail) is a FIFO
// wire; an operation that nothing holds is delivered when it is posted (memcpy into
// the target's registered memory, or into its matching receive), and completions come
// back only through poll(), as from a real provider. Remote keys carry the real
// address, and every access is checked against the target's registered regions, so an
// algorithm that writes out of bounds or with another rank's key gets an error
// completion instead of corrupting memory.
//
// Fault rules pick the n-th post of a kind by (rank, peer, rail) and make it fail, drop
// or answer retry, or hold it back: for a while, until released, or until the target
// has seen a write-with-imm from another rail (the cross-rail overtaking real
// providers rarely show). A held operation holds up everything behind
// it on its wire, since a wire is FIFO; held operations move when any rank polls.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/transport/transport.h"
#include "tests/support/net.h"

namespace railbench::testing {

// The posts a fault rule can pick (OpKind has no write-with-imm of its own).
enum class PostKind : uint8_t { send, recv, write, write_imm, read };
const char* to_string(PostKind kind);

// What happens to the picked operation.
enum class Fault : uint8_t {
  none,    // nothing: the rule only holds it (see Hold)
  drop,    // vanishes: no data moves and no completion appears anywhere
  fail,    // completes with Status::error at the initiator, last_error() names the rule
  reject,  // the post itself answers Status::error
  retry,   // the post answers Status::retry `retries` times before it goes through
};

// When the picked operation (and what queues behind it on its wire) is delivered.
enum class Hold : uint8_t {
  none,
  delay,     // `delay` after it was posted
  stall,     // not until LoopbackFabric::release() (never, without one)
  overtake,  // once the target has polled a newer write-with-imm from another rail
};

struct FaultRule {
  PostKind op = PostKind::send;
  int rank = -1;     // initiator; -1 for any
  int peer = -1;     // -1 for any
  int rail = -1;     // -1 for any
  uint64_t nth = 1;  // the n-th matching post, from 1; 0 for every matching post
  Fault fault = Fault::none;
  Hold hold = Hold::none;
  int retries = 1;  // Fault::retry; pin `rank` too, or another rank's posts use them up
  std::chrono::microseconds delay{0};
};

struct LoopbackOptions {
  int rails = 1;
  bool ordered_writes = true;  // caps().ordered_writes: algorithms take another path without
  size_t max_msg_size = size_t{1} << 30;
  // caps().max_outstanding; when set, a receive posted while this many wait unmatched
  // on its (peer, rail) answers retry, as a real provider's full receive queue does.
  size_t max_outstanding = 0;
  bool cpu_driven_nic = false;  // caps().cpu_driven_nic: Progress sleeps through long waits
  size_t max_batch = 64;        // caps().max_batch: writes one post_write_batch may hold
};

class LoopbackFabric {
 public:
  LoopbackFabric(int world_size, const LoopbackOptions& options);
  ~LoopbackFabric();
  LoopbackFabric(const LoopbackFabric&) = delete;
  LoopbackFabric& operator=(const LoopbackFabric&) = delete;

  // Adds a rule (before or while ranks run); returns its index for fired(). Throws
  // std::invalid_argument for combinations that mean nothing (a held receive).
  size_t inject(const FaultRule& rule);
  // How many posts rule `index` has picked.
  uint64_t fired(size_t index) const;
  // Operations that a Hold::overtake rule held and were then overtaken as asked.
  uint64_t overtaken() const;
  // Times a post answered Status::retry.
  uint64_t retries_answered() const;
  // Operations queued on wires right now (held, or behind a held one).
  size_t queued() const;
  // Sends that arrived before their receive and still wait for it.
  size_t unexpected() const;
  // Lets every stalled operation go; they are delivered at the next poll.
  void release();

  int world_size() const;
  const LoopbackOptions& options() const;

  struct Impl;  // defined in loopback_transport.cc
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Rank `rank`'s transport on `fabric`; connect it (connect_all) before posting.
std::unique_ptr<Transport> make_loopback_transport(std::shared_ptr<LoopbackFabric> fabric, int rank);

// A fresh fabric per world (options.rails is the world's), with `rules` injected, every
// rank's transport connected over the bootstrap.
Net loopback_net(LoopbackOptions options = {}, std::vector<FaultRule> rules = {}, std::string name = "loopback");
// One world on `fabric`, for tests that inspect it afterwards (fired(), overtaken()); the
// world's size and rails must be the fabric's.
Net fabric_net(std::shared_ptr<LoopbackFabric> fabric, std::string name = "loopback");

}  // namespace railbench::testing
