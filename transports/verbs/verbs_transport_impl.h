// Internal to transports/verbs: the Transport itself. Control path in
// verbs_transport.cc, data path (post_*, poll) in verbs_data_path.cc.
//
// Work request ids: the upper 24 bits name the queue (Rail::queue_id, or the rail's
// SRQ), the lower 40 the WR's sequence number in it (WorkQueue), so a CQE finds its
// record without a lookup table and a stale CQE is recognised.
//
// Channels: with --qps-per-peer k, the n-th send to a peer on a rail goes on channel
// n % k and the n-th receive posted for that peer on that rail also on n % k, so both
// sides agree and matching stays FIFO per (peer, rail). One-sided operations take
// their own round-robin counter (channel m % k for the m-th).
//
// CQ budget: every posted WR holds a CQ slot until a CQE covers it (unsignaled ones
// too, since a failing QP flushes them with CQEs), the SRQ's receives hold theirs for
// good, and each send queue waiting for a flush keeps one in reserve, so the CQ can
// never overflow; a post that would need more answers Status::retry.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/transport/transport_base.h"
#include "transports/verbs/verbs_rail.h"
#include "transports/verbs/verbs_transport.h"

namespace railbench::verbs {

class VerbsTransport final : public RailTransport<std::unique_ptr<Rail>> {
 public:
  VerbsTransport(const PortChoice& ports, const VerbsOptions& options, int rank, int world_size);

  std::unique_ptr<MemoryRegion> register_memory(void* data, size_t length, MemoryKind kind) override;

  Status post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept override;
  Status post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept override;
  Status post_write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint64_t wr_id) noexcept override;
  Status post_write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm,
                        uint64_t wr_id) noexcept override;
  Status post_read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src, uint64_t wr_id) noexcept override;
  Status post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                          uint64_t wr_id) noexcept override;
  size_t poll(std::span<Completion> out) noexcept override;
  std::vector<ChannelCounters> channel_counters() const override;
  std::vector<NetworkFlow> network_flows() const override;

 private:
  // A checked post: the rail, the channel the round robin picked and the buffers.
  struct Target {
    Rail* rail = nullptr;
    Channel* channel = nullptr;
    uint64_t addr = 0;  // local buffer
    uint32_t lkey = 0;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
  };

  // Validates the arguments and picks the channel from `next[peer]`; anything but ok
  // is the post's answer.
  Status prepare(const char* what, int peer, int rail, const LocalSpan& local, const RemoteSpan* remote,
                 std::vector<uint64_t> Rail::*next, Target& t) noexcept;
  // Posts to a send queue (data or rma) and does the bookkeeping.
  Status post_send_wr(const char* what, const Target& t, QueueSlot& q, ibv_send_wr& wr, OpKind op, size_t length,
                      uint64_t wr_id) noexcept;
  Status post_rma(const char* what, OpKind op, ibv_wr_opcode opcode, int peer, int rail, const LocalSpan& local,
                  const RemoteSpan& remote, uint32_t imm, uint64_t wr_id) noexcept;
  bool cq_has_room(const Rail& r) const noexcept { return r.cq_free >= 2 + static_cast<int64_t>(r.dirty.size()); }
  Status queue_unusable(const char* what, const Target& t, const QueueSlot& q) noexcept;

  size_t drain(Rail& rail, std::span<Completion> out) noexcept;
  void handle(Rail& rail, const ibv_wc& wc, std::span<Completion> out, size_t& n) noexcept;
  size_t emit_ready(Rail& rail, std::span<Completion> out) noexcept;
  void flush_dirty(Rail& rail) noexcept;
  void fail_broken(Rail& rail) noexcept;
  void record_failure(const Rail& rail, const QueueSlot& q, const WorkRecord& r, const ibv_wc& wc) noexcept;

  int channels_;
  // One batch's chained work requests and their scatter entries, caps().max_batch each,
  // allocated at setup so post_write_batch allocates nothing.
  std::vector<ibv_send_wr> batch_wr_;
  std::vector<ibv_sge> batch_sge_;
  size_t next_poll_rail_ = 0;
  bool completion_failed_ = false;  // last_error() holds a completion's real (not flush) error
};

}  // namespace railbench::verbs
