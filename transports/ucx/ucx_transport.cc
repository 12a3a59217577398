// The UCX transport's operations, and UCX's callbacks into it (ucx_transport_impl.h says
// why it is shaped this way).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "transports/ucx/ucx_status.h"
#include "transports/ucx/ucx_traits.h"
#include "transports/ucx/ucx_transport_impl.h"

namespace railbench::ucx {

namespace {

// ---- callbacks: UCX calls these from inside ucp_worker_progress ----

void send_done(void* req, ucs_status_t st, void* user) {
  auto* op = static_cast<Op*>(user);
  op->t->finish(*op, st, op->bytes);
  ucp_request_free(req);
}
void recv_done(void* req, ucs_status_t st, const ucp_tag_recv_info_t* info, void* user) {
  auto* op = static_cast<Op*>(user);
  op->t->finish(*op, st, st == UCS_OK ? info->length : 0);
  ucp_request_free(req);
}
void flush_done(void* req, ucs_status_t st, void* user) {
  auto* op = static_cast<Op*>(user);
  op->t->flushed(*op, st);
  ucp_request_free(req);
}
void imm_done(void* req, ucs_status_t st, const ucp_tag_recv_info_t* info, void* user) {
  auto* slot = static_cast<ImmSlot*>(user);
  slot->req = nullptr;
  slot->t->imm_arrived(*slot, st, st == UCS_OK ? info->sender_tag : 0);
  ucp_request_free(req);
}

// UCX_TLS accepts aliases beside the transport names uct lists.
const std::set<std::string> kAliases{"all", "sm",   "shm",  "mm", "ib",   "rc",   "rc_x", "rc_v",
                                     "ud",  "ud_x", "ud_v", "dc", "dc_x", "cuda", "rocm", "self"};

void check_options(const UcxOptions& o) {
  const auto res = list_resources();
  std::set<std::string> tls, devices;
  for (const auto& r : res) {
    tls.insert(r.tl);
    devices.insert(r.device);
  }
  for (const std::string& tl : tl_names(o.tls)) {
    if (!tls.count(tl) && !kAliases.count(tl))
      throw UsageError(
          fmt::format("ucx: unknown UCX transport '{}': this host's UCX {} offers {} (and aliases shm, "
                      "tcp, rc, ...; see ucx_info -d)",
                      tl, ucx_version(), fmt::join(tls, ", ")));
  }
  for (const auto& d : o.devices) {
    if (!devices.count(d))
      throw UsageError(fmt::format("ucx: no device '{}': UCX offers {} (ucx_info -d)", d, fmt::join(devices, ", ")));
  }
}

}  // namespace

void cancel_receives_into(UcxTransport* t, const std::byte* data, size_t length) {
  t->cancel_receives_into(data, length);
}

void ep_failed(void* arg, ucp_ep_h /*ep*/, ucs_status_t st) {
  auto* owner = static_cast<EpOwner*>(arg);
  owner->t->peer_failed(owner->rail, owner->peer, st);
}

UcxTransport::UcxTransport(const UcxOptions& o, int rank, int world_size)
    : RailTransport("ucx", rank, world_size), ops_(kMaxOps) {
  provider_ = o.tls.empty() ? "auto" : o.tls;
  caps_.send_recv = true;
  caps_.write = true;
  caps_.read = true;
  caps_.write_with_imm = true;
  caps_.ordered_writes = true;  // one flush before the notice: everything before it has landed
  caps_.max_msg_size = size_t{1} << 30;
  caps_.max_batch = kMaxBatch;
  // UCX itself has no fixed queue depth; this keeps windows of receives posted ahead of
  // their sends well inside the op pool.
  caps_.max_outstanding = 1024;
  caps_.kernel_sockets = o.tls.find("tcp") != std::string::npos;
  caps_.ping_pong = true;  // ucx_ping_pong.cc
  free_.reserve(kMaxOps);
  notices_.reserve(kMaxOps);
  for (uint32_t i = kMaxOps; i-- > 0;) {
    ops_[i].t = this;
    ops_[i].index = i;
    free_.push_back(i);
  }
  const int n = o.devices.empty() ? o.num_rails : static_cast<int>(o.devices.size());
  // A power of two, so the ring indexes with a mask: a division on every completion
  // is a measurable share of an 8 B ping-pong.
  const size_t notices = kImmSlots * static_cast<size_t>(world_size) * static_cast<size_t>(n);
  done_.resize(std::bit_ceil(kMaxOps + notices));
  done_mask_ = done_.size() - 1;
  reposts_.reserve(notices);
  for (int r = 0; r < n; ++r) {
    auto core = open_rail_core(o, o.devices.empty() ? "auto" : o.devices[static_cast<size_t>(r)]);
    auto rail = std::make_unique<Rail>();
    rail->core = std::move(core);
    rail->eps.assign(static_cast<size_t>(world_size), nullptr);
    rail->failed.assign(static_cast<size_t>(world_size), UCS_OK);
    for (int peer = 0; peer < world_size; ++peer) rail->owners.push_back(EpOwner{this, r, peer});
    rail->imm_slots.resize(kImmSlots * static_cast<size_t>(world_size));
    for (size_t i = 0; i < rail->imm_slots.size(); ++i) {
      ImmSlot& s = rail->imm_slots[i];
      s.t = this;
      s.rail = r;
      s.peer = static_cast<int>(i / kImmSlots);
    }
    workers_.push_back(rail->core->worker);
    rails_.push_back(std::move(rail));
  }
  for (auto& rail : rails_)
    for (auto& s : rail->imm_slots) post_imm_slot(s);
  if (has_error()) throw TransportError(last_error());
}

UcxTransport::~UcxTransport() {
  *cell_ = nullptr;
  for (auto& rail : rails_) {
    auto* worker = rail->core->worker;
    for (auto& [k, rkey] : rail->rkeys) ucp_rkey_destroy(rkey);
    rail->rkeys.clear();
    // Pre-posted notice receives are cancelled so their callbacks run before the worker goes.
    for (auto& s : rail->imm_slots)
      if (s.req != nullptr) ucp_request_cancel(worker, s.req);
    for (int i = 0; i < 100; ++i) ucp_worker_progress(worker);
    for (ucp_ep_h ep : rail->eps) {
      if (ep == nullptr) continue;
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      // A dead peer must not hold up teardown. Without peer-failure handling UCX cannot
      // force a close: it flushes, under the same deadline.
      p.flags = rail->core->peer_failure ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      wait_request(worker, ucp_ep_close_nbx(ep, &p), 2.0);
    }
    ucp_worker_destroy(worker);
    rail->core->worker = nullptr;
  }
}

Op* UcxTransport::take_op(int peer, int rail, OpKind kind, uint64_t wr_id) noexcept {
  if (free_.empty()) return nullptr;
  Op& op = ops_[free_.back()];
  free_.pop_back();
  op.wr_id = wr_id;
  op.peer = peer;
  op.rail = rail;
  op.kind = kind;
  op.bytes = 0;
  op.notice = false;
  op.req = nullptr;
  op.buf = nullptr;
  op.capacity = 0;
  op.finished = false;
  return &op;
}

void UcxTransport::cancel_receives_into(const std::byte* data, size_t length) noexcept {
  if (deferred_ != kNoOp) hand_over_receive();  // then cancelled with the others
  bool cancelled = false;
  for (auto& op : ops_) {
    if (op.req == nullptr || op.buf < data || op.buf >= data + length) continue;
    ucp_request_cancel(rails_[static_cast<size_t>(op.rail)]->core->worker, op.req);
    cancelled = true;
  }
  // The cancelled receives end (with UCS_ERR_CANCELED) inside progress.
  for (int i = 0; cancelled && i < 1000; ++i) {
    cancelled = false;
    for (auto& rail : rails_) ucp_worker_progress(rail->core->worker);
    for (auto& op : ops_) cancelled = cancelled || (op.req != nullptr && op.buf >= data && op.buf < data + length);
  }
}

void UcxTransport::finish(Op& op, ucs_status_t st, size_t bytes) noexcept {
  op.req = nullptr;
  op.finished = true;
  Completion c{op.wr_id, op.peer, op.rail, op.kind, Status::ok, bytes, 0};
  if (st != UCS_OK) {
    c.status = Status::error;
    const Rail& r = *rails_[static_cast<size_t>(op.rail)];
    // A receive cancelled because its peer failed reports the endpoint's failure.
    const ucs_status_t ep_st = r.failed[static_cast<size_t>(op.peer)];
    const ucs_status_t why = ep_st != UCS_OK ? ep_st : st;
    // The first failed completion not yet handed out explains itself; the ones queued
    // behind it keep its message, which is the one the caller reads for it.
    if (failed_queued_++ == 0)
      set_error(
          "{} with peer {} on rail {} ({}): {} ({}){}", to_string(op.kind), op.peer, op.rail, r.core->device,
          ucs_status_string(why), status_name(why),
          ep_st != UCS_OK ? "; the endpoint to that peer failed: the peer process died or its link went down" : "");
  }
  push(Done{c, op.index, nullptr});
}

void UcxTransport::peer_failed(int rail, int peer, ucs_status_t st) noexcept {
  Rail& r = *rails_[static_cast<size_t>(rail)];
  if (r.failed[static_cast<size_t>(peer)] != UCS_OK) return;
  const ucs_status_t why = st == UCS_OK ? UCS_ERR_ENDPOINT_TIMEOUT : st;  // never "failed: OK"
  r.failed[static_cast<size_t>(peer)] = why;
  r.receives_to_fail = true;
  chores_ = true;
  if (failed_queued_ == 0)
    set_error("the endpoint to peer {} on rail {} ({}) failed: {} ({}): the peer process died or its link went down",
              peer, rail, r.core->device, ucs_status_string(why), status_name(why));
}

// Tagged receives belong to the worker, so UCX does not end those of a failed peer:
// they are cancelled here (outside the error callback) and finish() names the failure.
void UcxTransport::fail_receives_of_failed_peers(Rail& r) noexcept {
  r.receives_to_fail = false;
  for (auto& op : ops_) {
    if (op.req == nullptr || &*rails_[static_cast<size_t>(op.rail)] != &r) continue;
    if (r.failed[static_cast<size_t>(op.peer)] != UCS_OK) ucp_request_cancel(r.core->worker, op.req);
  }
}

// A post to a peer whose endpoint failed completes at once with that failure (as a post
// to a broken queue pair of verbs fails), so the caller hears of it from poll() as of
// any failed operation, with the peer named. Returns false while the endpoint works.
bool UcxTransport::fail_at_once(Rail& r, int peer, int rail, OpKind kind, uint64_t wr_id, Status& out) noexcept {
  const ucs_status_t st = r.failed[static_cast<size_t>(peer)];
  if (st == UCS_OK) return false;
  Op* op = take_op(peer, rail, kind, wr_id);
  out = op == nullptr ? Status::retry : Status::ok;
  if (op != nullptr) finish(*op, st, 0);
  return true;
}

void UcxTransport::flushed(Op& op, ucs_status_t st) noexcept {
  if (st == UCS_OK && op.notice) {
    notices_.push_back(op.index);  // sent from poll(), outside the callback
    chores_ = true;
    return;
  }
  finish(op, st, op.bytes);
}

void UcxTransport::imm_arrived(ImmSlot& slot, ucs_status_t st, uint64_t tag) noexcept {
  if (st == UCS_ERR_CANCELED) return;  // teardown
  Completion c{0, static_cast<int>(tag & ~kImmBit), slot.rail, OpKind::remote_write_imm, Status::ok, 0, slot.value};
  if (st != UCS_OK) {
    c.status = Status::error;
    if (failed_queued_++ == 0)
      set_error("write-with-imm notice on rail {}: {} ({})", slot.rail, ucs_status_string(st), status_name(st));
  }
  push(Done{c, kNoOp, &slot});  // posted again once poll() has handed this out
}

void UcxTransport::post_imm_slot(ImmSlot& slot) noexcept {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = imm_done;
  p.user_data = &slot;
  void* req = ucp_tag_recv_nbx(rails_[static_cast<size_t>(slot.rail)]->core->worker, &slot.value, 4,
                               kImmBit | static_cast<uint64_t>(slot.peer), kAllBits, &p);
  if (UCS_PTR_IS_ERR(req)) {
    set_error("posting a notice receive on rail {}: {}", slot.rail, ucs_status_string(UCS_PTR_STATUS(req)));
    return;
  }
  slot.req = req;
}

// A post's request: NULL finished at once, an error failed, anything else runs on.
bool UcxTransport::accepted(void* req, Op& op, const char* what) noexcept {
  if (req == nullptr) {
    finish(op, UCS_OK, op.bytes);
    return true;
  }
  if (UCS_PTR_IS_ERR(req)) {
    const ucs_status_t st = UCS_PTR_STATUS(req);
    set_error("{} with peer {} on rail {} ({}): {} ({})", what, op.peer, op.rail,
              rails_[static_cast<size_t>(op.rail)]->core->device, ucs_status_string(st), status_name(st));
    release(op);
    return false;
  }
  return true;
}

Status UcxTransport::post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept {
  if (!valid_target("send", peer, rail)) return Status::error;
  Rail& r = *rails_[static_cast<size_t>(rail)];
  ucp_ep_h ep = r.eps[static_cast<size_t>(peer)];
  if (ep == nullptr) {
    set_error("send to peer {} on rail {}: not connected", peer, rail);
    return Status::error;
  }
  if (Status s; fail_at_once(r, peer, rail, OpKind::send, wr_id, s)) return s;
  Op* op = take_op(peer, rail, OpKind::send, wr_id);
  if (op == nullptr) return Status::retry;
  op->bytes = src.length;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = send_done;
  p.user_data = op;
  void* req = ucp_tag_send_nbx(ep, src.mr->at(src.offset), src.length, static_cast<ucp_tag_t>(rank_), &p);
  const bool ok = accepted(req, *op, "send");
  if (deferred_ != kNoOp) hand_over_receive();  // the send has left: now the receive
  return ok ? Status::ok : Status::error;
}

Status UcxTransport::post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept {
  if (!valid_target("recv", peer, rail)) return Status::error;
  Rail& r = *rails_[static_cast<size_t>(rail)];
  if (Status s; fail_at_once(r, peer, rail, OpKind::recv, wr_id, s)) return s;
  Op* op = take_op(peer, rail, OpKind::recv, wr_id);
  if (op == nullptr) return Status::retry;
  // Receives reach UCX in the order they were posted: an earlier one goes first.
  if (deferred_ != kNoOp) hand_over_receive();
  op->buf = dst.mr->at(dst.offset);
  op->capacity = dst.length;
  deferred_ = op->index;
  return Status::ok;
}

// A receive that UCX refuses now completes with status error (its post said ok), which
// the caller hears of from poll() with the reason in last_error().
void UcxTransport::hand_over_receive() noexcept {
  Op& op = ops_[deferred_];
  deferred_ = kNoOp;
  Rail& r = *rails_[static_cast<size_t>(op.rail)];
  if (const ucs_status_t st = r.failed[static_cast<size_t>(op.peer)]; st != UCS_OK) {
    finish(op, st, 0);  // its peer failed since the post
    return;
  }
  ucp_request_param_t p{};
  // Always through the callback: UCX 1.13 leaves recv_info unfilled (length 0) when a
  // receive matches an unexpected message at once.
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = recv_done;
  p.user_data = &op;
  void* req = ucp_tag_recv_nbx(r.core->worker, op.buf, op.capacity, static_cast<ucp_tag_t>(op.peer), kAllBits, &p);
  if (UCS_PTR_IS_ERR(req)) {
    finish(op, UCS_PTR_STATUS(req), 0);
    return;
  }
  if (!op.finished) op.req = req;  // a callback inside ucp_tag_recv_nbx may have finished it already
}

bool UcxTransport::lookup_rkey(Rail& r, int rail, int peer, const RemoteSpan& dst, size_t length,
                               ucp_rkey_h& out) noexcept {
  const RemoteKey& key = *dst.key;
  const size_t idx = static_cast<size_t>(rail);
  // UCX's software RMA (tcp) does not check bounds: a span past the region is refused here.
  if (dst.offset + length > key.length) {
    set_error("remote span of {} bytes at offset {} is outside the {}-byte region of peer {} on rail {}", length,
              dst.offset, key.length, peer, rail);
    return false;
  }
  if (idx >= key.rails.size() || key.rails[idx].packed.empty()) {
    set_error("remote key for peer {} on rail {} has no UCX rkey (was it made by -t ucx?)", peer, idx);
    return false;
  }
  const RailKey& rk = key.rails[idx];
  auto it = r.rkeys.find({peer, rk.key});
  if (it != r.rkeys.end()) {
    out = it->second;
    return true;
  }
  ucp_rkey_h h = nullptr;
  const ucs_status_t st = ucp_ep_rkey_unpack(r.eps[static_cast<size_t>(peer)], rk.packed.data(), &h);
  if (st != UCS_OK) {
    set_error("unpacking the remote key of peer {} on rail {}: {}", peer, idx, ucs_status_string(st));
    return false;
  }
  try {
    r.rkeys.emplace(std::make_pair(peer, rk.key), h);
  } catch (...) {
    ucp_rkey_destroy(h);
    set_error("out of memory caching a remote key of peer {}", peer);
    return false;
  }
  out = h;
  return true;
}

Status UcxTransport::post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                                      uint64_t wr_id) noexcept {
  if (!valid_target("write", peer, rail)) return Status::error;
  if (ops.empty() || ops.size() > kMaxBatch) {
    set_error("batched write of {} to peer {} on rail {}: a batch holds 1..{} writes", ops.size(), peer, rail,
              kMaxBatch);
    return Status::error;
  }
  Rail& r = *rails_[static_cast<size_t>(rail)];
  ucp_ep_h ep = r.eps[static_cast<size_t>(peer)];
  if (ep == nullptr) {
    set_error("write to peer {} on rail {}: not connected", peer, rail);
    return Status::error;
  }
  if (Status s; fail_at_once(r, peer, rail, OpKind::write, wr_id, s)) return s;
  if (free_.empty()) return Status::retry;
  size_t total = 0;
  for (const auto& w : ops) {
    ucp_rkey_h rkey = nullptr;
    if (!lookup_rkey(r, rail, peer, w.dst, w.src.length, rkey)) return Status::error;
    const uint64_t raddr = w.dst.key->rails[static_cast<size_t>(rail)].addr + w.dst.offset;
    ucp_request_param_t p{};
    void* req = ucp_put_nbx(ep, w.src.mr->at(w.src.offset), w.src.length, raddr, rkey, &p);
    if (UCS_PTR_IS_ERR(req)) {
      // Earlier puts of the batch may be in flight: the batch is reported failed, not retried.
      set_error("write of {} bytes to peer {} on rail {}: {}", w.src.length, peer, rail,
                ucs_status_string(UCS_PTR_STATUS(req)));
      return Status::error;
    }
    if (req != nullptr) ucp_request_free(req);  // UCX releases it when it ends; the flush waits for it
    total += w.src.length;
  }
  Op* op = take_op(peer, rail, OpKind::write, wr_id);
  op->bytes = total;
  op->notice = imm.has_value();
  op->imm = imm.value_or(0);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = flush_done;
  p.user_data = op;
  void* req = ucp_ep_flush_nbx(ep, &p);
  if (req == nullptr) {
    flushed(*op, UCS_OK);
    return Status::ok;
  }
  return accepted(req, *op, "flush after write") ? Status::ok : Status::error;
}

