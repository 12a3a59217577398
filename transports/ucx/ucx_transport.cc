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
//   receives posted for that peer, which UCX ties to the worker, not to the endpoint.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <ucp/api/ucp.h>

#include "lib/core/errors.h"
#include "lib/transport/transport_base.h"
#include "transports/ucx/ucx_rxe.h"
#include "transports/ucx/ucx_status.h"
#include "transports/ucx/ucx_transport.h"

namespace railbench::ucx {

namespace {

constexpr uint64_t kImmBit = uint64_t{1} << 63;
constexpr uint64_t kAllBits = ~uint64_t{0};
constexpr size_t kMaxOps = 16384;  // operations in flight, all peers and rails
// Notices pre-posted per peer and rail; UCX keeps the rest unexpected. Each matches its
// peer's full tag: a receive with a partial tag mask goes on UCX's wildcard list, which
// every arriving message then scans (64 of them cost an 8 B ping-pong ~0.13 us a message).
constexpr size_t kImmSlots = 2;
constexpr size_t kMaxBatch = 256;

struct ConfigFree {
  void operator()(ucp_config_t* c) const { ucp_config_release(c); }
};
struct ContextFree {
  void operator()(ucp_context* c) const { ucp_cleanup(c); }
};

// Sets a UCX option for this context unless the user set it or one it stands for
// (UCX_<name> or UCX_<alias> in the environment): a setting of the user's wins.
void set_default(ucp_config_t* config, const char* name, const char* value,
                 std::initializer_list<const char*> aliases = {}) {
  if (std::getenv(fmt::format("UCX_{}", name).c_str()) != nullptr) return;
  for (const char* alias : aliases)
    if (std::getenv(fmt::format("UCX_{}", alias).c_str()) != nullptr) return;
  const ucs_status_t st = ucp_config_modify(config, name, value);
  if (st != UCS_OK)
    throw TransportError(fmt::format("UCX_{}={}: {} (UCX {})", name, value, ucs_status_string(st), ucx_version()));
}

// Whether UCX_TLS (empty: UCX picks) may bring in posix or sysv shared memory.
bool may_use_shared_memory(const std::string& tls) {
  if (tls.empty()) return true;
  for (const char* name : {"sm", "shm", "mm", "posix", "sysv", "all"})
    if (tls.find(name) != std::string::npos) return true;
  return false;
}

// Waits up to `seconds` for `req` (an ucp request or status pointer), driving `worker`.
bool wait_request(ucp_worker_h worker, void* req, double seconds) {
  if (req == nullptr) return true;
  if (UCS_PTR_IS_ERR(req)) return false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS && std::chrono::steady_clock::now() < end)
    ucp_worker_progress(worker);
  // A request still in progress is released by UCX when it ends (or with the worker).
  ucp_request_free(req);
  return st == UCS_OK;
}

// The context and worker of one rail; regions keep the context alive while they exist.
// The worker goes with the transport (its destructor), since destroying it ends the
// requests still in flight through callbacks into the transport.
struct RailCore {
  std::unique_ptr<ucp_context, ContextFree> context;
  ucp_worker_h worker = nullptr;
  std::string device;
  std::vector<uint8_t> address;
};

// One rail's UCP context, worker and worker address, on `device` ("auto": UCX picks),
// with the settings every endpoint of the transport relies on.
std::shared_ptr<RailCore> open_rail_core(const UcxOptions& o, const std::string& device) {
  auto core = std::make_shared<RailCore>();
  core->device = device;
  ucp_config_t* raw = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &raw);
  if (st != UCS_OK) throw TransportError(fmt::format("ucp_config_read: {}", ucs_status_string(st)));
  std::unique_ptr<ucp_config_t, ConfigFree> config(raw);
  const std::string tls = tls_with_aux(o.tls);  // ucx_rxe.h: rc_verbs needs its auxiliary
  if (!tls.empty() && (st = ucp_config_modify(raw, "TLS", tls.c_str())) != UCS_OK)
    throw UsageError(fmt::format("UCX_TLS={}: {}", tls, ucs_status_string(st)));
  if (!o.devices.empty() && (st = ucp_config_modify(raw, "NET_DEVICES", core->device.c_str())) != UCS_OK)
    throw UsageError(fmt::format("UCX_NET_DEVICES={}: {}", core->device, ucs_status_string(st)));
  // Endpoints ask for peer-failure handling, which every transport on them must offer:
  // UCX 1.13's shared memory (posix, sysv: the MM_ table) offers it only when told, or
  // an shm endpoint is unreachable. It notices a dead same-host peer by its keepalive
  // check, every 20 s by default; 1 s keeps the detection well inside --timeout.
  if (may_use_shared_memory(o.tls))  // elsewhere UCX warns of an option no transport takes
    set_default(raw, "MM_ERROR_HANDLING", "y", {"POSIX_ERROR_HANDLING", "SYSV_ERROR_HANDLING"});
  set_default(raw, "KEEPALIVE_INTERVAL", "1s");
  for (const auto& s : rxe_settings(device)) set_default(raw, s.name.c_str(), s.value.c_str(), {s.alias.c_str()});
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
  ucp_context_h ctx = nullptr;
  st = ucp_init(&params, raw, &ctx);
  if (st != UCS_OK)
    throw TransportError(fmt::format("ucp_init with UCX_TLS={} on device {}: {} (ucx_info -d lists what exists)",
                                     o.tls.empty() ? "all" : o.tls, core->device, ucs_status_string(st)));
  core->context.reset(ctx);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;  // one thread drives a transport (transport.h)
  st = ucp_worker_create(ctx, &wp, &core->worker);
  if (st != UCS_OK)
    throw TransportError(fmt::format("ucp_worker_create on device {}: {}", core->device, ucs_status_string(st)));
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  st = ucp_worker_get_address(core->worker, &addr, &len);
  if (st != UCS_OK)
    throw TransportError(fmt::format("ucp_worker_get_address on device {}: {}", core->device, ucs_status_string(st)));
  core->address.assign(reinterpret_cast<uint8_t*>(addr), reinterpret_cast<uint8_t*>(addr) + len);
  ucp_worker_release_address(core->worker, addr);
  return core;
}

