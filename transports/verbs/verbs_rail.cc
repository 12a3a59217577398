#include "transports/verbs/verbs_rail.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <random>

#include <fmt/format.h>
#ifdef RAILBENCH_VERBS_HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

#include "lib/core/errors.h"
#include "lib/transport/gpu.h"
#include "transports/verbs/verbs_device.h"

namespace railbench::verbs {

namespace {

// Depth of outstanding RDMA reads per QP, whatever the device allows beyond it.
constexpr int kMaxRdAtomic = 16;
// RoCE, IB and rxe all take messages up to 2 GiB or more; 1 GiB keeps sizes sane.
constexpr size_t kMaxMsgCap = size_t{1} << 30;

uint32_t random_psn() {
  thread_local std::mt19937 gen{std::random_device{}()};
  return gen() & 0xffffffu;  // PSNs are 24 bits
}

// A QP in RTS whose RoCE v2 UDP source port should be `port` (the one its flow label
// gives). mlx5 takes the port through its direct verbs, whatever its firmware would
// derive; other drivers take it from the flow label already. False when the device
// refused: the port is then the driver's own and unknown to railbench.
bool pin_udp_source_port([[maybe_unused]] ibv_qp* qp, [[maybe_unused]] uint16_t port) {
#ifdef RAILBENCH_VERBS_HAVE_MLX5DV
  if (mlx5dv_is_supported(qp->context->device)) return mlx5dv_modify_qp_udp_sport(qp, port) == 0;
#endif
  return true;
}

}  // namespace

Channel::Channel(int peer_rank, int channel_index, const QpRequest& data, const QpRequest& rma, uint32_t signal_every,
                 int port, const std::string& rail_name)
    : peer(peer_rank), index(channel_index), data_psn(random_psn()), rma_psn(random_psn()) {
  const std::string what = fmt::format("to peer {} on rail {} (channel {})", peer, rail_name, index);
  ibv_qp_cap dcap{}, rcap{};
  data_qp = create_rc_qp(data, dcap, what);
  rma_qp = create_rc_qp(rma, rcap, what);
  qp_to_init(data_qp.get(), port, what);
  qp_to_init(rma_qp.get(), port, what);
  max_inline = std::min(dcap.max_inline_data, rcap.max_inline_data);
  // Devices may round queue sizes up; the CQ was sized for what we asked.
  const uint32_t dsend = std::min(dcap.max_send_wr, data.send_depth);
  const uint32_t drecv = std::min(dcap.max_recv_wr, data.recv_depth);
  const uint32_t rsend = std::min(rcap.max_send_wr, rma.send_depth);
  queues[0] = QueueSlot{WorkQueue(dsend, signal_every, true), this, data_qp.get(), QueueSlot::Kind::data_send};
  queues[1] = QueueSlot{WorkQueue(drecv, 1, false), this, data_qp.get(), QueueSlot::Kind::data_recv};
  queues[2] = QueueSlot{WorkQueue(rsend, signal_every, true), this, rma_qp.get(), QueueSlot::Kind::rma_send};
  counters.peer = peer;
  counters.channel = index;
}

Rail::Rail(int rail_index, const PortSummary& summary, const RailConfig& cfg)
    : index(rail_index), name(fmt::format("{}:{}", summary.device, summary.port)), port(summary.port), config(cfg) {
  open_port(summary.device);
  // ---- GID and addressing ----
  pick_gid();
  describe_address();
  // ---- PD, CQ, SRQ ----
  create_pd();
  const QueueDepths depths = size_queues();
  create_cq();
  create_srq();
  register_flush_buffer();
  // ---- QPs: two per (peer, channel), including one towards ourselves ----
  create_channels(depths);
}

void Rail::open_port(const std::string& device) {
  device_ = std::make_shared<Device>();
  device_->context = open_device(device);
  ibv_context* ctx = device_->context.get();
  if (int rc = ibv_query_device(ctx, &device_attr); rc != 0) {
    throw TransportError(fmt::format("ibv_query_device on rail {} failed: {}", name, errno_text(rc)));
  }
  if (int rc = ibv_query_port(ctx, static_cast<uint8_t>(port), &port_attr); rc != 0) {
    throw TransportError(fmt::format("ibv_query_port on rail {} failed: {}", name, errno_text(rc)));
  }
  if (port_attr.state != IBV_PORT_ACTIVE) {
    throw UsageError(fmt::format("rail {} went {} while opening it: check its link (ibv_devinfo)", name,
                                 port_state_name(port_attr.state)));
  }
  ethernet = port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  gid_table = read_gid_table(ctx, port, port_attr);
}

const GidEntry* Rail::gid_entry(int i) const {
  auto it = std::find_if(gid_table.begin(), gid_table.end(), [&](const GidEntry& e) { return e.index == i; });
  return it == gid_table.end() ? nullptr : &*it;
}

void Rail::pick_gid() {
  if (config.gid_index >= 0) {
    if (config.gid_index >= port_attr.gid_tbl_len) {
      throw UsageError(fmt::format(
          "--gid-index {} is out of range for rail {}: its GID table has {} entries (valid 0..{}); populated: {}",
          config.gid_index, name, port_attr.gid_tbl_len, port_attr.gid_tbl_len - 1, describe_gids(gid_table)));
    }
    if (gid_entry(config.gid_index) == nullptr) {
      throw UsageError(fmt::format("--gid-index {} is an empty entry of rail {}'s GID table; populated: {}",
                                   config.gid_index, name, describe_gids(gid_table)));
    }
    gid_index = config.gid_index;
    use_grh = true;
  } else if (ethernet) {
    auto chosen = choose_roce_gid(gid_table);
    if (!chosen) {
      throw UsageError(fmt::format(
          "rail {} has no usable RoCE GID (table: {}): give its network interface an IP address, or pick an "
          "entry with --gid-index",
          name, describe_gids(gid_table)));
    }
    gid_index = *chosen;
    use_grh = true;
  } else {
    // InfiniBand inside one subnet: LID routing, no GRH.
    gid_index = 0;
    use_grh = false;
    if (port_attr.lid == 0) {
      throw UsageError(fmt::format(
          "rail {} is InfiniBand with LID 0: is a subnet manager running (opensm, or the switch's)?", name));
    }
  }
  if (const GidEntry* e = gid_entry(gid_index)) {
    gid = e->gid;
    gid_type = e->type;
  }
}

void Rail::describe_address() {
  if (ethernet) {
    if (auto ip = ipv4_of(gid)) {
      fabric = ipv4_subnet(*ip, ipv4_prefix_len(*ip).value_or(24));
    } else {
      fabric = gid_prefix64(gid);
    }
    address_text = fmt::format("{} (GID {}, {})", to_string(gid), gid_index, to_string(gid_type));
  } else {
    fabric = fmt::format("IB subnet {}", gid_prefix64(gid));
    address_text = use_grh ? fmt::format("LID {:#06x}, GID {} ({})", port_attr.lid, gid_index, to_string(gid))
                           : fmt::format("LID {:#06x}", port_attr.lid);
  }
  max_msg_size = std::min<size_t>(port_attr.max_msg_sz == 0 ? kMaxMsgCap : port_attr.max_msg_sz, kMaxMsgCap);
}

void Rail::create_pd() {
  ibv_pd* pd = ibv_alloc_pd(device_->context.get());
  if (pd == nullptr) {
    throw TransportError(fmt::format("ibv_alloc_pd on rail {} failed: {}", name, errno_text(errno)));
  }
  device_->pd.reset(pd);
}

Rail::QueueDepths Rail::size_queues() {
  if (device_attr.max_srq == 0) {
    throw UnsupportedError(fmt::format(
        "rail {} has no shared receive queues (max_srq 0), which write-with-imm needs here: use -t ofi:verbs", name));
  }
  QueueDepths d;
  const auto max_wr = static_cast<uint32_t>(std::max(device_attr.max_qp_wr, 4));
  d.send = std::clamp<uint32_t>(config.send_depth, 4, max_wr);
  d.recv = std::clamp<uint32_t>(config.recv_depth, 1, max_wr);
  d.qp_pairs = static_cast<uint64_t>(config.world_size) * static_cast<uint64_t>(config.channels);
  srq_depth = std::clamp<uint32_t>(config.srq_depth, 1, static_cast<uint32_t>(std::max(device_attr.max_srq_wr, 1)));
  const uint64_t want_cqe = d.qp_pairs * (2ull * d.send + d.recv) + srq_depth;
  cq_depth = static_cast<uint32_t>(std::min<uint64_t>(want_cqe, static_cast<uint64_t>(device_attr.max_cqe)));
  // The SRQ's receives hold CQ slots for good: leave most of the CQ to the caller.
  srq_depth = std::min(srq_depth, std::max<uint32_t>(cq_depth / 4, 1));
  return d;
}

void Rail::create_cq() {
  ibv_cq* cq = ibv_create_cq(device_->context.get(), static_cast<int>(cq_depth), nullptr, nullptr, 0);
  if (cq == nullptr) {
    throw TransportError(
        fmt::format("ibv_create_cq({} entries) on rail {} failed: {}", cq_depth, name, errno_text(errno)));
  }
  cq_.reset(cq);
  cq_free = cq_depth;
}

void Rail::create_srq() {
  ibv_srq_init_attr srq_attr{};
  srq_attr.attr.max_wr = srq_depth;
  srq_attr.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(device_->pd.get(), &srq_attr);
  if (srq == nullptr) {
    throw TransportError(
        fmt::format("ibv_create_srq({} receives) on rail {} failed: {}", srq_depth, name, errno_text(errno)));
  }
  srq_.reset(srq);
  for (uint32_t i = 0; i < srq_depth; ++i) {
    if (!post_srq_recv()) {
      throw TransportError(fmt::format("ibv_post_srq_recv on rail {} failed after {} of {} receives: {}", name, i,
                                       srq_depth, errno_text(errno)));
    }
    --cq_free;
  }
}

void Rail::register_flush_buffer() {
  flush_buf_ = std::make_unique<std::array<uint8_t, 64>>();
  ibv_mr* fmr = ibv_reg_mr(device_->pd.get(), flush_buf_->data(), flush_buf_->size(),
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (fmr == nullptr) {
    throw TransportError(fmt::format("ibv_reg_mr(64 bytes) on rail {} failed: {}", name, errno_text(errno)));
  }
  flush_mr_.reset(fmr);
}

void Rail::create_channels(const QueueDepths& depths) {
  ibv_pd* pd = device_->pd.get();
  QpRequest data{pd, cq_.get(), nullptr, depths.send, depths.recv, config.inline_bytes};
  QpRequest rma{pd, cq_.get(), srq_.get(), depths.send, 0, config.inline_bytes};
  channels_.reserve(depths.qp_pairs);
  queues_.assign(depths.qp_pairs * 3, nullptr);
  max_inline = UINT32_MAX;
  for (int peer = 0; peer < config.world_size; ++peer) {
    for (int c = 0; c < config.channels; ++c) {
      auto ch = std::make_unique<Channel>(peer, c, data, rma, config.signal_every, port, name);
      ch->counters.rail = index;
      max_inline = std::min(max_inline, ch->max_inline);
      peer_of_rma_qp_[ch->rma_qp->qp_num] = peer;
      for (auto& q : ch->queues) queues_[queue_id(q)] = &q;
      channels_.push_back(std::move(ch));
    }
  }
  send_next.assign(static_cast<size_t>(config.world_size), 0);
  recv_next.assign(static_cast<size_t>(config.world_size), 0);
  rma_next.assign(static_cast<size_t>(config.world_size), 0);
  // Every queue is on each list at most once (its in_* flag), so the data path's
  // push_backs never reallocate.
  ready.reserve(queues_.size());
  dirty.reserve(queues_.size());
  broken.reserve(queues_.size());
}

bool Rail::post_srq_recv() noexcept {
  ibv_recv_wr wr{};
  wr.wr_id = kSrqQueueId << WorkQueue::kSeqBits;
  wr.num_sge = 0;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_srq_recv(srq_.get(), &wr, &bad) == 0;
}

std::vector<uint8_t> Rail::blob() const {
  RailAddress a;
  a.rank = static_cast<uint32_t>(config.rank);
  a.world_size = static_cast<uint32_t>(config.world_size);
  a.channels = static_cast<uint32_t>(config.channels);
  a.link_layer = port_attr.link_layer;
  a.mtu = static_cast<uint8_t>(port_attr.active_mtu);
  a.max_dest_rd_atomic = static_cast<uint8_t>(std::clamp(device_attr.max_qp_rd_atom, 1, kMaxRdAtomic));
  a.use_grh = use_grh ? 1 : 0;
  a.lid = port_attr.lid;
  a.gid = gid;
  a.flush_addr = reinterpret_cast<uint64_t>(flush_buf_->data());
  a.flush_rkey = flush_mr_->rkey;
  a.ends.reserve(channels_.size());
  for (const auto& ch : channels_) {
    a.ends.push_back(ChannelEnd{ch->data_qp->qp_num, ch->data_psn, ch->rma_qp->qp_num, ch->rma_psn});
  }
  return encode(a);
}

std::string Rail::gid_hint(int peer) const {
  if (!ethernet) {
    return fmt::format(": check that both ports are in one InfiniBand subnet (our LID {:#06x}) and up", port_attr.lid);
  }
  return fmt::format(
      ": check --gid-index (rail {}'s GID table: {}; using index {}) and that peer {} is reachable on the same "
      "network",
      name, describe_gids(gid_table), gid_index, peer);
}

void Rail::connect(int peer, std::span<const uint8_t> bytes) {
  const RailAddress a = decode_rail_address(bytes);
  auto mismatch = [&](const std::string& why) {
    throw TransportError(fmt::format("peer {} cannot be connected on rail {}: {}", peer, name, why));
  };
  if (a.rank != static_cast<uint32_t>(peer)) mismatch(fmt::format("its address blob is rank {}'s", a.rank));
  if (a.world_size != static_cast<uint32_t>(config.world_size)) {
    mismatch(fmt::format("it counts {} ranks, we count {}", a.world_size, config.world_size));
  }
  if (a.channels != static_cast<uint32_t>(config.channels)) {
    mismatch(fmt::format("it opened {} queue pairs per peer, we opened {}: give every rank the same --qps-per-peer",
                         a.channels, config.channels));
  }
  if (a.link_layer != port_attr.link_layer) {
    mismatch(fmt::format("its port is {}, ours is {}: pick rails of one kind with --rails",
                         link_layer_name(a.link_layer), link_layer_name(port_attr.link_layer)));
  }
  if ((a.use_grh != 0) != use_grh) mismatch("one side uses --gid-index and the other does not");
  if (a.ends.size() != static_cast<size_t>(config.world_size) * static_cast<size_t>(config.channels)) {
    mismatch(fmt::format("its blob lists {} queue pairs", a.ends.size()));
  }
  const int path_mtu = std::min<int>(port_attr.active_mtu, a.mtu);
  const int responder_depth = std::clamp(device_attr.max_qp_rd_atom, 1, kMaxRdAtomic);
  const int initiator_depth =
      std::clamp(std::min<int>(device_attr.max_qp_init_rd_atom, a.max_dest_rd_atomic), 1, kMaxRdAtomic);
  const std::string hint = gid_hint(peer);
  for (int c = 0; c < config.channels; ++c) {
    Channel& ch = channel(peer, c);
    if (ch.connected) mismatch("it is already connected (connect is once per peer and rail)");
    const ChannelEnd& e = a.ends[static_cast<size_t>(config.rank * config.channels + c)];
    PathToPeer path;
    path.port = port;
    path.sgid_index = gid_index;
    path.use_grh = use_grh;
    path.dgid = a.gid;
    path.dlid = a.lid;
    path.path_mtu = path_mtu;
    path.max_dest_rd_atomic = responder_depth;
    const std::string what = fmt::format("to peer {} on rail {} (channel {})", peer, name, c);

    // RoCE v2: the flow label the driver would derive, given explicitly, so that the
    // UDP source port is the same on every driver that takes it from the label (and
    // set on mlx5). Returns that port; 0: not RoCE v2, or the device refused it.
    const bool roce_v2 = use_grh && gid_type == GidType::roce_v2;
    const auto connect_qp = [&](ibv_qp* qp, uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn) -> uint16_t {
      path.dest_qpn = dest_qpn;
      path.rq_psn = rq_psn;
      path.flow_label = roce_v2 ? roce_flow_label(qp->qp_num, dest_qpn) : 0;
      qp_to_rtr(qp, path, what, hint);
      qp_to_rts(qp, sq_psn, initiator_depth, what);
      if (!roce_v2) return 0;
      const uint16_t sport = roce_udp_source_port(path.flow_label);
      return pin_udp_source_port(qp, sport) ? sport : 0;
    };
    ch.data_sport = connect_qp(ch.data_qp.get(), e.data_qpn, e.data_psn, ch.data_psn);
    ch.rma_sport = connect_qp(ch.rma_qp.get(), e.rma_qpn, e.rma_psn, ch.rma_psn);
    ch.data_dest_qpn = e.data_qpn;
    ch.rma_dest_qpn = e.rma_qpn;
    if (roce_v2) ch.peer_ip = ipv4_of(a.gid).value_or("");

    ch.remote_flush_addr = a.flush_addr;
    ch.remote_flush_rkey = a.flush_rkey;
    ch.connected = true;
  }
}

RailInfo Rail::describe() const {
  RailInfo r;
  r.name = name;
  r.fabric = fabric;
  r.address = address_text;
  r.link_gbps = lane_gbps(port_attr.active_speed) * width_lanes(port_attr.active_width);
  r.mtu = mtu_bytes(port_attr.active_mtu);
  return r;
}

namespace {

// GPUDirect RDMA: a dma-buf of the GPU range (kernel 5.12+, driver 515+, open kernel
// modules), else plain ibv_reg_mr, which works when nvidia-peermem is loaded. When both
// fail, the error says what each returned.
// RAILBENCH_GPUDIRECT=dmabuf or =peermem tries only that one.
ibv_mr* register_gpu_memory(ibv_pd* pd, void* data, size_t length, int access, const std::string& rail) {
  const char* env = std::getenv("RAILBENCH_GPUDIRECT");
  const std::string only = env ? env : "";
  if (!only.empty() && only != "dmabuf" && only != "peermem") {
    throw UsageError(fmt::format("RAILBENCH_GPUDIRECT='{}': use dmabuf, peermem, or leave it unset to try both", only));
  }
  std::string dmabuf_why = "not tried (RAILBENCH_GPUDIRECT=peermem)";
  uint64_t offset = 0;
  const int fd = only == "peermem" ? -1 : gpu::dmabuf_fd(data, length, offset, dmabuf_why);
  if (fd >= 0) {
    ibv_mr* mr = ibv_reg_dmabuf_mr(pd, offset, length, reinterpret_cast<uint64_t>(data), fd, access);
    const int err = errno;
    ::close(fd);  // the MR holds its own reference to the dma-buf
    if (mr != nullptr) return mr;
    dmabuf_why = fmt::format("ibv_reg_dmabuf_mr failed: {}", errno_text(err));
  }
  ibv_mr* mr = only == "dmabuf" ? nullptr : ibv_reg_mr(pd, data, length, access);
  if (mr != nullptr) return mr;
  const int err = errno;
  const std::string peermem_why = only == "dmabuf" ? "not tried (RAILBENCH_GPUDIRECT=dmabuf)" : errno_text(err);
  throw TransportError(fmt::format(
      "cannot register {} bytes of GPU memory at {} on rail {}: dma-buf: {}; nvidia-peermem (ibv_reg_mr): {}. Load "
      "nvidia-peermem (modprobe nvidia-peermem), or use a kernel 5.12+ with the open NVIDIA modules for dma-buf; "
      "or run with --mem cuda-host",
      length, data, rail, dmabuf_why, peermem_why));
}

}  // namespace

VerbsMemoryRegion::VerbsMemoryRegion(void* data, size_t length, MemoryKind kind, const void* owner,
                                     const std::vector<std::unique_ptr<Rail>>& rails)
    : MemoryRegion(data, length, kind), owner_(owner) {
  remote_key_.length = length;
  per_rail_.reserve(rails.size());
  for (const auto& rail : rails) {
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (kind == MemoryKind::cuda) {
      ibv_mr* mr = register_gpu_memory(rail->device()->pd.get(), data, length, access, rail->name);
      per_rail_.push_back(PerRail{rail->device(), VerbsPtr<ibv_mr>(mr)});
      remote_key_.rails.push_back(RailKey{reinterpret_cast<uint64_t>(data), mr->rkey});
      continue;
    }
    ibv_mr* mr = ibv_reg_mr(rail->device()->pd.get(), data, length, access);
    if (mr == nullptr) {
      const int err = errno;
      const char* hint = "";
      if (err == ENOMEM || err == EPERM || err == EAGAIN) {
        hint = ": raise the locked-memory limit (ulimit -l unlimited; containers: --ulimit memlock=-1)";
      } else if (err == EFAULT) {
        hint = ": the buffer is not mapped memory of this process";
      }
      throw TransportError(fmt::format("ibv_reg_mr of {} bytes at {} on rail {} failed: {}{}", length, data, rail->name,
                                       errno_text(err), hint));
    }
    per_rail_.push_back(PerRail{rail->device(), VerbsPtr<ibv_mr>(mr)});
    remote_key_.rails.push_back(RailKey{reinterpret_cast<uint64_t>(data), mr->rkey});
  }
}

}  // namespace railbench::verbs