void UcxTransport::post_notice(Op& op) noexcept {
  Rail& r = *rails_[static_cast<size_t>(op.rail)];
  op.notice = false;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = send_done;
  p.user_data = &op;
  void* req =
      ucp_tag_send_nbx(r.eps[static_cast<size_t>(op.peer)], &op.imm, 4, kImmBit | static_cast<uint64_t>(rank_), &p);
  if (req == nullptr) {
    finish(op, UCS_OK, op.bytes);
  } else if (UCS_PTR_IS_ERR(req)) {
    finish(op, UCS_PTR_STATUS(req), 0);
  }
}

Status UcxTransport::post_read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src,
                               uint64_t wr_id) noexcept {
  if (!valid_target("read", peer, rail)) return Status::error;
  Rail& r = *rails_[static_cast<size_t>(rail)];
  ucp_ep_h ep = r.eps[static_cast<size_t>(peer)];
  if (ep == nullptr) {
    set_error("read from peer {} on rail {}: not connected", peer, rail);
    return Status::error;
  }
  if (Status s; fail_at_once(r, peer, rail, OpKind::read, wr_id, s)) return s;
  ucp_rkey_h rkey = nullptr;
  if (!lookup_rkey(r, rail, peer, src, dst.length, rkey)) return Status::error;
  Op* op = take_op(peer, rail, OpKind::read, wr_id);
  if (op == nullptr) return Status::retry;
  op->bytes = dst.length;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = send_done;
  p.user_data = op;
  const uint64_t raddr = src.key->rails[static_cast<size_t>(rail)].addr + src.offset;
  void* req = ucp_get_nbx(ep, dst.mr->at(dst.offset), dst.length, raddr, rkey, &p);
  return accepted(req, *op, "read") ? Status::ok : Status::error;
}