class UcxTransport;

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
  bool finished = false;           // its completion is queued for poll()
  void* req = nullptr;             // a receive still posted (cancelled when its region goes)
  const std::byte* buf = nullptr;  // where that receive lands
};

struct ImmSlot {
  UcxTransport* t = nullptr;
  int rail = 0;
  int peer = 0;  // whose notices it takes
  uint32_t value = 0;
  void* req = nullptr;  // the posted receive, cancelled at teardown
};

// Set to the transport while it lives: a region going away first cancels the receives
// still posted into it, or UCX would later copy a message into freed memory.
using TransportCell = std::shared_ptr<UcxTransport*>;
void cancel_receives_into(UcxTransport* t, const std::byte* data, size_t length);

class UcxRegion : public MemoryRegion {
 public:
  UcxRegion(void* data, size_t length, std::vector<std::shared_ptr<RailCore>> rails, uint64_t id, TransportCell cell)
      : MemoryRegion(data, length, MemoryKind::host), rails_(std::move(rails)), cell_(std::move(cell)) {
    key_.length = length;
    for (const auto& core : rails_) {
      ucp_mem_map_params_t p{};
      p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
      p.address = data;
      p.length = std::max<size_t>(length, 1);
      ucp_mem_h memh = nullptr;
      ucs_status_t st = ucp_mem_map(core->context.get(), &p, &memh);
      if (st != UCS_OK)
        throw TransportError(
            fmt::format("ucp_mem_map of {} bytes on device {}: {}", length, core->device, ucs_status_string(st)));
      memhs_.push_back(memh);
      void* buf = nullptr;
      size_t size = 0;
      st = ucp_rkey_pack(core->context.get(), memh, &buf, &size);
      if (st != UCS_OK)
        throw TransportError(fmt::format("ucp_rkey_pack on device {}: {}", core->device, ucs_status_string(st)));
      RailKey rk{reinterpret_cast<uint64_t>(data), id, {}};
      rk.packed.assign(static_cast<uint8_t*>(buf), static_cast<uint8_t*>(buf) + size);
      ucp_rkey_buffer_release(buf);
      key_.rails.push_back(std::move(rk));
    }
  }
  ~UcxRegion() override {
    if (*cell_ != nullptr) cancel_receives_into(*cell_, at(0), length());
    for (size_t i = 0; i < memhs_.size(); ++i) ucp_mem_unmap(rails_[i]->context.get(), memhs_[i]);
  }
  RemoteKey remote_key() const override { return key_; }

