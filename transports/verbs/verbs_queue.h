// Internal to transports/verbs: the bookkeeping of one queue pair's send or receive
// queue, with no verbs calls so the selective-signaling rules are unit-tested.
//
// Selective signaling: a send queue asks the NIC for a completion (IBV_SEND_SIGNALED)
// only on some work requests. A reliable-connected QP completes its send queue in post
// order, so when a signaled WR completes, every unsignaled WR posted before it has
// completed too: reap() marks them done and pop() hands out one Completion per caller
// WR, in post order, each with its own wr_id. A WR is signaled when
//   - at most one WR is in flight: a lone ping-pong message completes at once, and so
//     does the next one when the peer's reply overtook the last one's completion (the
//     CQE comes with the ACK, the reply may come first). Unsignaled, that message would
//     need a flush write of its own: a second packet and its ACK on every iteration,
//     which soft-RoCE's ping-pong measured (0.5 flushes per iteration, with
//     scripts/bench/profile-rxe-lat.sh). A burst pays one CQE more: its first two WRs
//     are signaled,
//   - `signal_every` WRs have gone unsignaled, or
//   - it takes the last caller slot (a full queue always ends in a signaled WR).
// Unsignaled WRs at the tail of a burst ("uncovered") would otherwise never complete:
// the transport then posts a signaled zero-length write of its own (commit_flush(), an
// internal record pop() skips). One slot is kept free for it.
//
// Batches (post_write_batch): n WRs chained into one ibv_post_send, only the last
// signaled. The first n - 1 are recorded as batch parts (internal: pop() skips them,
// so the batch hands out one Completion, the last WR's, with the caller's wr_id and
// the batch's bytes); they hold their send-queue slots until the last one's CQE covers
// them, which can_post_batch() counts, flush slot included.
//
// Errors: the first failed WR completes with an error even when unsignaled, and the
// ones before it succeeded (in-order). After that the QP is in the error state: every
// later CQE is a flush, and fail_rest() fails whatever never got one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "lib/transport/transport.h"

namespace railbench::verbs {

struct WorkRecord {
  uint64_t wr_id = 0;
  uint64_t bytes = 0;  // posted length; a receive's delivered length once done
  OpKind op = OpKind::send;
  Status status = Status::ok;
  bool internal = false;  // completes silently: a flush write of the transport's own, or a batch part
  bool signaled = false;
  bool batch_part = false;  // one of a batch's first n - 1 writes (wr_id: the batch's)
  uint32_t wrs = 1;         // caller WRs this record's Completion stands for: a batch's n
};

class WorkQueue {
 public:
  // The wr_id on the wire carries a sequence number of this many bits.
  static constexpr int kSeqBits = 40;
  static constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;

  WorkQueue() = default;
  // `depth`: what the QP granted (>= 2 for a send queue). `signal_every` 1 signals all.
  WorkQueue(uint32_t depth, uint32_t signal_every, bool send_queue)
      : ring_(depth), depth_(depth), signal_every_(std::max<uint32_t>(signal_every, 1)), send_queue_(send_queue) {}

  uint32_t depth() const { return depth_; }
  uint64_t next_seq() const { return tail_; }
  uint64_t in_flight() const { return tail_ - done_; }
  bool broken() const { return broken_; }

  // Room for one more caller WR; a send queue keeps one slot for a flush.
  bool can_post() const { return tail_ - head_ + (send_queue_ ? 1 : 0) < depth_; }

  // Room for a batch of n WRs, with the flush slot kept.
  bool can_post_batch(uint64_t n) const { return tail_ - head_ + n + 1 <= depth_; }

  // Whether the next caller WR must be signaled (see the file comment).
  bool next_signaled() const {
    if (!send_queue_ || signal_every_ <= 1) return true;
    return tail_ - done_ <= 1 || uncovered_ + 1 >= signal_every_ || tail_ - head_ + 2 >= depth_;
  }