void UcxTransport::do_chores() noexcept {
  chores_ = false;
  // Notice receives whose completions the last poll handed out are posted again.
  for (ImmSlot* slot : reposts_) post_imm_slot(*slot);
  reposts_.clear();
  for (auto& rail : rails_)
    if (rail->receives_to_fail) fail_receives_of_failed_peers(*rail);
  // Notices go out after the flush that orders them, from here rather than the callback.
  for (size_t i = 0; i < notices_.size(); ++i) post_notice(ops_[notices_[i]]);
  notices_.clear();
}

size_t UcxTransport::poll(std::span<Completion> out) noexcept {
  // The idle poll of a wait is the loop a message's arrival is noticed in: it is kept to
  // the progress calls and two flags, as ucx_perftest spins on ucp_worker_progress alone.
  if (deferred_ != kNoOp) hand_over_receive();
  if (chores_) do_chores();
  // One progress call per rail: a second one, to drain, costs a whole pass over UCX's
  // transports, which an 8 B ping-pong pays on every message; the caller polls again.
  for (ucp_worker_h worker : workers_) ucp_worker_progress(worker);
  if (chores_) do_chores();  // a flush ended or a peer failed inside progress
  size_t n = 0;
  while (n < out.size() && done_head_ != done_tail_) {
    const Done& d = done_[done_head_++ & done_mask_];
    out[n++] = d.c;
    if (d.c.status != Status::ok) --failed_queued_;
    if (d.op != kNoOp) release(ops_[d.op]);
    if (d.slot != nullptr) {
      reposts_.push_back(d.slot);  // room reserved: never allocates
      chores_ = true;
    }
  }
  return n;
}