 private:
  std::vector<std::shared_ptr<RailCore>> rails_;
  std::vector<ucp_mem_h> memhs_;
  RemoteKey key_;
  TransportCell cell_;
};

// What the error callback of one endpoint is told: whose endpoint failed.
struct EpOwner {
  UcxTransport* t = nullptr;
  int rail = 0;
  int peer = 0;
};
void ep_failed(void* arg, ucp_ep_h ep, ucs_status_t st);

struct Rail {
  std::shared_ptr<RailCore> core;
  std::vector<ucp_ep_h> eps;         // per peer; nullptr until connected
  std::vector<EpOwner> owners;       // per peer: the error callback's argument
  std::vector<ucs_status_t> failed;  // per peer: UCS_OK while its endpoint works
  bool receives_to_fail = false;     // a peer failed: poll() fails its posted receives
  std::vector<ImmSlot> imm_slots;
  // Unpacked remote keys by (peer, region id).
  std::map<std::pair<int, uint64_t>, ucp_rkey_h> rkeys;

  RailInfo describe() const {
    return RailInfo{core->device, "", fmt::format("{} byte worker address", core->address.size()), 0, 0};
  }
  std::vector<uint8_t> blob() const { return core->address; }
  void connect(int peer, std::span<const uint8_t> remote);
};

void Rail::connect(int peer, std::span<const uint8_t> remote) {
  if (eps[static_cast<size_t>(peer)] != nullptr) return;
  std::vector<uint8_t> addr(remote.begin(), remote.end());
  ucp_ep_params_t p{};
  p.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t*>(addr.data());
  // A dead peer then fails this endpoint's operations instead of leaving them to a
  // deadline (or UCX aborting the process, its default).
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = ep_failed;
  p.err_handler.arg = &owners[static_cast<size_t>(peer)];
  ucp_ep_h ep = nullptr;
  const ucs_status_t st = ucp_ep_create(core->worker, &p, &ep);
  if (st != UCS_OK)
    throw TransportError(fmt::format("ucp_ep_create to peer {} on device {}: {} (do both ranks share a transport?)",
                                     peer, core->device, ucs_status_string(st)));
  eps[static_cast<size_t>(peer)] = ep;
}

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

  std::vector<Op> ops_;
  std::vector<uint32_t> free_;
  std::vector<Done> done_;
  size_t done_head_ = 0;
  size_t done_tail_ = 0;
  size_t done_mask_ = 0;
  size_t failed_queued_ = 0;       // failed completions in done_
  std::vector<ImmSlot*> reposts_;  // notice receives to post again at the next poll()
  std::vector<uint32_t> notices_;  // write-with-imm ops whose flush ended, notice not yet sent
  uint64_t next_region_id_ = 1;
  TransportCell cell_ = std::make_shared<UcxTransport*>(this);
};

void cancel_receives_into(UcxTransport* t, const std::byte* data, size_t length) {
  t->cancel_receives_into(data, length);
}

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
void ep_failed(void* arg, ucp_ep_h /*ep*/, ucs_status_t st) {
  auto* owner = static_cast<EpOwner*>(arg);
  owner->t->peer_failed(owner->rail, owner->peer, st);
}
void imm_done(void* req, ucs_status_t st, const ucp_tag_recv_info_t* info, void* user) {
  auto* slot = static_cast<ImmSlot*>(user);
  slot->req = nullptr;
  slot->t->imm_arrived(*slot, st, st == UCS_OK ? info->sender_tag : 0);
  ucp_request_free(req);
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
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;  // a dead peer must not hold up teardown
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
  op.finished = false;
  return &op;
}