  // Records a caller WR the NIC accepted, as sequence number next_seq().
  // `wrs`: the WRs of the batch this one ends (1 for a lone WR).
  void commit(uint64_t wr_id, OpKind op, uint64_t bytes, bool signaled, uint32_t wrs = 1) {
    ring_[tail_ % depth_] = WorkRecord{wr_id, bytes, op, Status::ok, false, signaled, false, wrs};
    ++tail_;
    uncovered_ = signaled ? 0 : uncovered_ + 1;
  }

  // Records one of a batch's unsignaled first WRs (sequence number next_seq()); the
  // batch's last WR is then commit()ted, signaled, with the batch's wr_id and bytes.
  void commit_batch_part(uint64_t wr_id, uint64_t bytes) {
    ring_[tail_ % depth_] = WorkRecord{wr_id, bytes, OpKind::write, Status::ok, true, false, true};
    ++tail_;
    ++uncovered_;
  }

  // Unsignaled WRs at the tail wait for a flush.
  bool needs_flush() const { return uncovered_ > 0 && !broken_; }
  bool can_flush() const { return tail_ - head_ < depth_; }
  // Records the transport's own signaled flush WR (sequence number next_seq()).
  void commit_flush() {
    ring_[tail_ % depth_] = WorkRecord{0, 0, OpKind::write, Status::ok, true, true};
    ++tail_;
    uncovered_ = 0;
  }

  // The full sequence number of a CQE's 40-bit one: the one in flight.
  uint64_t expand(uint64_t seq40) const {
    uint64_t seq = (done_ & ~kSeqMask) | (seq40 & kSeqMask);
    if (seq < done_ && done_ - seq > (kSeqMask >> 1)) seq += kSeqMask + 1;
    return seq;
  }

  struct Reaped {
    uint64_t entries = 0;                // WRs completed by this CQE (CQ slots it frees)
    const WorkRecord* record = nullptr;  // the WR the CQE names; null when stale
  };

  // A CQE for `seq`: success, or failure (`flush` when the QP was already in error).
  // A stale CQE (for a WR fail_rest() already failed) reaps nothing.
  Reaped reap(uint64_t seq, bool ok, uint32_t byte_len) {
    if (seq < done_ || seq >= tail_) return {};
    const uint64_t first = done_;
    for (uint64_t s = done_; s < seq; ++s) ring_[s % depth_].status = broken_ ? Status::error : Status::ok;
    WorkRecord& r = ring_[seq % depth_];
    r.status = ok && !broken_ ? Status::ok : Status::error;
    if (!send_queue_ && ok) r.bytes = byte_len;
    if (!ok) {
      broken_ = true;
      uncovered_ = 0;
    }
    done_ = seq + 1;
    return {done_ - first, &r};
  }

  // The QP is in error: fails every WR still without a CQE; returns how many.
  uint64_t fail_rest() {
    const uint64_t n = tail_ - done_;
    for (uint64_t s = done_; s < tail_; ++s) ring_[s % depth_].status = Status::error;
    done_ = tail_;
    broken_ = true;
    uncovered_ = 0;
    return n;
  }

  // Finished WRs not yet handed out (internal ones included: pop skips them).
  bool has_ready() const { return head_ < done_; }
  // The next finished caller WR in post order, or null. Valid until the next commit.
  const WorkRecord* pop() {
    while (head_ < done_) {
      const WorkRecord& r = ring_[head_ % depth_];
      ++head_;
      if (!r.internal) return &r;
    }
    return nullptr;
  }

 private:
  std::vector<WorkRecord> ring_;
  uint32_t depth_ = 0;
  uint32_t signal_every_ = 1;
  bool send_queue_ = false;
  uint64_t head_ = 0;       // oldest WR not yet handed out; its slot is still taken
  uint64_t done_ = 0;       // every WR before this one has completed
  uint64_t tail_ = 0;       // the next WR's sequence number
  uint32_t uncovered_ = 0;  // unsignaled WRs after the last signaled one
  bool broken_ = false;
};

}  // namespace railbench::verbs
