// Who did what during each collective op, for straggler attribution (stragglers.h):
// OpRecorder keeps, per op this rank took part in, when the rank arrived (was ready),
// when the op returned, the longest stretch it went without polling (a stopped or
// descheduled host), and every send and receive it posted inside the op with peer,
// rail, bytes, post time and completion time. RecordingTransport is the Transport
// decorator that feeds it, like TimelineTransport: post_send/post_recv and poll() see
// every two-sided message whoever posts it. It knows ops, not commands: the caller
// brackets each op with begin_op (at arrival) and end_op.
//
// Times are ns on this rank's monotonic clock (CLOCK_MONOTONIC, lib/core/clock.h); clock
// offsets between ranks are estimated apart (clock_offsets.h). Memory is bounded and
// taken up front: the last `max_ops` ops and `max_msgs` messages are kept (two rings);
// an op whose messages were overwritten is dropped whole and counted in dropped_ops.
// One-sided writes are recorded on the writer alone (post to completion: the target
// posts nothing to time); reads are not recorded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/transport/forwarding_transport.h"
#include "lib/transport/transport.h"

namespace railbench {

// Which op: the caller's iteration, the op's index inside it, and a short label for its
// group or kind ("allreduce", "tp.ag"): the same key on every rank names the same op.
// An op whose ranks arrive at different times by design (a pipeline stage waiting for
// its neighbour's compute): its arrivals are not blamed; stalls and links still are.
inline constexpr uint32_t kOpArrivalsScheduled = 1;

struct OpKey {
  uint32_t iteration = 0;
  uint32_t index = 0;
  char label[24] = {};
  uint32_t flags = 0;  // kOpArrivalsScheduled
  std::string_view name() const;
  bool operator==(const OpKey& o) const;
};
OpKey make_op_key(uint32_t iteration, uint32_t index, std::string_view label, uint32_t flags = 0);

// One op on one rank. Messages are [first_msg, first_msg + msgs) of its RankOps.
struct OpRecord {
  OpKey key;
  int64_t arrive_ns = 0;      // begin_op: the rank was ready
  int64_t end_ns = 0;         // end_op: the op returned
  int64_t stall_from_ns = 0;  // the longest gap between two polls inside the op
  int64_t stall_ns = 0;       //   and its length
  uint32_t first_msg = 0;
  uint32_t msgs = 0;
};

enum class MsgDir : uint8_t { send = 0, recv = 1, write = 2 };

struct MsgRecord {
  int32_t peer = -1;
  int32_t rail = 0;
  uint64_t bytes = 0;
  int64_t post_ns = 0;
  int64_t done_ns = 0;  // 0: its completion was not seen (it is then left out of the analysis)
  MsgDir dir = MsgDir::send;
  uint8_t pad[7] = {};
};

// What one rank recorded, as gathered to rank 0.
struct RankOps {
  std::vector<OpRecord> ops;
  std::vector<MsgRecord> msgs;
  uint64_t dropped_ops = 0;  // ops that did not fit the caps (the oldest are dropped)
};
std::vector<uint8_t> serialize(const RankOps& r);
RankOps deserialize_rank_ops(std::span<const uint8_t> bytes);  // throws Error on a short or foreign blob

// Ns on the clock the recorder uses.
int64_t monotonic_ns() noexcept;

class OpRecorder {
 public:
  // Reserves room for `max_ops` ops and `max_msgs` messages (at least 1 each).
  OpRecorder(size_t max_ops, size_t max_msgs);

  // The rank is ready for op `key` now / the op returned now. Ops do not nest: a
  // begin_op while one is open ends that one first.
  void begin_op(const OpKey& key) noexcept;
  void end_op() noexcept;
  bool in_op() const { return open_; }

  // From RecordingTransport (or a transport of the caller's own): a send or receive
  // posted now, and a batch of completions polled at `now_ns`.
  void on_post(MsgDir dir, int peer, int rail, size_t bytes, uint64_t wr_id) noexcept;
  void on_poll(std::span<const Completion> done, int64_t now_ns) noexcept;

  // The kept ops and their messages (message indices rebased); clears the recorder.
  RankOps take();
  size_t max_ops() const { return ops_.size(); }
  size_t max_msgs() const { return msgs_.size(); }

 private:
  struct Pending {
    uint64_t wr_id;
    uint64_t msg_seq;
  };
  std::vector<OpRecord> ops_;           // ring: op sequence s at s % size
  std::vector<MsgRecord> msgs_;         // ring: message sequence s at s % size
  std::vector<uint64_t> op_first_seq_;  // per op slot: its first message's sequence number
  std::vector<Pending> pending_;        // posted, not completed (bounded: a fixed capacity)
  size_t pending_cap_ = 0;
  uint64_t op_seq_ = 0, msg_seq_ = 0, dropped_ = 0, base_op_seq_ = 0;
  int64_t last_poll_ns_ = 0;
  bool open_ = false;
};

// The decorator: forwards everything to `inner` and tells `recorder` about sends,
// receives, writes and completions. One clock read per post and per poll while an op is
// open.
class RecordingTransport final : public ForwardingTransport {
 public:
  RecordingTransport(std::unique_ptr<Transport> inner, OpRecorder& recorder)
      : ForwardingTransport(std::move(inner)), rec_(recorder) {}

  Status post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept override;
  Status post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept override;
  Status post_write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint64_t wr_id) noexcept override;
  Status post_write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm,
                        uint64_t wr_id) noexcept override;
  Status post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                          uint64_t wr_id) noexcept override;
  size_t poll(std::span<Completion> out) noexcept override;

 private:
  OpRecorder& rec_;
};

}  // namespace railbench
