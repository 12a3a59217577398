// The ofi Transport: control path on top of Rail/OfiMemoryRegion, and the data path
// (post_*, poll) that never throws, never blocks and never allocates, not even for the
// text of an error (TransportBase::set_error formats into a fixed buffer).
#include "transports/ofi/ofi_transport.h"

#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/transport_base.h"
#include "transports/ofi/ofi_rail.h"
#include "transports/ofi/ofi_select.h"

namespace railbench::ofi {

namespace {

// One transport is driven by one thread at a time (its domains are opened with
// FI_THREAD_DOMAIN); separate transports may run on separate threads.
class OfiTransport final : public RailTransport<std::shared_ptr<Rail>> {
 public:
  OfiTransport(Selection selection, int rank, int world_size);
  // Memory regions keep their rails' domains alive, but not the endpoints: those close
  // with the transport, before any region or buffer the caller still holds is freed.
  ~OfiTransport() override;

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

 private:
  // Everything a post needs once its arguments are checked.
  struct Prepared {
    Rail* rail = nullptr;
    OpContext* ctx = nullptr;
    void* buf = nullptr;
    void* desc = nullptr;
    fi_addr_t addr = FI_ADDR_UNSPEC;
    uint64_t remote_addr = 0;
    uint64_t key = 0;
  };

  // Checks the arguments and fills everything but the context; anything but ok is the
  // post's answer.
  Status check(const char* what, OpKind op, int peer, int rail, const LocalSpan& local, const RemoteSpan* remote,
               Prepared& p) noexcept;
  // check(), then takes a context from the rail's pool (retry when the pool is empty, or
  // while a batch's tail waits to be posted on the rail).
  Status prepare(const char* what, OpKind op, int peer, int rail, const LocalSpan& local, const RemoteSpan* remote,
                 uint64_t wr_id, Prepared& p) noexcept;
  // Returns the context on failure; `call` names the libfabric function in the message.
  Status finish(const char* call, const Prepared& p, ssize_t ret) noexcept;
  size_t drain(Rail& rail, std::span<Completion> out) noexcept;
  // What read_error found: no error entry, one that finished no operation yet (a chunk
  // of a batch with others outstanding), or a failed operation written to `c`.
  enum class ErrorRead : uint8_t { none, absorbed, completion };
  ErrorRead read_error(Rail& rail, Completion& c) noexcept;
  // A chunk of a batch starts with one span; append() adds the next when it fits (see
  // post_write_batch), false when it starts the next chunk.
  static void start_chunk(OpContext& ctx, const Prepared& p, const LocalSpan& src) noexcept;
  static bool append(const Rail& rail, size_t max_msg, OpContext& ctx, const Prepared& p,
                     const LocalSpan& src) noexcept;
  // fi_writemsg for one chunk of a batch, from what its context kept.
  static ssize_t post_chunk(Rail& rail, OpContext* ctx) noexcept;
  // One chunk of a batch finished (completed, failed, or will never be posted). When it
  // was the batch's last, fills `c` with the batch's one Completion and returns true.
  static bool chunk_done(Rail& rail, OpContext* ctx, bool ok, Completion& c) noexcept;
  // post_write_batch's three steps. Checks every span into batch_prep_ and counts the
  // chunks and bytes (a scratch context runs the packing the fill will), before anything
  // is taken or posted.
  Status plan_batch(const char* what, int peer, int rail, std::span<const WriteSpan> ops, size_t& chunks,
                    size_t& total) noexcept;
  // Takes and fills one context per chunk, in order on the rail's deferred list, the
  // last one carrying the immediate; returns the first chunk's, the batch's lead.
  OpContext* fill_batch(Rail& rail, int peer, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                        uint64_t wr_id, size_t chunks) noexcept;
  // Posts the deferred chunks in order until one is refused, and answers for the batch.
  Status post_batch(Rail& r, const char* what, int peer, int rail, size_t writes, size_t total, OpContext* lead,
                    size_t chunks) noexcept;
  // Posts the chunks a batch left behind on -FI_EAGAIN; returns completions written
  // (at most one: a batch whose tail failed to post and whose posted part has finished).
  size_t post_deferred(Rail& rail, std::span<Completion> out) noexcept;

