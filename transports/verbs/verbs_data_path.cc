// The verbs Transport's data path: never throws, never blocks, never allocates (error
// text goes into TransportBase's fixed buffer). See verbs_transport_impl.h for wr_id
// layout, channel choice and the CQ budget, verbs_queue.h for selective signaling.
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>

#include "transports/verbs/verbs_transport_impl.h"

namespace railbench::verbs {

namespace {

constexpr int kPollBatch = 32;

uint64_t make_wr_id(uint64_t qid, uint64_t seq) {
  return (qid << WorkQueue::kSeqBits) | (seq & WorkQueue::kSeqMask);
}

const char* direction(OpKind op) {
  return op == OpKind::recv ? "from" : "to";
}

// What usually causes a failed work completion, for the error message.
const char* status_hint(ibv_wc_status status, OpKind op) {
  switch (status) {
    case IBV_WC_RETRY_EXC_ERR:
      return ": the peer stopped acknowledging (is it alive, its port up, and its GID reachable from ours? "
             "check --gid-index)";
    case IBV_WC_RNR_RETRY_EXC_ERR: return ": the peer posted no receive in time";
    case IBV_WC_REM_ACCESS_ERR:
      return ": the peer refused the access (wrong remote key or address, or the region was deregistered)";
    case IBV_WC_LOC_LEN_ERR:
      return op == OpKind::recv ? ": the message was larger than the receive buffer" : ": local length error";
    case IBV_WC_REM_INV_REQ_ERR:
      return ": the peer rejected the request (a message larger than its receive buffer, or beyond its region)";
    case IBV_WC_LOC_QP_OP_ERR:
      return op == OpKind::recv ? ": the message was larger than the receive buffer (rxe reports it this way)"
                                : ": the queue pair rejected the work request";
    case IBV_WC_LOC_PROT_ERR: return ": the local buffer is not registered for this access on this rail";
    case IBV_WC_REM_OP_ERR: return ": the peer could not complete the operation";
    case IBV_WC_WR_FLUSH_ERR: return ": flushed because the queue pair had failed before";
    default: return "";
  }
}

template <class T>
void swap_remove(std::vector<T*>& v, size_t i) {
  v[i] = v.back();
  v.pop_back();
}

}  // namespace

Status VerbsTransport::prepare(const char* what, int peer, int rail, const LocalSpan& local, const RemoteSpan* remote,
                               std::vector<uint64_t> Rail::*next, Target& t) noexcept {
  if (!valid_target(what, peer, rail)) return Status::error;
  Rail& r = *rails_[static_cast<size_t>(rail)];
  t.rail = &r;
  const auto* mr = dynamic_cast<const VerbsMemoryRegion*>(local.mr);
  if (mr == nullptr || mr->owner() != this || local.offset > mr->length() ||
      local.length > mr->length() - local.offset) {
    set_error("{} with peer {} on rail {}: local span [{}, +{}) is not inside a region registered with this transport",
              what, peer, r.name, local.offset, local.length);
    return Status::error;
  }
  if (local.length > caps_.max_msg_size) {
    set_error("{} with peer {} on rail {}: {} bytes exceed the largest message, {} bytes (split it)", what, peer,
              r.name, local.length, caps_.max_msg_size);
    return Status::error;
  }
  t.addr = reinterpret_cast<uint64_t>(mr->at(local.offset));
  t.lkey = mr->lkey(rail);
  if (remote != nullptr) {
    const RemoteKey* key = remote->key;
    if (key == nullptr || static_cast<size_t>(rail) >= key->rails.size() || remote->offset > key->length ||
        local.length > key->length - remote->offset) {
      set_error(
          "{} to peer {} on rail {}: remote span [{}, +{}) is outside the remote region ({} bytes, {} rail key(s))",
          what, peer, r.name, remote->offset, local.length, key != nullptr ? key->length : 0,
          key != nullptr ? key->rails.size() : 0);
      return Status::error;
    }
    t.remote_addr = key->rails[static_cast<size_t>(rail)].addr + remote->offset;
    t.rkey = static_cast<uint32_t>(key->rails[static_cast<size_t>(rail)].key);
  }
  const auto c = static_cast<int>((r.*next)[static_cast<size_t>(peer)] % static_cast<uint64_t>(channels_));
  t.channel = &r.channel(peer, c);
  if (!t.channel->connected) {
    set_error("{} with peer {} on rail {}: the peer is not connected (call connect/connect_all first)", what, peer,
              r.name);
    return Status::error;
  }
  return Status::ok;
}

Status VerbsTransport::queue_unusable(const char* what, const Target& t, const QueueSlot& q) noexcept {
  if (q.queue.broken()) {
    if (!completion_failed_) {
      set_error("{} with peer {} on rail {} (channel {}): the queue pair failed earlier", what, t.channel->peer,
                t.rail->name, t.channel->index);
    }
    return Status::error;
  }
  return Status::retry;
}

Status VerbsTransport::post_send_wr(const char* what, const Target& t, QueueSlot& q, ibv_send_wr& wr, OpKind op,
                                    size_t length, uint64_t wr_id) noexcept {
  if (q.queue.broken() || !q.queue.can_post() || !cq_has_room(*t.rail)) return queue_unusable(what, t, q);
  const bool signaled = q.queue.next_signaled();
  wr.wr_id = make_wr_id(t.rail->queue_id(q), q.queue.next_seq());
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  // Inline copies the payload into the WQE at post time: no DMA read of the buffer.
  if (length > 0 && length <= t.channel->max_inline && op != OpKind::read) wr.send_flags |= IBV_SEND_INLINE;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(q.qp, &wr, &bad); rc != 0) {
    if (rc == ENOMEM || rc == -ENOMEM) return Status::retry;  // the send queue is full after all
    set_error("{} to peer {} on rail {} (channel {}, {} bytes): ibv_post_send failed: {}", what, t.channel->peer,
              t.rail->name, t.channel->index, length, ErrnoText{rc});
    return Status::error;
  }
  q.queue.commit(wr_id, op, length, signaled);
  --t.rail->cq_free;
  if (!signaled && !q.in_dirty) {
    q.in_dirty = true;
    t.rail->dirty.push_back(&q);
  }
  ++t.channel->counters.posted;
  t.channel->counters.bytes += length;
  return Status::ok;
}

