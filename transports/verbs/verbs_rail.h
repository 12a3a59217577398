// Internal to transports/verbs: one rail (a device port with its PD, CQ, SRQ and the
// queue pairs to every peer) and the memory region registered on every rail.
//
// Two RC QPs per (peer, rail, channel):
//   data QP  sends and receives. Its receive queue holds only the caller's receives,
//            so the n-th send on the channel lands in the n-th receive posted there.
//   rma QP   writes, reads and write-with-imm. A write-with-imm consumes a receive at
//            the target, which must never be one of the caller's buffers: the rma QPs
//            of a rail share one SRQ holding only zero-length receives of the
//            transport's own, reposted as they are consumed. The completion's qp_num
//            names the sending peer.
// Writes and a trailing write-with-imm share the rma QP, so they land in post order
// (with one channel); a send is not ordered after a write on another QP.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/transport/transport.h"
#include "transports/verbs/verbs_common.h"
#include "transports/verbs/verbs_qp.h"
#include "transports/verbs/verbs_queue.h"
#include "transports/verbs/verbs_select.h"

namespace railbench::verbs {

// Context and PD of one rail, shared with the memory regions registered on it, so the
// PD outlives every MR even when the transport is destroyed first.
struct Device {
  VerbsPtr<ibv_context> context;  // declared first: closed last
  VerbsPtr<ibv_pd> pd;
};

// How the transport sizes a rail's queues.
struct RailConfig {
  int rank = 0;
  int world_size = 1;
  int channels = 1;    // --qps-per-peer
  int gid_index = -1;  // -1: choose
  uint32_t send_depth = 256;
  uint32_t recv_depth = 512;
  uint32_t srq_depth = 512;
  uint32_t inline_bytes = 220;
  uint32_t signal_every = 16;
};

struct Channel;

// One work queue of one channel, with the rail's bookkeeping flags.
struct QueueSlot {
  enum class Kind : uint8_t { data_send, data_recv, rma_send };
  WorkQueue queue;
  Channel* channel = nullptr;
  ibv_qp* qp = nullptr;
  Kind kind = Kind::data_send;
  bool in_ready = false;  // on the rail's ready list
  bool in_dirty = false;  // on the rail's flush list
  bool in_broken = false;
};

// The two QPs towards one peer on one rail, and their queues.
struct Channel {
  Channel(int peer, int index, const QpRequest& data, const QpRequest& rma, uint32_t signal_every, int port,
          const std::string& rail_name);

  int peer;
  int index;
  VerbsPtr<ibv_qp> data_qp;
  VerbsPtr<ibv_qp> rma_qp;
  uint32_t data_psn;
  uint32_t rma_psn;
  uint32_t max_inline = 0;          // the smaller grant of the two QPs
  std::array<QueueSlot, 3> queues;  // Kind order: data_send, data_recv, rma_send
  bool connected = false;
  uint64_t remote_flush_addr = 0;
  uint32_t remote_flush_rkey = 0;
  ChannelCounters counters;
  // RoCE v2 with IPv4 GIDs: the peer's address and each QP's far end and UDP source
  // port, for Transport::network_flows (0 / "": not known).
  std::string peer_ip;
  uint32_t data_dest_qpn = 0, rma_dest_qpn = 0;
  uint16_t data_sport = 0, rma_sport = 0;

  QueueSlot& data_sq() { return queues[0]; }
  QueueSlot& data_rq() { return queues[1]; }
  QueueSlot& rma_sq() { return queues[2]; }
};

class Rail {
 public:
  // Opens the port, picks its GID, creates CQ, SRQ and every peer's QPs (moved to
  // INIT). Throws UsageError (bad --gid-index, no usable GID) or TransportError.
  Rail(int index, const PortSummary& summary, const RailConfig& config);
  Rail(const Rail&) = delete;
  Rail& operator=(const Rail&) = delete;

  std::vector<uint8_t> blob() const;
  // Moves the QPs facing `peer` to RTS from its blob; throws TransportError.
  void connect(int peer, std::span<const uint8_t> blob);
  RailInfo describe() const;

  Channel& channel(int peer, int c) { return *channels_[static_cast<size_t>(peer * config.channels + c)]; }
  const Channel& channel(int peer, int c) const { return *channels_[static_cast<size_t>(peer * config.channels + c)]; }
  // The peer whose rma QP has this number (a write-with-imm's source); -1 if none.
  int peer_of_qp(uint32_t qp_num) const {
    auto it = peer_of_rma_qp_.find(qp_num);
    return it == peer_of_rma_qp_.end() ? -1 : it->second;
  }
  // Queue ids travel in the upper bits of every wr_id (see VerbsTransport).
  static constexpr uint64_t kSrqQueueId = (uint64_t{1} << (64 - WorkQueue::kSeqBits)) - 1;
  QueueSlot* queue(uint64_t qid) { return qid < queues_.size() ? queues_[qid] : nullptr; }
  uint64_t queue_id(const QueueSlot& q) const {
    return (static_cast<uint64_t>(q.channel->peer) * static_cast<uint64_t>(config.channels) +
            static_cast<uint64_t>(q.channel->index)) *
               3 +
           static_cast<uint64_t>(q.kind);
  }
  ibv_cq* cq() const { return cq_.get(); }