  int gpu_ = 0;  // CUDA device of GPU buffers (FI_HMEM_CUDA)
  // post_write_batch's checked spans, caps().max_batch of them, allocated at setup: the
  // second pass fills the contexts from them instead of checking every span again.
  std::vector<Prepared> batch_prep_;
  size_t next_poll_rail_ = 0;
};

OfiTransport::OfiTransport(Selection selection, int rank, int world_size)
    : RailTransport("ofi", rank, world_size), gpu_(selection.gpu) {
  provider_ = std::move(selection.provider);
  // 28 bits: the top 4 tag bits stay clear for providers that reserve them.
  const uint32_t salt = std::random_device{}() & 0x0fffffffu;
  for (size_t i = 0; i < selection.rails.size(); ++i) {
    rails_.push_back(
        std::make_shared<Rail>(static_cast<int>(i), std::move(selection.rails[i]), world_size, selection.rma, salt));
  }
  caps_.send_recv = true;
  caps_.write = caps_.read = caps_.write_with_imm = selection.rma;
  caps_.ordered_writes = selection.rma && selection.ordering_requested;
  caps_.device_memory = selection.hmem;
  caps_.max_msg_size = SIZE_MAX;
  caps_.inject_size = SIZE_MAX;
  caps_.cpu_driven_nic = !rails_.empty();
  for (const auto& r : rails_) {
    const fi_info* info = r->info.get();
    // libfabric names a verbs domain after its device, and says nothing of who drives
    // it: a soft-RoCE (rxe) or soft-iWARP (siw) device is the kernel on these cores.
    const std::string_view prov = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "";
    const std::string_view dom = info->domain_attr->name ? info->domain_attr->name : "";
    caps_.cpu_driven_nic =
        caps_.cpu_driven_nic && prov.starts_with("verbs") && (dom.starts_with("rxe") || dom.starts_with("siw"));
    caps_.kernel_sockets =
        caps_.kernel_sockets || prov.starts_with("tcp") || prov.starts_with("sockets") || prov.starts_with("udp");
    constexpr uint64_t kOrder = FI_ORDER_WAW | FI_ORDER_SAW;
    bool ordered = (info->tx_attr->msg_order & kOrder) == kOrder && (info->rx_attr->msg_order & kOrder) == kOrder &&
                   info->ep_attr->max_order_waw_size >= info->ep_attr->max_msg_size;
    caps_.ordered_writes = caps_.ordered_writes && ordered;
    caps_.write_with_imm = caps_.write_with_imm && info->domain_attr->cq_data_size >= sizeof(uint32_t);
    caps_.max_msg_size = std::min(caps_.max_msg_size, info->ep_attr->max_msg_size);
    caps_.inject_size = std::min(caps_.inject_size, info->tx_attr->inject_size);
    // One rail's context pools are its queues, shared by every peer on it.
    const size_t depth = std::min(r->tx_pool.size(), r->rx_pool.size());
    caps_.max_outstanding = caps_.max_outstanding == 0 ? depth : std::min(caps_.max_outstanding, depth);
  }
  // A batch takes one context per chunk of batch_iov spans; at most half a rail's pool,
  // so that two batches can be in flight and a post never waits for a whole drain.
  constexpr size_t kMaxBatch = 256;
  if (selection.rma) {
    caps_.max_batch = kMaxBatch;
    for (const auto& r : rails_) caps_.max_batch = std::min(caps_.max_batch, r->batch_iov * (r->tx_pool.size() / 2));
    caps_.max_batch = std::max<size_t>(caps_.max_batch, 1);
    batch_prep_.resize(caps_.max_batch);
  }
}

OfiTransport::~OfiTransport() {
  for (const auto& r : rails_) r->close_endpoint();
}

std::unique_ptr<MemoryRegion> OfiTransport::register_memory(void* data, size_t length, MemoryKind kind) {
  if (kind == MemoryKind::cuda && !caps_.device_memory) {
    throw UnsupportedError(fmt::format(
        "the ofi transport ({}) was opened without FI_HMEM, so it cannot register GPU memory: open it with --mem "
        "cuda, or use --mem cuda-host",
        provider_));
  }
  if (data == nullptr || length == 0) {
    throw UsageError(fmt::format("cannot register an empty buffer ({} bytes at {})", length, data));
  }
  return std::make_unique<OfiMemoryRegion>(data, length, kind, gpu_, this, rails_);
}

Status OfiTransport::check(const char* what, OpKind op, int peer, int rail, const LocalSpan& local,
                           const RemoteSpan* remote, Prepared& p) noexcept {
  if (!valid_target(what, peer, rail)) return Status::error;
  Rail& r = *rails_[rail];
  if (r.closed()) {
    set_error("{} with peer {} on rail {}: the rail's endpoint was closed after a failure", what, peer, rail);
    return Status::error;
  }
  p.rail = &r;
  p.addr = r.peers[peer];
  if (p.addr == FI_ADDR_NOTAVAIL) {
    if (op != OpKind::recv) {
      set_error("{} to peer {} on rail {}: peer is not connected (call connect/connect_all first)", what, peer, rail);
      return Status::error;
    }
    p.addr = FI_ADDR_UNSPEC;
  }
  const auto* mr = static_cast<const OfiMemoryRegion*>(local.mr);
  if (mr == nullptr || mr->owner() != this || local.offset > mr->length() ||
      local.length > mr->length() - local.offset) {
    set_error(
        "{} with peer {} on rail {}: local span [{}, +{}) is not inside a region registered with this "
        "transport",
        what, peer, rail, local.offset, local.length);
    return Status::error;
  }
  p.buf = mr->at(local.offset);
  p.desc = mr->desc(rail);
  if (remote != nullptr) {
    if (!r.rma) {
      set_error("{} to peer {} on rail {}: provider {} has no RMA", what, peer, rail, provider_);
      return Status::error;
    }
    const RemoteKey* key = remote->key;
    if (key == nullptr || static_cast<size_t>(rail) >= key->rails.size() || remote->offset > key->length ||
        local.length > key->length - remote->offset) {
      set_error(
          "{} to peer {} on rail {}: remote span [{}, +{}) is outside the remote region ({} bytes, {} rail "
          "key(s))",
          what, peer, rail, remote->offset, local.length, key != nullptr ? key->length : 0,
          key != nullptr ? key->rails.size() : 0);
      return Status::error;
    }
    p.remote_addr = key->rails[rail].addr + remote->offset;
    p.key = key->rails[rail].key;
  }
  return Status::ok;
}

Status OfiTransport::prepare(const char* what, OpKind op, int peer, int rail, const LocalSpan& local,
                             const RemoteSpan* remote, uint64_t wr_id, Prepared& p) noexcept {
  if (Status s = check(what, op, peer, rail, local, remote, p); s != Status::ok) return s;
  Rail& r = *p.rail;
  if (!r.deferred.empty()) return Status::retry;
  const auto* mr = static_cast<const OfiMemoryRegion*>(local.mr);
  p.ctx = op == OpKind::recv ? r.rx_pool.take() : r.tx_pool.take();
  if (p.ctx == nullptr) return Status::retry;
  p.ctx->wr_id = wr_id;
  p.ctx->peer = peer;
  p.ctx->op = op;
  p.ctx->length = local.length;
  p.ctx->region = mr;
  return Status::ok;
}

Status OfiTransport::finish(const char* call, const Prepared& p, ssize_t ret) noexcept {
  if (ret == 0) return Status::ok;
  (p.ctx->from_rx_pool ? p.rail->rx_pool : p.rail->tx_pool).give(p.ctx);
  if (ret == -FI_EAGAIN) return Status::retry;
  set_error("{} with peer {} on rail {} ({} bytes) failed: {}: {}", to_string(p.ctx->op), p.ctx->peer, p.rail->index,
            p.ctx->length, call, FiErrorText{ret});
  return Status::error;
}

Status OfiTransport::post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept {
  Prepared p;
  if (Status s = prepare("send", OpKind::send, peer, rail, src, nullptr, wr_id, p); s != Status::ok) return s;
  // The tag carries our rank (and the receiver's salt): with FI_ORDER_SAS that makes
  // matching FIFO per (peer, rail) without needing FI_DIRECTED_RECV.
  uint64_t tag = p.rail->send_tag(peer, rank_);
  ssize_t ret;
  // Not from GPU memory: an inject copies the payload at post time, which the provider
  // would have to do through its HMEM copy for a few bytes; a plain send lets it choose.
  if (src.length <= p.rail->inject_size && src.mr->kind() != MemoryKind::cuda) {
    // FI_INJECT copies the payload at post time (lower latency); FI_COMPLETION keeps
    // the one-completion-per-post contract.
    iovec iov{p.buf, src.length};
    fi_msg_tagged msg{&iov, &p.desc, 1, p.addr, tag, 0, p.ctx, 0};
    ret = fi_tsendmsg(p.rail->ep.get(), &msg, FI_INJECT | FI_COMPLETION);
    return finish("fi_tsendmsg(FI_INJECT)", p, ret);
  }
  ret = fi_tsend(p.rail->ep.get(), p.buf, src.length, p.desc, p.addr, tag, p.ctx);
  return finish("fi_tsend", p, ret);
}

Status OfiTransport::post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept {
  Prepared p;
  if (Status s = prepare("recv", OpKind::recv, peer, rail, dst, nullptr, wr_id, p); s != Status::ok) return s;
  fi_addr_t from = p.rail->directed_recv ? p.addr : FI_ADDR_UNSPEC;
  ssize_t ret = fi_trecv(p.rail->ep.get(), p.buf, dst.length, p.desc, from, p.rail->recv_tag(peer), 0, p.ctx);
  return finish("fi_trecv", p, ret);
}

Status OfiTransport::post_write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst,
                                uint64_t wr_id) noexcept {
  Prepared p;
  if (Status s = prepare("write", OpKind::write, peer, rail, src, &dst, wr_id, p); s != Status::ok) return s;
  ssize_t ret = fi_write(p.rail->ep.get(), p.buf, src.length, p.desc, p.addr, p.remote_addr, p.key, p.ctx);
  return finish("fi_write", p, ret);
}

Status OfiTransport::post_write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm,
                                    uint64_t wr_id) noexcept {
  if (!caps_.write_with_imm) {
    set_error("write-with-imm to peer {} on rail {}: provider {} has no RMA with remote CQ data", peer, rail,
              provider_);
    return Status::error;
  }
  Prepared p;
  if (Status s = prepare("write-with-imm", OpKind::write, peer, rail, src, &dst, wr_id, p); s != Status::ok) return s;
  ssize_t ret = fi_writedata(p.rail->ep.get(), p.buf, src.length, p.desc, imm, p.addr, p.remote_addr, p.key, p.ctx);
  return finish("fi_writedata", p, ret);
}