Status VerbsTransport::post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept {
  Target t;
  if (Status s = prepare("send", peer, rail, src, nullptr, &Rail::send_next, t); s != Status::ok) return s;
  ibv_sge sge{t.addr, static_cast<uint32_t>(src.length), t.lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = src.length > 0 ? 1 : 0;
  wr.opcode = IBV_WR_SEND;
  Status s = post_send_wr("send", t, t.channel->data_sq(), wr, OpKind::send, src.length, wr_id);
  if (s == Status::ok) ++t.rail->send_next[static_cast<size_t>(peer)];
  return s;
}

Status VerbsTransport::post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept {
  Target t;
  if (Status s = prepare("recv", peer, rail, dst, nullptr, &Rail::recv_next, t); s != Status::ok) return s;
  QueueSlot& q = t.channel->data_rq();
  if (!q.queue.can_post() || !cq_has_room(*t.rail)) return Status::retry;
  ibv_sge sge{t.addr, static_cast<uint32_t>(dst.length), t.lkey};
  ibv_recv_wr wr{};
  wr.wr_id = make_wr_id(t.rail->queue_id(q), q.queue.next_seq());
  wr.sg_list = &sge;
  wr.num_sge = dst.length > 0 ? 1 : 0;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(q.qp, &wr, &bad); rc != 0) {
    if (rc == ENOMEM || rc == -ENOMEM) return Status::retry;
    set_error("recv from peer {} on rail {} (channel {}, {} bytes): ibv_post_recv failed: {}", peer, t.rail->name,
              t.channel->index, dst.length, ErrnoText{rc});
    return Status::error;
  }
  q.queue.commit(wr_id, OpKind::recv, dst.length, true);
  --t.rail->cq_free;
  ++t.channel->counters.posted;
  t.channel->counters.bytes += dst.length;
  ++t.rail->recv_next[static_cast<size_t>(peer)];
  return Status::ok;
}

