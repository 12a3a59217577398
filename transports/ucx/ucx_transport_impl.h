// The UCX transport. Why it is shaped this way:
// - One UCP context + worker per rail, each read with its own UCX_NET_DEVICES, because
//   UCX stripes over every device it finds otherwise and a rail must be one NIC.
// - Send/recv are tagged messages whose tag is the sender's rank: UCX matches messages
//   of one tag from one endpoint in order, which is the contract's FIFO per (peer, rail)
//   (each rail has its own worker).
// - A write completes when a flush of its endpoint does (ucp_put_nbx's own completion
//   says only that the source may be reused; over tcp and shm the data moves inside the
//   target's progress). post_write_batch is its puts plus one flush: one completion.
// - Write-with-immediate does not exist in UCP: the put, its flush, then a 4-byte tagged
//   notice (tag bit 63) carrying the immediate, as UCX users do. The flush makes it one
//   round trip dearer than a verbs write-with-imm.
// - Every operation takes a slot of a fixed pool, so the data path allocates nothing
//   (except the first use of a peer's remote key, unpacked once and cached). A slot is
//   free again only once poll() has handed out its completion, so the completion ring
//   (pool + notice slots) can never overrun, however many posts finish before a poll.
// - Endpoints use UCP_ERR_HANDLING_MODE_PEER: a dead peer fails its endpoint (its sends,
//   writes and reads end with the error), and the error callback also fails the tagged
//
// Internal to transports/ucx: the transport. Its rails in ucx_rail.h, its regions in
// ucx_region.h, its operations and UCX's callbacks into it in ucx_transport.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <ucp/api/ucp.h>

#include "lib/transport/transport_base.h"
#include "transports/ucx/ucx_rail.h"
#include "transports/ucx/ucx_region.h"
#include "transports/ucx/ucx_transport.h"

namespace railbench::ucx {

constexpr uint64_t kImmBit = uint64_t{1} << 63;
constexpr uint64_t kAllBits = ~uint64_t{0};
constexpr size_t kMaxOps = 16384;  // operations in flight, all peers and rails
// Notices pre-posted per peer and rail; UCX keeps the rest unexpected. Each matches its
// peer's full tag: a receive with a partial tag mask goes on UCX's wildcard list, which
// every arriving message then scans (64 of them cost an 8 B ping-pong ~0.13 us a message).
constexpr size_t kImmSlots = 2;
constexpr size_t kMaxBatch = 256;

// One operation in flight: its slot of the pool, handed to UCX as the callbacks' user data.
struct Op {
  UcxTransport* t = nullptr;
  uint64_t wr_id = 0;
  int peer = 0;
  int rail = 0;
  OpKind kind = OpKind::send;
  size_t bytes = 0;
  uint32_t imm = 0;
  bool notice = false;  // a write-with-imm whose notice goes out once the flush ends
  uint32_t index = 0;
  bool finished = false;     // its completion is queued for poll()
  void* req = nullptr;       // a receive still posted (cancelled when its region goes)
  std::byte* buf = nullptr;  // where that receive lands
  size_t capacity = 0;       // and how much room it has
};

class UcxTransport final : public RailTransport<std::unique_ptr<Rail>> {
 public:
  UcxTransport(const UcxOptions& o, int rank, int world_size);
  ~UcxTransport() override;

  std::unique_ptr<MemoryRegion> register_memory(void* data, size_t length, MemoryKind kind) override;
  Status post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept override;
  Status post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept override;
  Status post_write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint64_t wr_id) noexcept override {
    const WriteSpan w{src, dst};
    return post_write_batch(peer, rail, std::span<const WriteSpan>(&w, 1), std::nullopt, wr_id);
  }
  Status post_write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm,
                        uint64_t wr_id) noexcept override {
    const WriteSpan w{src, dst};
    return post_write_batch(peer, rail, std::span<const WriteSpan>(&w, 1), imm, wr_id);
  }
  Status post_read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src, uint64_t wr_id) noexcept override;
  Status post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                          uint64_t wr_id) noexcept override;
  size_t poll(std::span<Completion> out) noexcept override;
  // The ping-pong on the rail's worker alone (ucx_ping_pong.cc).
  Status ping_pong(const PingPong& pp) noexcept override;

  // Called from UCX callbacks inside ucp_worker_progress.
  void finish(Op& op, ucs_status_t st, size_t bytes) noexcept;
  void flushed(Op& op, ucs_status_t st) noexcept;
  void imm_arrived(ImmSlot& slot, ucs_status_t st, uint64_t tag) noexcept;
  void cancel_receives_into(const std::byte* data, size_t length) noexcept;
  void peer_failed(int rail, int peer, ucs_status_t st) noexcept;

 private:
  static constexpr uint32_t kNoOp = ~uint32_t{0};
  // A completion waiting for poll(), and what it holds until then: an operation's slot
  // or a notice receive that is posted again once its completion is out.
  struct Done {
    Completion c;
    uint32_t op = kNoOp;
    ImmSlot* slot = nullptr;
  };
  Op* take_op(int peer, int rail, OpKind kind, uint64_t wr_id) noexcept;
  void release(Op& op) noexcept { free_.push_back(op.index); }
  void push(const Done& d) noexcept { done_[done_tail_++ & done_mask_] = d; }
  bool fail_at_once(Rail& r, int peer, int rail, OpKind kind, uint64_t wr_id, Status& out) noexcept;
  void fail_receives_of_failed_peers(Rail& r) noexcept;
  bool lookup_rkey(Rail& r, int rail, int peer, const RemoteSpan& dst, size_t length, ucp_rkey_h& out) noexcept;
  void post_imm_slot(ImmSlot& slot) noexcept;
  void post_notice(Op& op) noexcept;
  bool accepted(void* req, Op& op, const char* what) noexcept;
  // Waits for a ping-pong's request on `r`'s worker: UCS_OK, its error, the peer's
  // endpoint failure or UCS_ERR_TIMED_OUT after pp.timeout_s without progress.
  ucs_status_t await(void* req, Rail& r, const PingPong& pp) noexcept;
  Status ping_pong_failed(Rail& r, const PingPong& pp, ucs_status_t st, void* pending) noexcept;
  // Hands the deferred receive (see deferred_) to UCX.
  void hand_over_receive() noexcept;
  // The rare work a poll does around progress: notice receives to post again, receives
  // of a failed peer to cancel, notices whose flush ended. `chores_` says there is some.
  void do_chores() noexcept;

  std::vector<Op> ops_;
  std::vector<uint32_t> free_;
  std::vector<Done> done_;
  size_t done_head_ = 0;
  size_t done_tail_ = 0;
  size_t done_mask_ = 0;
  size_t failed_queued_ = 0;       // failed completions in done_
  std::vector<ImmSlot*> reposts_;  // notice receives to post again at the next poll()
  std::vector<uint32_t> notices_;  // write-with-imm ops whose flush ended, notice not yet sent
  bool chores_ = false;            // reposts_, notices_ or a failed peer's receives wait
  // The latest receive, not yet handed to UCX: it goes after the next send, at the next
  // poll() or before the next receive (which keeps receives in order). A ping-pong posts
  // its next receive just before it replies; handing it over after the reply takes
  // ucp_tag_recv_nbx off the round trip's critical path, as ucx_perftest sends first.
  uint32_t deferred_ = kNoOp;
  std::vector<ucp_worker_h> workers_;  // per rail, for poll()'s progress loop
  uint64_t next_region_id_ = 1;
  TransportCell cell_ = std::make_shared<UcxTransport*>(this);
};

}  // namespace railbench::ucx