Status OfiTransport::post_read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src,
                               uint64_t wr_id) noexcept {
  Prepared p;
  if (Status s = prepare("read", OpKind::read, peer, rail, dst, &src, wr_id, p); s != Status::ok) return s;
  ssize_t ret = fi_read(p.rail->ep.get(), p.buf, dst.length, p.desc, p.addr, p.remote_addr, p.key, p.ctx);
  return finish("fi_read", p, ret);
}

// A batch is cut into chunks (one region each, at most max_msg_size bytes, up to
// batch_iov local and batch_iov remote iovecs; see append()), each one fi_writemsg: shm
// serves such a write with one command and one process_vm_readv, so the per-write cost
// is paid once per chunk. All chunks but the last carry FI_MORE. Every chunk produces a
// CQ entry (the endpoint is not bound with FI_SELECTIVE_COMPLETION, which would change
// every other post too); the lead context counts them and poll() returns one Completion.
//
// -FI_EAGAIN partway: contexts for every chunk are taken before the first is posted, so
// the pool never runs dry mid-batch, but the provider can still refuse (rxm's own
// buffers, tcp's send queue). Making the batch all-or-nothing would need a reservation
// libfabric does not offer, and cancelling posted writes is not possible. So a batch is
// accepted (ok) once its first chunk is posted; the rest wait on the rail's deferred
// list and poll() posts them, in order, while every other post on that rail answers
// retry, so that nothing overtakes them (ordered_writes and an immediate on the last
// chunk stay right). Retry and error therefore still mean nothing was posted. A chunk
// that fails to post after the first fails the batch: its Completion carries the error.
Status OfiTransport::post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                                      uint64_t wr_id) noexcept {
  const char* what = imm ? "batched write-with-imm" : "batched write";
  if (!valid_target(what, peer, rail)) return Status::error;
  if (imm && !caps_.write_with_imm) {
    set_error("{} to peer {} on rail {}: provider {} has no RMA with remote CQ data", what, peer, rail, provider_);
    return Status::error;
  }
  if (ops.empty() || ops.size() > caps_.max_batch) {
    set_error("{} to peer {} on rail {}: {} writes, a batch holds 1..{} (split the list)", what, peer, rail, ops.size(),
              caps_.max_batch);
    return Status::error;
  }
  size_t chunks = 0, total = 0;
  if (Status s = plan_batch(what, peer, rail, ops, chunks, total); s != Status::ok) return s;
  Rail& r = *rails_[rail];
  if (!r.deferred.empty() || r.tx_pool.available() < chunks) return Status::retry;
  OpContext* lead = fill_batch(r, peer, ops, imm, wr_id, chunks);
  return post_batch(r, what, peer, rail, ops.size(), total, lead, chunks);
}