Status VerbsTransport::post_rma(const char* what, OpKind op, ibv_wr_opcode opcode, int peer, int rail,
                                const LocalSpan& local, const RemoteSpan& remote, uint32_t imm,
                                uint64_t wr_id) noexcept {
  Target t;
  if (Status s = prepare(what, peer, rail, local, &remote, &Rail::rma_next, t); s != Status::ok) return s;
  ibv_sge sge{t.addr, static_cast<uint32_t>(local.length), t.lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = local.length > 0 ? 1 : 0;
  wr.opcode = opcode;
  wr.wr.rdma.remote_addr = t.remote_addr;
  wr.wr.rdma.rkey = t.rkey;
  // The target reads it back with ntohl: both ends see the caller's value.
  if (opcode == IBV_WR_RDMA_WRITE_WITH_IMM) wr.imm_data = htonl(imm);
  Status s = post_send_wr(what, t, t.channel->rma_sq(), wr, op, local.length, wr_id);
  if (s == Status::ok) ++t.rail->rma_next[static_cast<size_t>(peer)];
  return s;
}

Status VerbsTransport::post_write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst,
                                  uint64_t wr_id) noexcept {
  return post_rma("write", OpKind::write, IBV_WR_RDMA_WRITE, peer, rail, src, dst, 0, wr_id);
}

Status VerbsTransport::post_write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm,
                                      uint64_t wr_id) noexcept {
  return post_rma("write-with-imm", OpKind::write, IBV_WR_RDMA_WRITE_WITH_IMM, peer, rail, src, dst, imm, wr_id);
}

Status VerbsTransport::post_read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src,
                                 uint64_t wr_id) noexcept {
  return post_rma("read", OpKind::read, IBV_WR_RDMA_READ, peer, rail, dst, src, 0, wr_id);
}

// One chained ibv_post_send: one doorbell for the batch, and one CQE (the last WR is
// the only one signaled). Every span is checked before anything is posted, and the
// send queue and CQ must hold the whole batch, so retry and error post nothing. A
// partial post (bad_wr past the first WR; the checks make it unlikely) leaves a prefix
// that will still complete: it is recorded as batch parts with no Completion of their
// own and covered by a flush, so the queue's slots and the CQ budget stay right. The
// answer is then retry for ENOMEM (the caller posts the batch again, and its prefix
// writes the same bytes to the same place once more, which is harmless for writes) and
// error otherwise; either way the caller's wr_id is not used.
Status VerbsTransport::post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                                        uint64_t wr_id) noexcept {
  const char* what = imm ? "batched write-with-imm" : "batched write";
  if (!valid_target(what, peer, rail)) return Status::error;
  if (ops.empty() || ops.size() > caps_.max_batch) {
    set_error("{} to peer {} on rail {}: {} writes, a batch holds 1..{} (split the list)", what, peer,
              rails_[static_cast<size_t>(rail)]->name, ops.size(), caps_.max_batch);
    return Status::error;
  }
  const size_t n = ops.size();
  Target t;
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const WriteSpan& w = ops[i];
    Target ti;
    // The channel comes from rma_next, unchanged until the batch is posted: one for all.
    if (Status s = prepare(what, peer, rail, w.src, &w.dst, &Rail::rma_next, ti); s != Status::ok) return s;
    if (i == 0) t = ti;
    const bool last = i + 1 == n;
    ibv_sge& sge = batch_sge_[i];
    sge = ibv_sge{ti.addr, static_cast<uint32_t>(w.src.length), ti.lkey};
    ibv_send_wr& wr = batch_wr_[i];
    wr = ibv_send_wr{};
    wr.next = last ? nullptr : &batch_wr_[i + 1];
    wr.sg_list = &sge;
    wr.num_sge = w.src.length > 0 ? 1 : 0;
    wr.opcode = last && imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    if (last && imm) wr.imm_data = htonl(*imm);
    wr.wr.rdma.remote_addr = ti.remote_addr;
    wr.wr.rdma.rkey = ti.rkey;
    total += w.src.length;
  }
  QueueSlot& q = t.channel->rma_sq();
  Rail& r = *t.rail;
  const bool cq_room = r.cq_free >= static_cast<int64_t>(n + 1 + r.dirty.size());
  if (q.queue.broken() || !q.queue.can_post_batch(n) || !cq_room) return queue_unusable(what, t, q);
  const uint64_t qid = r.queue_id(q);
  for (size_t i = 0; i < n; ++i) {
    ibv_send_wr& wr = batch_wr_[i];
    wr.wr_id = make_wr_id(qid, q.queue.next_seq() + i);
    wr.send_flags = i + 1 == n ? IBV_SEND_SIGNALED : 0;
    const size_t len = ops[i].src.length;
    if (len > 0 && len <= t.channel->max_inline) wr.send_flags |= IBV_SEND_INLINE;
  }
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(q.qp, batch_wr_.data(), &bad);
  const size_t posted = rc == 0                                     ? n
                        : bad != nullptr && bad >= batch_wr_.data() ? static_cast<size_t>(bad - batch_wr_.data())
                                                                    : 0;
  for (size_t i = 0; i < posted; ++i) {
    const size_t len = ops[i].src.length;
    if (rc == 0 && i + 1 == n) {
      q.queue.commit(wr_id, OpKind::write, total, true, static_cast<uint32_t>(n));
    } else {
      q.queue.commit_batch_part(wr_id, len);
    }
    --r.cq_free;
    ++t.channel->counters.posted;
    t.channel->counters.bytes += len;
  }
  if (rc == 0) {
    ++r.rma_next[static_cast<size_t>(peer)];
    return Status::ok;
  }
  if (posted > 0 && !q.in_dirty) {
    q.in_dirty = true;  // the prefix is unsignaled: a flush write covers it
    r.dirty.push_back(&q);
  }
  if (rc == ENOMEM || rc == -ENOMEM) return Status::retry;
  set_error("{} to peer {} on rail {} (channel {}, {} writes, {} bytes): ibv_post_send failed at write {}: {}", what,
            peer, r.name, t.channel->index, n, total, posted + 1, ErrnoText{rc});
  return Status::error;
}