  // Posts one zero-length receive to the SRQ; false when the SRQ refused it.
  bool post_srq_recv() noexcept;

  const int index;
  const std::string name;  // "rxe0:1"
  const int port;          // device port number, from 1
  const RailConfig config;

  // Fixed at setup.
  ibv_device_attr device_attr{};
  // A device the kernel emulates on this host's CPUs: soft-RoCE (rxe, vendor id
  // 0xffffff) or soft-iWARP (siw, 0x626d74, "bmt").
  bool software_device() const { return device_attr.vendor_id == 0xffffff || device_attr.vendor_id == 0x626d74; }
  ibv_port_attr port_attr{};
  bool ethernet = false;
  bool use_grh = false;
  int gid_index = 0;
  Gid gid{};
  GidType gid_type = GidType::unknown;
  std::vector<GidEntry> gid_table;
  std::string fabric;
  std::string address_text;
  uint32_t cq_depth = 0;
  uint32_t srq_depth = 0;
  uint32_t max_inline = 0;  // smallest grant over this rail's QPs
  size_t max_msg_size = 0;

  // Data-path state, driven by the transport.
  int64_t cq_free = 0;                                   // CQEs the CQ can still take
  uint32_t srq_missing = 0;                              // consumed SRQ receives not yet reposted
  std::vector<QueueSlot*> ready;                         // queues with finished WRs to hand out
  std::vector<QueueSlot*> dirty;                         // send queues whose unsignaled tail needs a flush
  std::vector<QueueSlot*> broken;                        // queues whose QP failed
  std::vector<uint64_t> send_next, recv_next, rma_next;  // per peer: round-robin counters

 private:
  // What size_queues() settles for the QPs besides the members it sets (CQ, SRQ depth).
  struct QueueDepths {
    uint32_t send = 0;
    uint32_t recv = 0;
    uint64_t qp_pairs = 0;  // (peer, channel) pairs, two QPs each
  };

  // The constructor's steps, in order; each throws as the constructor documents.
  void open_port(const std::string& device);  // context, device and port attributes, GID table
  void pick_gid();                            // gid_index and use_grh: --gid-index, RoCE v2, or IB
  void describe_address();                    // fabric, address_text, max_msg_size
  void create_pd();
  QueueDepths size_queues();  // also refuses devices without an SRQ
  void create_cq();
  void create_srq();  // and fills it with zero-length receives
  void register_flush_buffer();
  void create_channels(const QueueDepths& depths);  // and sizes the data-path lists
  const GidEntry* gid_entry(int index) const;       // null for an empty table entry

  std::string gid_hint(int peer) const;

  // Destroyed in reverse declaration order: QPs, SRQ and CQ first, so nothing queued
  // can still reach memory when the flush MR and its buffer go; then (unless a memory
  // region still holds it) PD and context. The constructor creates them in its own order.
  std::shared_ptr<Device> device_;
  std::unique_ptr<std::array<uint8_t, 64>> flush_buf_;
  VerbsPtr<ibv_mr> flush_mr_;
  VerbsPtr<ibv_cq> cq_;
  VerbsPtr<ibv_srq> srq_;
  std::vector<std::unique_ptr<Channel>> channels_;  // [peer * channels + c]
  std::vector<QueueSlot*> queues_;                  // by queue id
  std::unordered_map<uint32_t, int> peer_of_rma_qp_;

 public:
  const std::shared_ptr<Device>& device() const { return device_; }
};

class VerbsMemoryRegion final : public MemoryRegion {
 public:
  // Registers [data, data+length) on every rail's PD; throws TransportError.
  VerbsMemoryRegion(void* data, size_t length, MemoryKind kind, const void* owner,
                    const std::vector<std::unique_ptr<Rail>>& rails);

  RemoteKey remote_key() const override { return remote_key_; }
  uint32_t lkey(int rail) const noexcept { return per_rail_[static_cast<size_t>(rail)].mr->lkey; }
  const void* owner() const noexcept { return owner_; }

 private:
  struct PerRail {
    std::shared_ptr<Device> device;  // declared first so the MR is deregistered before the PD goes
    VerbsPtr<ibv_mr> mr;
  };
  const void* owner_;
  std::vector<PerRail> per_rail_;
  RemoteKey remote_key_;
};

}  // namespace railbench::verbs