Status OfiTransport::plan_batch(const char* what, int peer, int rail, std::span<const WriteSpan> ops, size_t& chunks,
                                size_t& total) noexcept {
  const Rail& r = *rails_[rail];
  const size_t max_msg = r.info->ep_attr->max_msg_size;
  OpContext scratch;
  for (size_t i = 0; i < ops.size(); ++i) {
    const WriteSpan& w = ops[i];
    Prepared& p = batch_prep_[i];
    p = Prepared{};
    if (Status s = check(what, OpKind::write, peer, rail, w.src, &w.dst, p); s != Status::ok) return s;
    if (chunks == 0 || !append(r, max_msg, scratch, p, w.src)) {
      ++chunks;
      start_chunk(scratch, p, w.src);
    }
    total += w.src.length;
  }
  return Status::ok;
}

OpContext* OfiTransport::fill_batch(Rail& r, int peer, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                                    uint64_t wr_id, size_t chunks) noexcept {
  const size_t max_msg = r.info->ep_attr->max_msg_size;
  OpContext* lead = nullptr;
  OpContext* ctx = nullptr;
  for (size_t i = 0; i < ops.size(); ++i) {
    const WriteSpan& w = ops[i];
    const Prepared& p = batch_prep_[i];
    if (ctx != nullptr && append(r, max_msg, *ctx, p, w.src)) continue;
    ctx = r.tx_pool.take();
    ctx->wr_id = wr_id;
    ctx->peer = peer;
    ctx->op = OpKind::write;
    ctx->addr = p.addr;
    ctx->data = 0;
    ctx->flags = FI_COMPLETION | FI_MORE;
    start_chunk(*ctx, p, w.src);
    if (lead == nullptr) lead = ctx;
    ctx->batch = lead;
    r.deferred.push_back(ctx);  // the chunks in order; cleared once posted
  }
  ctx->flags &= ~FI_MORE;
  if (imm) {
    ctx->flags |= FI_REMOTE_CQ_DATA;
    ctx->data = *imm;
  }
  lead->batch_pending = static_cast<uint32_t>(chunks);
  return lead;
}