size_t VerbsTransport::poll(std::span<Completion> out) noexcept {
  const size_t count = rails_.size();
  size_t n = 0;
  // Start at a different rail each call so a busy rail cannot starve the others when
  // `out` is small. Every rail gets its flushes and SRQ reposts even when `out` is full.
  for (size_t i = 0; i < count; ++i) n += drain(*rails_[(next_poll_rail_ + i) % count], out.subspan(n));
  if (count > 0) next_poll_rail_ = (next_poll_rail_ + 1) % count;
  return n;
}

size_t VerbsTransport::drain(Rail& rail, std::span<Completion> out) noexcept {
  size_t n = emit_ready(rail, out);
  bool cq_empty = false;
  while (n < out.size()) {
    ibv_wc wc[kPollBatch];
    const int want = static_cast<int>(std::min<size_t>(kPollBatch, out.size() - n));
    const int got = ibv_poll_cq(rail.cq(), want, wc);
    if (got < 0) {
      set_error("ibv_poll_cq on rail {} failed ({}): the CQ overran or the device is gone", rail.name, got);
      break;
    }
    // Each CQE yields at most one completion here (send queues hand theirs out through
    // the ready list below), so `want` of them always fit.
    for (int i = 0; i < got; ++i) handle(rail, wc[i], out, n);
    n += emit_ready(rail, out.subspan(n));
    if (got < want) {
      cq_empty = true;
      break;
    }
  }
  if (cq_empty && !rail.broken.empty()) {
    fail_broken(rail);
    n += emit_ready(rail, out.subspan(n));
  }
  flush_dirty(rail);
  while (rail.srq_missing > 0 && rail.cq_free > 0 && rail.post_srq_recv()) {
    --rail.srq_missing;
    --rail.cq_free;
  }
  return n;
}

void VerbsTransport::handle(Rail& rail, const ibv_wc& wc, std::span<Completion> out, size_t& n) noexcept {
  const uint64_t qid = wc.wr_id >> WorkQueue::kSeqBits;
  if (qid == Rail::kSrqQueueId) {
    // A peer's write-with-imm consumed one of our zero-length receives: put it back.
    // Its CQ slot passes to the replacement, or is freed until drain() reposts.
    if (!rail.post_srq_recv()) {
      ++rail.cq_free;
      ++rail.srq_missing;
    }
    const int peer = rail.peer_of_qp(wc.qp_num);
    if (wc.status == IBV_WC_SUCCESS) {
      if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM) return;  // nothing of ours sends on an rma QP
      out[n++] = Completion{0, peer, rail.index, OpKind::remote_write_imm, Status::ok, wc.byte_len, ntohl(wc.imm_data)};
      return;
    }
    if (wc.status == IBV_WC_WR_FLUSH_ERR) return;  // a receive flushed as its QP died: no operation of ours
    if (!completion_failed_) {
      completion_failed_ = true;
      set_error("remote write-with-imm from peer {} on rail {} failed at the target: {} (status {}, vendor_err {:#x})",
                peer, rail.name, ibv_wc_status_str(wc.status), static_cast<int>(wc.status), wc.vendor_err);
    }
    out[n++] = Completion{0, peer, rail.index, OpKind::remote_write_imm, Status::error, 0, 0};
    return;
  }
  QueueSlot* q = rail.queue(qid);
  if (q == nullptr) {
    ++rail.cq_free;  // not ours: cannot happen, but the slot is free again
    return;
  }
  const bool ok = wc.status == IBV_WC_SUCCESS;
  const WorkQueue::Reaped reaped = q->queue.reap(q->queue.expand(wc.wr_id & WorkQueue::kSeqMask), ok, wc.byte_len);
  if (reaped.record == nullptr) {
    ++rail.cq_free;  // a late flush for a WR fail_broken() already failed
    return;
  }
  rail.cq_free += static_cast<int64_t>(reaped.entries);
  if (!ok) {
    record_failure(rail, *q, *reaped.record, wc);
    if (!q->in_broken) {
      q->in_broken = true;
      rail.broken.push_back(q);
    }
  }
  if (!q->in_ready) {
    q->in_ready = true;
    rail.ready.push_back(q);
  }
}

