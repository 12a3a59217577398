// The loopback fabric's shared state: wires, receive queues, completion queues and the
// registry of regions, all behind one mutex (test code: simple beats fast). Included
// only by the loopback's own sources.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/core/clock.h"
#include "tests/support/loopback_transport.h"

namespace railbench::testing {

namespace loopback {

struct Region {
  int rank = 0;
  std::byte* base = nullptr;
  size_t length = 0;
};

// One posted operation on its way. Regions are named by key, not pointer, so an
// operation whose buffer was deregistered while it was held fails instead of
// touching freed memory.
struct Op {
  PostKind kind = PostKind::send;
  int src = 0, dst = 0, rail = 0;
  uint64_t wr_id = 0;
  uint64_t local_key = 0;
  size_t local_offset = 0;
  size_t length = 0;
  uint64_t remote_key = 0;
  uint64_t remote_addr = 0;
  uint32_t imm = 0;
  Fault fault = Fault::none;
  Hold hold = Hold::none;
  Clock::time_point release_at{};
  uint64_t imm_mark = 0;  // Hold::overtake: notifications the target had seen on other rails at post time
  size_t rule = 0;        // the rule that picked it, for messages
  // A batch's writes (post_write_batch): all but the last are `silent` (no completion of
  // their own; a failure is kept for the last), the last reports `batch_bytes`.
  bool silent = false;
  bool batch_last = false;
  size_t batch_bytes = 0;
};

struct PostedRecv {
  uint64_t wr_id = 0;
  uint64_t key = 0;
  size_t offset = 0;
  size_t length = 0;
};

struct RuleState {
  FaultRule rule;
  uint64_t seen = 0;
  uint64_t fired = 0;
};

// A post answered Status::retry, expected back with the same target.
struct PendingRetry {
  bool active = false;
  PostKind kind = PostKind::send;
  int dst = 0, rail = 0, left = 0;
};

// What the rules decided for one post.
struct Decision {
  Status status = Status::ok;
  Fault fault = Fault::none;
  Hold hold = Hold::none;
  std::chrono::microseconds delay{0};
  size_t rule = 0;
};

}  // namespace loopback

struct LoopbackFabric::Impl {
  Impl(int world_size, const LoopbackOptions& options);

  // Everything below is called with `mu` held.
  loopback::Decision decide(PostKind kind, int src, int dst, int rail);
  // Delivers now when nothing is queued on the wire and nothing holds `op`.
  void enqueue(loopback::Op op);
  // Moves held operations whose time has come, in wire order.
  void pump();
  void deliver(const loopback::Op& op);
  // The region `key` names, when `rank` registered it; else nullptr with the reason.
  const loopback::Region* find_region(uint64_t key, int rank, std::string& why) const;
  // A region of `rank` covering [addr, addr + length), or nullptr with the reason.
  const loopback::Region* resolve(uint64_t key, int rank, uint64_t addr, size_t length, std::string& why) const;
  // Completes `op` at its initiator with Status::error and `why` as last_error().
  void fail(const loopback::Op& op, const std::string& why);
  // Copies a message into a posted receive, or fails the receive when it is too small.
  void land_message(int dst, int src, int rail, const loopback::PostedRecv& r, const std::byte* data, size_t length);
  void close(int rank);

  size_t wire(int src, int dst, int rail) const {
    return (static_cast<size_t>(src) * static_cast<size_t>(n) + static_cast<size_t>(dst)) *
               static_cast<size_t>(options.rails) +
           static_cast<size_t>(rail);
  }
  uint64_t imms_on_other_rails(int dst, int rail) const;

  int n;
  LoopbackOptions options;
  Capabilities caps;
  mutable std::mutex mu;
  std::unordered_map<uint64_t, loopback::Region> regions;
  uint64_t next_key = 1;
  std::vector<std::deque<loopback::Op>> wires;                 // [src][dst][rail]
  std::vector<std::deque<loopback::PostedRecv>> recvs;         // [dst][src][rail]
  std::vector<std::deque<std::vector<std::byte>>> unexpected;  // [dst][src][rail]
  std::vector<std::deque<Completion>> cqs;                     // [rank]
  std::vector<std::string> last_error;                         // [rank]
  std::vector<uint64_t> imms_seen;              // [dst * rails + rail]: notifications the target has polled
  std::vector<char> connected;                  // wire(rank, peer, rail)
  std::vector<char> open;                       // [rank]
  std::vector<loopback::PendingRetry> pending;  // [rank]
  std::vector<loopback::RuleState> rules;
  size_t queued = 0;
  // Batches one of whose silent writes failed, by (initiator, wr_id): the reason, which
  // the batch's last write then completes with.
  std::map<std::pair<int, uint64_t>, std::string> failed_batches;
  uint64_t overtaken = 0;
  uint64_t retries = 0;
};

}  // namespace railbench::testing