Status OfiTransport::post_batch(Rail& r, const char* what, int peer, int rail, size_t writes, size_t total,
                                OpContext* lead, size_t chunks) noexcept {
  // Post in order; stop at the first refusal.
  size_t posted = 0;
  ssize_t ret = 0;
  for (; posted < chunks; ++posted) {
    ret = post_chunk(r, r.deferred[posted]);
    if (ret != 0) break;
  }
  if (posted == 0) {
    for (size_t c = 0; c < chunks; ++c) r.tx_pool.give(r.deferred[c]);
    r.deferred.clear();
    if (ret == -FI_EAGAIN) return Status::retry;
    set_error("{} to peer {} on rail {} ({} writes, {} bytes) failed: fi_writemsg: {}", what, peer, rail, writes, total,
              FiErrorText{ret});
    return Status::error;
  }
  // The lead's length becomes the batch's bytes once its own chunk is posted.
  lead->length = total;
  if (posted == chunks) {
    r.deferred.clear();
    return Status::ok;
  }
  if (ret == -FI_EAGAIN) {
    r.deferred_next = posted;  // poll() posts the rest
    return Status::ok;
  }
  set_error("{} to peer {} on rail {}: chunk {} of {} failed to post after the first: fi_writemsg: {}", what, peer,
            rail, posted + 1, chunks, FiErrorText{ret});
  Completion unused;
  for (size_t c = posted; c < chunks; ++c) chunk_done(r, r.deferred[c], false, unused);
  r.deferred.clear();
  return Status::ok;
}