std::unique_ptr<MemoryRegion> UcxTransport::register_memory(void* data, size_t length, MemoryKind kind) {
  if (kind != MemoryKind::host)
    throw UnsupportedError(
        fmt::format("ucx: {} memory needs a UCX built with CUDA ({} here lists no cuda memory "
                    "type; ucx_info -d shows cuda_copy where it has one): use --mem host",
                    to_string(kind), ucx_version()));
  std::vector<std::shared_ptr<RailCore>> cores;
  for (const auto& r : rails_) cores.push_back(r->core);
  const uint64_t id = (static_cast<uint64_t>(rank_) << 40) | next_region_id_++;
  return make_region(data, length, std::move(cores), id, cell_);
}

bool cuda_supported() {
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA;
  ucp_config_t* raw = nullptr;
  if (ucp_config_read(nullptr, nullptr, &raw) != UCS_OK) return false;
  std::unique_ptr<ucp_config_t, ConfigFree> config(raw);
  ucp_context_h ctx = nullptr;
  if (ucp_init(&params, raw, &ctx) != UCS_OK) return false;
  std::unique_ptr<ucp_context, ContextFree> guard(ctx);
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(ctx, &attr) != UCS_OK) return false;
  return (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

std::unique_ptr<Transport> make_transport(const UcxOptions& options, int rank, int world_size) {
  check_options(options);
  if (options.cuda && !cuda_supported())
    throw UnsupportedError(
        fmt::format("ucx: --mem cuda needs a UCX built with CUDA; UCX {} here has no cuda memory "
                    "type (ucx_info -d lists no cuda_copy): use --mem host or another -t",
                    ucx_version()));
  return std::make_unique<UcxTransport>(options, rank, world_size);
}

}  // namespace railbench::ucx