void UcxTransport::cancel_receives_into(const std::byte* data, size_t length) noexcept {
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
  return accepted(req, *op, "send") ? Status::ok : Status::error;
}

Status UcxTransport::post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept {
  if (!valid_target("recv", peer, rail)) return Status::error;
  Rail& r = *rails_[static_cast<size_t>(rail)];
  if (Status s; fail_at_once(r, peer, rail, OpKind::recv, wr_id, s)) return s;
  Op* op = take_op(peer, rail, OpKind::recv, wr_id);
  if (op == nullptr) return Status::retry;
  ucp_request_param_t p{};
  // Always through the callback: UCX 1.13 leaves recv_info unfilled (length 0) when a
  // receive matches an unexpected message at once.
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = recv_done;
  p.user_data = op;
  void* req =
      ucp_tag_recv_nbx(r.core->worker, dst.mr->at(dst.offset), dst.length, static_cast<ucp_tag_t>(peer), kAllBits, &p);
  if (!accepted(req, *op, "recv")) return Status::error;
  if (!op->finished) {  // a callback inside ucp_tag_recv_nbx may have finished it already
    op->req = req;
    op->buf = dst.mr->at(dst.offset);
  }
  return Status::ok;
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

size_t UcxTransport::poll(std::span<Completion> out) noexcept {
  // Notice receives whose completions the last poll handed out are posted again.
  for (ImmSlot* slot : reposts_) post_imm_slot(*slot);
  reposts_.clear();
  // One progress call per rail: a second one, to drain, costs a whole pass over UCX's
  // transports, which an 8 B ping-pong pays on every message; the caller polls again.
  for (auto& rail : rails_) {
    ucp_worker_progress(rail->core->worker);
    if (rail->receives_to_fail) fail_receives_of_failed_peers(*rail);
  }
  // Notices go out after the flush that orders them, from here rather than the callback.
  for (size_t i = 0; i < notices_.size(); ++i) post_notice(ops_[notices_[i]]);
  notices_.clear();
  size_t n = 0;
  while (n < out.size() && done_head_ != done_tail_) {
    const Done& d = done_[done_head_++ & done_mask_];
    out[n++] = d.c;
    if (d.c.status != Status::ok) --failed_queued_;
    if (d.op != kNoOp) release(ops_[d.op]);
    if (d.slot != nullptr) reposts_.push_back(d.slot);  // room reserved: never allocates
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
  return std::make_unique<UcxRegion>(data, length, std::move(cores), id, cell_);
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
  if (!o.tls.empty()) {
    std::string rest = o.tls;
    size_t pos = 0;
    while (pos <= rest.size()) {
      const size_t comma = std::min(rest.find(',', pos), rest.size());
      std::string tl = rest.substr(pos, comma - pos);
      if (!tl.empty() && (tl[0] == '^' || tl[0] == '\\')) tl.erase(0, 1);
      if (const size_t colon = tl.find(':'); colon != std::string::npos) tl.erase(colon);  // "ud_verbs:aux"
      if (!tl.empty() && !tls.count(tl) && !kAliases.count(tl))
        throw UsageError(
            fmt::format("ucx: unknown UCX transport '{}': this host's UCX {} offers {} (and aliases shm, "
                        "tcp, rc, ...; see ucx_info -d)",
                        tl, ucx_version(), fmt::join(tls, ", ")));
      pos = comma + 1;
    }
  }
  for (const auto& d : o.devices) {
    if (!devices.count(d))
      throw UsageError(fmt::format("ucx: no device '{}': UCX offers {} (ucx_info -d)", d, fmt::join(devices, ", ")));
  }
}

}  // namespace

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