void OfiTransport::start_chunk(OpContext& ctx, const Prepared& p, const LocalSpan& src) noexcept {
  ctx.region = src.mr;
  ctx.length = src.length;
  ctx.iov_count = ctx.rma_count = 1;
  ctx.iov[0] = iovec{p.buf, src.length};
  ctx.desc[0] = p.desc;
  ctx.rma[0] = fi_rma_iov{p.remote_addr, src.length, p.key};
}

// The local and the remote iovecs of one fi_writemsg are two independent lists of the
// same total length, so a span that continues the previous one on either side extends
// that side's last entry instead of taking a new one: sources packed in one region
// (or destinations) let a chunk carry more than iov_limit spans. Spans stay in order,
// and each byte still goes where its span says.
bool OfiTransport::append(const Rail& rail, size_t max_msg, OpContext& ctx, const Prepared& p,
                          const LocalSpan& src) noexcept {
  if (ctx.region != src.mr || src.length > max_msg - ctx.length) return false;
  iovec& last_local = ctx.iov[ctx.iov_count - 1];
  fi_rma_iov& last_remote = ctx.rma[ctx.rma_count - 1];
  const bool join_local = static_cast<std::byte*>(last_local.iov_base) + last_local.iov_len == p.buf;
  const bool join_remote = last_remote.key == p.key && last_remote.addr + last_remote.len == p.remote_addr;
  if ((!join_local && ctx.iov_count == rail.batch_iov) || (!join_remote && ctx.rma_count == rail.batch_iov))
    return false;
  if (join_local) {
    last_local.iov_len += src.length;
  } else {
    ctx.iov[ctx.iov_count] = iovec{p.buf, src.length};
    ctx.desc[ctx.iov_count++] = p.desc;
  }
  if (join_remote) {
    last_remote.len += src.length;
  } else {
    ctx.rma[ctx.rma_count++] = fi_rma_iov{p.remote_addr, src.length, p.key};
  }
  ctx.length += src.length;
  return true;
}

ssize_t OfiTransport::post_chunk(Rail& rail, OpContext* ctx) noexcept {
  fi_msg_rma msg{};
  msg.msg_iov = ctx->iov;
  msg.desc = ctx->desc;
  msg.iov_count = ctx->iov_count;
  msg.addr = ctx->addr;
  msg.rma_iov = ctx->rma;
  msg.rma_iov_count = ctx->rma_count;
  msg.context = ctx;
  msg.data = ctx->data;
  return fi_writemsg(rail.ep.get(), &msg, ctx->flags);
}