void VerbsTransport::record_failure(const Rail& rail, const QueueSlot& q, const WorkRecord& r,
                                    const ibv_wc& wc) noexcept {
  const bool flush = wc.status == IBV_WC_WR_FLUSH_ERR;
  if (completion_failed_) return;  // the first real error explains the rest
  if (flush && has_error()) return;
  completion_failed_ = !flush;
  const char* op = r.batch_part ? "write (in a batch)" : r.internal ? "flush write (internal)" : to_string(r.op);
  set_error("{} {} peer {} on rail {} (channel {}, {} bytes, wr_id {}) failed: {} (status {}, vendor_err {:#x}){}", op,
            direction(r.op), q.channel->peer, rail.name, q.channel->index, r.bytes, r.wr_id,
            ibv_wc_status_str(wc.status), static_cast<int>(wc.status), wc.vendor_err, status_hint(wc.status, r.op));
}

size_t VerbsTransport::emit_ready(Rail& rail, std::span<Completion> out) noexcept {
  size_t n = 0;
  size_t i = 0;
  while (i < rail.ready.size() && n < out.size()) {
    QueueSlot* q = rail.ready[i];
    while (n < out.size()) {
      const WorkRecord* r = q->queue.pop();
      if (r == nullptr) break;
      out[n++] = Completion{r->wr_id, q->channel->peer, rail.index, r->op, r->status, r->bytes, 0};
      q->channel->counters.completions += r->wrs;
    }
    if (q->queue.has_ready()) {
      ++i;
    } else {
      q->in_ready = false;
      swap_remove(rail.ready, i);
    }
  }
  return n;
}

void VerbsTransport::flush_dirty(Rail& rail) noexcept {
  for (size_t i = 0; i < rail.dirty.size();) {
    QueueSlot* q = rail.dirty[i];
    if (!q->queue.needs_flush()) {
      q->in_dirty = false;
      swap_remove(rail.dirty, i);
      continue;
    }
    // The reserve in cq_has_room() guarantees the CQ slot; the queue kept one for it.
    if (rail.cq_free < 1 || !q->queue.can_flush()) {
      ++i;
      continue;
    }
    // A signaled zero-length write to the peer's flush region: when it completes, so
    // have the unsignaled WRs before it.
    ibv_send_wr wr{};
    wr.wr_id = make_wr_id(rail.queue_id(*q), q->queue.next_seq());
    wr.num_sge = 0;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = q->channel->remote_flush_addr;
    wr.wr.rdma.rkey = q->channel->remote_flush_rkey;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(q->qp, &wr, &bad) != 0) {
      ++i;  // the queue is momentarily full: the next poll tries again
      continue;
    }
    q->queue.commit_flush();
    --rail.cq_free;
    q->in_dirty = false;
    swap_remove(rail.dirty, i);
  }
}

void VerbsTransport::fail_broken(Rail& rail) noexcept {
  // The CQ is empty, yet these failed queues have WRs without a CQE (unsignaled WRs a
  // driver did not flush one by one): fail them so no caller waits forever. A late
  // flush CQE for one of them is recognised as stale.
  for (QueueSlot* q : rail.broken) {
    if (q->queue.in_flight() == 0) continue;
    q->queue.fail_rest();
    if (!q->in_ready) {
      q->in_ready = true;
      rail.ready.push_back(q);
    }
  }
}

}  // namespace railbench::verbs
