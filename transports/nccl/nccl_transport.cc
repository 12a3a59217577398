// Operations posted between two poll() calls are issued together, inside one
// ncclGroupStart/End, so a rank that posts a receive and a send to the same peer (or
// all-to-all's sends and receives) never waits on itself. One CUDA event after each
// group marks its completion; poll() queries events and never blocks. At most kMaxOps
// operations are outstanding (posted, not yet handed back by poll()): the post after
// that answers Status::retry, and the poll the caller then makes issues the batch so
// far, so a send to oneself and its receive must not straddle that point.
#include "transports/nccl/nccl_transport.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"
#include "lib/transport/gpu.h"
#include "lib/transport/transport_base.h"

extern char** environ;

namespace railbench::nccl {

namespace {

void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw TransportError(fmt::format("{} failed: {} ({})", call, cudaGetErrorName(e), cudaGetErrorString(e)));
}

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::f32: return ncclFloat32;
    case DataType::f64: return ncclFloat64;
    case DataType::f16: return ncclFloat16;
    case DataType::bf16: return ncclBfloat16;
    case DataType::i32: return ncclInt32;
    case DataType::i64: return ncclInt64;
    case DataType::u8: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
  }
  return ncclSum;
}

// RAII for the stream, events and communicator.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { check_cuda(cudaEventCreate(&e), "cudaEventCreate"); }
  ~Event() {
    if (e) cudaEventDestroy(e);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

struct Comm {
  ncclComm_t c = nullptr;
  bool abort = true;
  ~Comm() {
    if (!c) return;
    // Destroy waits for outstanding work, which after a failed peer never finishes:
    // abort unless everything posted has completed.
    if (abort) {
      ncclCommAbort(c);
    } else {
      ncclCommDestroy(c);
    }
  }
};

class NcclMemoryRegion : public MemoryRegion {
 public:
  using MemoryRegion::MemoryRegion;
  RemoteKey remote_key() const override { return RemoteKey{length(), {}}; }
};

struct Op {
  enum class Kind { send, recv, collective } kind;
  int peer = -1;
  const void* src = nullptr;
  void* dst = nullptr;
  size_t bytes = 0;
  CollectiveOp coll;
  uint64_t wr_id = 0;
};

// Operations issued together, done when `end` has fired on the stream: ring positions
// [previous group's last, last) of the op ring.
struct Group {
  uint64_t last = 0;
  Event start, end;
};

// The data path allocates nothing: ops go into a ring and groups into another, both
// sized (and the groups' CUDA events created) at setup. A full op ring answers
// Status::retry; with every group in flight, poll() issues nothing until one finishes.
constexpr size_t kMaxOps = 4096;
constexpr size_t kMaxGroups = 64;

class NcclTransport final : public TransportBase {
 public:
  NcclTransport(const NcclOptions& o, int rank, int world_size)
      : TransportBase(rank, world_size), gpu_(o.gpu), ops_(kMaxOps) {
    gpu::set_device(gpu_);
    stream_ = std::make_unique<Stream>();
    groups_ = std::make_unique<Group[]>(kMaxGroups);
    caps_.send_recv = true;
    caps_.native_collectives = true;
    caps_.device_memory = true;
    caps_.max_msg_size = size_t{1} << 40;
    caps_.max_outstanding = kMaxOps;  // the ring of queued operations, over all peers
    info_ = gpu::device_info(gpu_);
    provider_ = fmt::format("nccl {} on GPU {} ({})", version(), gpu_, info_.pci_bus_id);
  }
  ~NcclTransport() override { comm_.abort = failed_ || done_ != tail_; }

  std::string name() const override { return "nccl"; }
  int num_rails() const override { return 1; }
  RailInfo rail_info(int) const override {
    // NCCL picks its NICs itself (NCCL_IB_HCA steers it); the rail is the GPU.
    return RailInfo{fmt::format("gpu{}", gpu_), "nccl", info_.pci_bus_id, 0, 0};
  }

  std::vector<uint8_t> local_address(int) const override { return {}; }
  void connect(int, int, std::span<const uint8_t>) override {
    throw UnsupportedError("the nccl transport connects all ranks at once: use connect_all");
  }

  void connect_all(Bootstrap& bootstrap) override {
    ncclUniqueId id{};
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const auto all = bootstrap.all_gather_value(id);
    id = all[0];
    gpu::set_device(gpu_);
    check_nccl(ncclCommInitRank(&comm_.c, world_size_, id, rank_), "ncclCommInitRank");
  }

  std::unique_ptr<MemoryRegion> register_memory(void* data, size_t length, MemoryKind kind) override {
    if (kind == MemoryKind::host) {
      throw UsageError(
          "the nccl transport moves GPU memory only (asked to register host memory): use --mem cuda (the default for "
          "-t nccl) or --mem cuda-host");
    }
    if (data == nullptr || length == 0) {
      throw UsageError(fmt::format("cannot register an empty buffer ({} bytes at {})", length, data));
    }
    // NCCL needs no registration for send/recv and collectives.
    return std::make_unique<NcclMemoryRegion>(data, length, kind);
  }

  Status post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept override {
    if (!valid_target("send", peer, rail)) return Status::error;
    return push(Op{Op::Kind::send, peer, src.mr->at(src.offset), nullptr, src.length, {}, wr_id});
  }
  Status post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept override {
    if (!valid_target("recv", peer, rail)) return Status::error;
    return push(Op{Op::Kind::recv, peer, nullptr, dst.mr->at(dst.offset), dst.length, {}, wr_id});
  }
  Status post_write(int, int, const LocalSpan&, const RemoteSpan&, uint64_t) noexcept override {
    return unsupported("RDMA write");
  }
  Status post_write_imm(int, int, const LocalSpan&, const RemoteSpan&, uint32_t, uint64_t) noexcept override {
    return unsupported("RDMA write with immediate");
  }
  Status post_read(int, int, const LocalSpan&, const RemoteSpan&, uint64_t) noexcept override {
    return unsupported("RDMA read");
  }
  Status post_collective(const CollectiveOp& op, uint64_t wr_id) noexcept override {
    return push(Op{Op::Kind::collective, rank_, nullptr, nullptr, 0, op, wr_id});
  }

  size_t poll(std::span<Completion> out) noexcept override {
    if (issued_ != tail_ && !flush()) return fail_all(out);
    size_t n = 0;
    while (group_head_ != group_tail_ && n < out.size()) {
      Group& g = group(group_head_);
      const cudaError_t e = cudaEventQuery(g.end.e);
      if (e == cudaErrorNotReady) break;
      if (e != cudaSuccess) {
        set_error("rank {}: NCCL operations failed on the stream: {}", rank_, cudaGetErrorString(e));
        return fail_all(out);
      }
      float ms = 0;
      if (cudaEventElapsedTime(&ms, g.start.e, g.end.e) == cudaSuccess) last_device_us_ = ms * 1e3;
      while (done_ < g.last && n < out.size()) {
        const Op& op = at(done_++);
        out[n++] = Completion{op.wr_id, op.peer, 0, kind_of(op), Status::ok, op.bytes, 0};
      }
      if (done_ == g.last) ++group_head_;
    }
    if (n == 0 && group_head_ != group_tail_) {
      // A peer that died leaves the stream waiting forever: NCCL reports it here.
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm_.c, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress) {
        set_error("rank {}: NCCL reported an asynchronous error: {} ({})", rank_, ncclGetErrorString(async),
                  ncclGetLastError(comm_.c));
        return fail_all(out);
      }
    }
    return n;
  }

  double device_time_us() const override { return last_device_us_; }

 private:
  static OpKind kind_of(const Op& op) {
    switch (op.kind) {
      case Op::Kind::send: return OpKind::send;
      case Op::Kind::recv: return OpKind::recv;
      default: return OpKind::collective;
    }
  }

  Op& at(uint64_t pos) noexcept { return ops_[pos % kMaxOps]; }
  Group& group(uint64_t pos) noexcept { return groups_[pos % kMaxGroups]; }

  // Queues one operation for the next flush; retry when the ring is full (poll hands
  // finished ones back and frees their places).
  Status push(const Op& op) noexcept {
    if (tail_ - done_ == kMaxOps) return Status::retry;
    at(tail_++) = op;
    return Status::ok;
  }

  void check_nccl(ncclResult_t r, const char* call) {
    if (r == ncclSuccess) return;
    const char* detail = comm_.c ? ncclGetLastError(comm_.c) : ncclGetLastError(nullptr);
    throw TransportError(fmt::format("rank {}: {} failed: {} ({}); NCCL_DEBUG=INFO shows why", rank_, call,
                                     ncclGetErrorString(r), detail && *detail ? detail : "no detail"));
  }

  Status unsupported(const char* what) noexcept {
    set_error("the nccl transport has no {} (caps say so): use -t verbs or -t ofi", what);
    return Status::error;
  }

  ncclResult_t issue(const Op& op) noexcept {
    const ncclComm_t c = comm_.c;
    const cudaStream_t s = stream_->s;
    switch (op.kind) {
      case Op::Kind::send: return ncclSend(op.src, op.bytes, ncclUint8, op.peer, c, s);
      case Op::Kind::recv: return ncclRecv(op.dst, op.bytes, ncclUint8, op.peer, c, s);
      case Op::Kind::collective: break;
    }
    const CollectiveOp& k = op.coll;
    const void* in = k.send.mr->at(k.send.offset);
    void* out = k.recv.mr->at(k.recv.offset);
    const ncclDataType_t t = nccl_type(k.dtype);
    switch (k.kind) {
      case CollectiveKind::all_reduce: return ncclAllReduce(in, out, k.count, t, nccl_op(k.op), c, s);
      case CollectiveKind::all_gather: return ncclAllGather(in, out, k.count, t, c, s);
      case CollectiveKind::reduce_scatter: return ncclReduceScatter(in, out, k.count, t, nccl_op(k.op), c, s);
      case CollectiveKind::all_to_all: {
        const size_t block = k.count * size_of(k.dtype);
        for (int p = 0; p < world_size_; ++p) {
          const auto off = static_cast<size_t>(p) * block;
          ncclResult_t r = ncclSend(static_cast<const std::byte*>(in) + off, k.count, t, p, c, s);
          if (r == ncclSuccess) r = ncclRecv(static_cast<std::byte*>(out) + off, k.count, t, p, c, s);
          if (r != ncclSuccess) return r;
        }
        return ncclSuccess;
      }
    }
    return ncclInvalidArgument;
  }

  // Issues everything posted since the last poll as one group. With every group slot in
  // flight it issues nothing (true): the next poll tries again.
  bool flush() noexcept {
    if (group_tail_ - group_head_ == kMaxGroups) return true;
    Group& g = group(group_tail_);
    if (cudaEventRecord(g.start.e, stream_->s) != cudaSuccess) return fail_flush("cudaEventRecord");
    ncclResult_t r = ncclGroupStart();
    for (uint64_t pos = issued_; pos < tail_; ++pos) {
      if (r != ncclSuccess) break;
      r = issue(at(pos));
    }
    const ncclResult_t end = ncclGroupEnd();
    if (r == ncclSuccess) r = end;
    if (r != ncclSuccess) {
      set_error("rank {}: issuing {} NCCL operation(s) failed: {} ({})", rank_, tail_ - issued_, ncclGetErrorString(r),
                ncclGetLastError(comm_.c));
      return false;
    }
    if (cudaEventRecord(g.end.e, stream_->s) != cudaSuccess) return fail_flush("cudaEventRecord");
    g.last = tail_;
    issued_ = tail_;
    ++group_tail_;
    return true;
  }

  bool fail_flush(const char* call) noexcept {
    set_error("rank {}: {} failed: {}", rank_, call, cudaGetErrorString(cudaGetLastError()));
    return false;
  }

  // After an error nothing more will complete: hand every operation, in flight or not
  // yet issued, back as failed.
  size_t fail_all(std::span<Completion> out) noexcept {
    failed_ = true;
    size_t n = 0;
    while (done_ < tail_ && n < out.size()) {
      const Op& op = at(done_++);
      out[n++] = Completion{op.wr_id, op.peer, 0, kind_of(op), Status::error, 0, 0};
    }
    while (group_head_ != group_tail_ && group(group_head_).last <= done_) ++group_head_;
    issued_ = std::max(issued_, done_);
    return n;
  }

  int gpu_;
  gpu::DeviceInfo info_;
  std::unique_ptr<Stream> stream_;
  Comm comm_;
  // Op ring positions only grow: [done_, issued_) is in flight, [issued_, tail_) waits
  // for the next flush.
  std::vector<Op> ops_;
  uint64_t done_ = 0, issued_ = 0, tail_ = 0;
  std::unique_ptr<Group[]> groups_;  // ring [group_head_, group_tail_) in flight
  uint64_t group_head_ = 0, group_tail_ = 0;
  double last_device_us_ = -1;
  bool failed_ = false;  // an error left work on the stream that will never finish
};

}  // namespace

std::string version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch.
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("NCCL_", 0) != 0) continue;
    const auto eq = kv.find('=');
    out[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  return out;
}

std::unique_ptr<Transport> make_transport(const NcclOptions& options, int rank, int world_size) {
  const int devices = gpu::require_devices("-t nccl");
  if (options.gpu < 0 || options.gpu >= devices) {
    throw UsageError(
        fmt::format("-t nccl on GPU {}: this node has GPUs 0..{} (see --gpu-map)", options.gpu, devices - 1));
  }
  return std::make_unique<NcclTransport>(options, rank, world_size);
}

}  // namespace railbench::nccl