bool OfiTransport::chunk_done(Rail& rail, OpContext* ctx, bool ok, Completion& c) noexcept {
  OpContext* lead = ctx->batch;
  if (!ok) lead->batch_failed = true;
  if (ctx != lead) rail.tx_pool.give(ctx);
  if (--lead->batch_pending > 0) return false;
  c = Completion{};
  c.wr_id = lead->wr_id;
  c.peer = lead->peer;
  c.rail = rail.index;
  c.op = OpKind::write;
  c.status = lead->batch_failed ? Status::error : Status::ok;
  c.bytes = lead->batch_failed ? 0 : lead->length;
  rail.tx_pool.give(lead);
  return true;
}

size_t OfiTransport::post_deferred(Rail& rail, std::span<Completion> out) noexcept {
  size_t n = 0;
  while (rail.deferred_next < rail.deferred.size()) {
    OpContext* ctx = rail.deferred[rail.deferred_next];
    const ssize_t ret = post_chunk(rail, ctx);
    if (ret == -FI_EAGAIN) return n;
    if (ret != 0) {
      set_error("batched write to peer {} on rail {} (wr_id {}): a chunk failed to post: fi_writemsg: {}", ctx->peer,
                rail.index, ctx->batch->wr_id, FiErrorText{ret});
      // The batch's posted part may have finished already: then this is its completion.
      for (size_t c = rail.deferred_next; c < rail.deferred.size(); ++c)
        if (chunk_done(rail, rail.deferred[c], false, out[n])) ++n;
      break;
    }
    ++rail.deferred_next;
  }
  rail.deferred.clear();
  rail.deferred_next = 0;
  return n;
}

size_t OfiTransport::poll(std::span<Completion> out) noexcept {
  size_t n = 0;
  size_t count = rails_.size();
  if (count == 0) return 0;
  // Start at a different rail each call so a busy rail cannot starve the others when
  // `out` is small.
  for (size_t i = 0; i < count && n < out.size(); ++i) {
    n += drain(*rails_[(next_poll_rail_ + i) % count], out.subspan(n));
  }
  next_poll_rail_ = (next_poll_rail_ + 1) % count;
  return n;
}

size_t OfiTransport::drain(Rail& rail, std::span<Completion> out) noexcept {
  constexpr size_t kBatch = 32;
  fi_cq_tagged_entry entries[kBatch];
  size_t n = 0;
  if (rail.closed()) return 0;
  if (!rail.deferred.empty() && !out.empty()) n += post_deferred(rail, out);
  while (n < out.size()) {
    size_t want = std::min(kBatch, out.size() - n);
    ssize_t got = fi_cq_read(rail.cq.get(), entries, want);
    if (got == -FI_EAGAIN) break;
    if (got == -FI_EAVAIL) {
      const ErrorRead e = read_error(rail, out[n]);
      if (e == ErrorRead::none) break;
      if (e == ErrorRead::completion) ++n;
      continue;
    }
    if (got < 0) {
      set_error("fi_cq_read on rail {} failed: {}", rail.index, FiErrorText{got});
      break;
    }
    for (ssize_t i = 0; i < got; ++i) {
      const fi_cq_tagged_entry& e = entries[i];
      Completion& c = out[n];
      c = Completion{};
      c.rail = rail.index;
      if ((e.flags & FI_REMOTE_CQ_DATA) != 0 && ((e.flags & FI_REMOTE_WRITE) != 0 || e.op_context == nullptr)) {
        // A peer's write-with-imm landed; the provider does not say who sent it.
        c.op = OpKind::remote_write_imm;
        c.bytes = e.len;
        c.imm = static_cast<uint32_t>(e.data);
        ++n;
        continue;
      }
      auto* ctx = static_cast<OpContext*>(e.op_context);
      if (ctx == nullptr) continue;  // an event we did not ask for
      if (ctx->batch != nullptr) {
        if (chunk_done(rail, ctx, true, c)) ++n;
        continue;
      }
      c.wr_id = ctx->wr_id;
      c.peer = ctx->peer;
      c.op = ctx->op;
      c.bytes = ctx->op == OpKind::recv ? e.len : ctx->length;
      (ctx->from_rx_pool ? rail.rx_pool : rail.tx_pool).give(ctx);
      ++n;
    }
    if (static_cast<size_t>(got) < want) break;
  }
  return n;
}

OfiTransport::ErrorRead OfiTransport::read_error(Rail& rail, Completion& c) noexcept {
  fi_cq_err_entry err{};  // err_data_size 0: the provider keeps the error data itself
  if (fi_cq_readerr(rail.cq.get(), &err, 0) < 0) return ErrorRead::none;
  char buf[256] = {};
  const char* detail = fi_cq_strerror(rail.cq.get(), err.prov_errno, err.err_data, buf, sizeof(buf));
  c = Completion{};
  c.rail = rail.index;
  c.status = Status::error;
  auto* ctx = static_cast<OpContext*>(err.op_context);
  size_t posted = 0;
  if (ctx != nullptr && ctx->batch != nullptr) {
    // The first failed chunk names the batch; the batch completes with the error once
    // every chunk has finished.
    if (!ctx->batch->batch_failed) {
      size_t chunk_bytes = 0;
      for (size_t k = 0; k < ctx->iov_count; ++k) chunk_bytes += ctx->iov[k].iov_len;
      const int code = err.err < 0 ? -err.err : err.err;
      set_error(
          "batched write to peer {} on rail {} (wr_id {}, a chunk of {} bytes) failed: {} ({}); provider {} "
          "detail: {}",
          ctx->peer, rail.index, ctx->batch->wr_id, chunk_bytes, fi_strerror(code), -code, provider_,
          detail != nullptr ? detail : "none");
    }
    return chunk_done(rail, ctx, false, c) ? ErrorRead::completion : ErrorRead::absorbed;
  }
  if (ctx != nullptr) {
    c.wr_id = ctx->wr_id;
    c.peer = ctx->peer;
    c.op = ctx->op;
    c.bytes = err.len;
    posted = ctx->length;
    (ctx->from_rx_pool ? rail.rx_pool : rail.tx_pool).give(ctx);
  } else {
    c.op = OpKind::remote_write_imm;
  }
  int code = err.err < 0 ? -err.err : err.err;
  if (code == FI_ETRUNC) {
    // Formatted into a fixed buffer: a std::string here could throw bad_alloc.
    char overflow[48] = {};
    if (err.olen > 0) fmt::format_to_n(overflow, sizeof(overflow) - 1, " ({} bytes did not fit)", err.olen);
    // Our own words: some providers leave an unrelated errno in prov_errno here.
    set_error(
        "{} with peer {} on rail {} (wr_id {}) failed: {}: the peer sent more than the {}-byte receive buffer "
        "holds{}",
        to_string(c.op), c.peer, rail.index, c.wr_id, fi_strerror(code), posted, overflow);
  } else {
    set_error("{} with peer {} on rail {} (wr_id {}) failed: {} ({}); provider {} detail: {}", to_string(c.op), c.peer,
              rail.index, c.wr_id, fi_strerror(code), -code, provider_, detail != nullptr ? detail : "none");
  }
  return ErrorRead::completion;
}

}  // namespace

std::unique_ptr<Transport> make_transport(const OfiOptions& options, int rank, int world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw UsageError(fmt::format("invalid rank {} for a world of {} rank(s)", rank, world_size));
  }
  // Providers size their queues by the job's size, FI_UNIVERSE_SIZE, which defaults to
  // 256: ofi_rxm over verbs then asks for a completion queue of (tx + rx) x 256 entries,
  // more than soft-RoCE (rxe) allows, and fi_enable fails. The job's real size is the
  // right value (MPI libraries set it the same way); a value the user set wins. Must
  // happen before the first fi_getinfo, which is when providers read their parameters.
  if (std::getenv("FI_UNIVERSE_SIZE") == nullptr) {
    setenv("FI_UNIVERSE_SIZE", std::to_string(std::max(world_size, 2)).c_str(), 0);
  }
  return std::make_unique<OfiTransport>(select_rails(options), rank, world_size);
}

}  // namespace railbench::ofi
