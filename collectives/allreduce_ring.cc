#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "collectives/allreduce.h"
#include "collectives/reduce.h"
#include "collectives/ring_common.h"
#include "lib/core/errors.h"
#include "lib/transport/gpu.h"

namespace railbench {

RingProtocol parse_ring_protocol(const std::string& s) {
  if (s == "send") return RingProtocol::send;
  if (s == "write") return RingProtocol::write;
  throw UsageError(fmt::format("unknown --protocol '{}': use send or write", s));
}

const char* to_string(RingProtocol p) {
  switch (p) {
    case RingProtocol::send: return "send";
    case RingProtocol::write: return "write";
  }
  return "unknown";
}

namespace {

struct Range {
  size_t begin = 0, count = 0;
};

// Element range of chunk c when `count` elements are split into n nearly equal chunks.
Range chunk_range(size_t count, int n, int c) {
  const size_t base = count / static_cast<size_t>(n), extra = count % static_cast<size_t>(n);
  const auto uc = static_cast<size_t>(c);
  return Range{uc * base + std::min(uc, extra), base + (uc < extra ? 1 : 0)};
}

// The geometry of one ring all-reduce: 2(n-1) steps; step k (k < n-1: reduce-scatter,
// else all-gather) sends chunk send_chunk(k) to the right and receives recv_chunk(k)
// from the left. send_chunk(k+1) == recv_chunk(k), which is what lets each slice move on
// as soon as it has arrived (and been reduced).
struct RingPlan {
  int n, rank;
  size_t count, slice_elems;
  size_t esize;  // bytes per element

  int steps() const { return 2 * (n - 1); }
  bool is_reduce(int k) const { return k < n - 1; }
  int mod(int x) const { return ring_mod(x, n); }
  int send_chunk(int k) const { return is_reduce(k) ? mod(rank - k) : mod(rank + 1 - (k - (n - 1))); }
  int recv_chunk(int k) const { return is_reduce(k) ? mod(rank - k - 1) : mod(rank - (k - (n - 1))); }
  Range chunk(int c) const { return chunk_range(count, n, c); }
  size_t slices(int c) const { return (chunk(c).count + slice_elems - 1) / slice_elems; }
  Range slice(int c, size_t j) const {
    Range r = chunk(c);
    const size_t first = j * slice_elems;
    return Range{r.begin + first, std::min(slice_elems, r.count - first)};
  }
};

class RingAllReduce final : public AllReduce {
 public:
  RingAllReduce(Progress& progress, const RingOptions& options)
      : p_(progress), t_(progress.transport()), opt_(options), n_(t_.world_size()), rank_(t_.rank()) {
    check_ring_setup(t_, opt_, "all-reduce");
    const bool can_write = t_.caps().write && t_.caps().write_with_imm;
    if (opt_.protocol == RingProtocol::write && !can_write) {
      throw UnsupportedError(
          fmt::format("--protocol write needs RDMA write with immediate, which {} ({}) lacks: use "
                      "--protocol send",
                      t_.name(), t_.provider()));
    }
    opt_.slice_bytes = std::min(std::max<size_t>(opt_.slice_bytes, 64), t_.caps().max_msg_size);
    // Two chunk-sized halves: step k lands in half k%2 while step k-1's half is still
    // being reduced. Each half starts on a cache line, so every element is aligned.
    half_bytes_ = ring_half_bytes(opt_.max_bytes, n_);
    scratch_ = std::make_unique<gpu::Buffer>(opt_.memory, 2 * half_bytes_);
    scratch_mr_ = t_.register_memory(scratch_->data(), scratch_->size(), opt_.memory);
    if (opt_.protocol == RingProtocol::write) {
      // Small control messages of the write protocol: my keys out, the right
      // neighbour's keys and credits in.
      control_.resize(3 * kControlBytes);  // out | keys in | credits in
      control_mr_ = t_.register_memory(control_.data(), control_.size(), MemoryKind::host);
    }
  }

  std::string name() const override { return "ring"; }

  void run(const CollectiveBuffers& b, size_t count, DataType type, ReduceOp op) override {
    const size_t esize = size_of(type);
    if (count * esize > opt_.max_bytes) {
      throw UsageError(fmt::format("all-reduce of {} bytes exceeds the {} bytes this ring was built for", count * esize,
                                   opt_.max_bytes));
    }
    if (n_ == 1) {
      if (!b.in_place()) copy_bytes(opt_.memory, b.recv->at(b.recv_offset), b.send->at(b.send_offset), count * esize);
      return;
    }
    const RingPlan plan{n_, rank_, count, std::max<size_t>(1, opt_.slice_bytes / esize), esize};
    if (opt_.protocol == RingProtocol::write) {
      run_write(plan, b, type, op);
    } else {
      run_send(plan, b, type, op);
    }
  }

 private:
  static constexpr size_t kControlBytes = 4096;

  int right() const { return (rank_ + 1) % n_; }
  int left() const { return (rank_ - 1 + n_) % n_; }
  int rail_of(size_t j) const { return static_cast<int>(j % static_cast<size_t>(opt_.rails)); }
  size_t scratch_offset(const RingPlan& plan, int k, size_t j) const {
    const Range s = plan.slice(plan.recv_chunk(k), j);
    return static_cast<size_t>(k % 2) * half_bytes_ + (s.begin - plan.chunk(plan.recv_chunk(k)).begin) * plan.esize;
  }
  // Reduce-scatter: result[slice] = my input[slice] op what arrived in scratch.
  void reduce_slice(const RingPlan& plan, const CollectiveBuffers& b, int k, size_t j, DataType type, ReduceOp op) {
    const Range s = plan.slice(plan.recv_chunk(k), j);
    reduce(opt_.memory, type, op, b.send->at(b.send_offset + s.begin * plan.esize),
           scratch_mr_->at(scratch_offset(plan, k, j)), b.recv->at(b.recv_offset + s.begin * plan.esize), s.count);
  }
  // What step k sends: the caller's input at step 0, then what was reduced or received.
  LocalSpan send_span(const RingPlan& plan, const CollectiveBuffers& b, int k, size_t j) const {
    const Range s = plan.slice(plan.send_chunk(k), j);
    if (k == 0) return LocalSpan{b.send, b.send_offset + s.begin * plan.esize, s.count * plan.esize};
    return LocalSpan{b.recv, b.recv_offset + s.begin * plan.esize, s.count * plan.esize};
  }

  void run_send(const RingPlan& plan, const CollectiveBuffers& b, DataType type, ReduceOp op) {
    const size_t esize = plan.esize;
    std::vector<std::vector<uint64_t>> recv_ids(static_cast<size_t>(plan.steps()));
    auto post_recvs = [&](int k) {
      if (k >= plan.steps()) return;
      const int rc = plan.recv_chunk(k);
      recv_ids[k].resize(plan.slices(rc));
      for (size_t j = 0; j < recv_ids[k].size(); ++j) {
        const Range s = plan.slice(rc, j);
        const LocalSpan dst = plan.is_reduce(k)
                                  ? LocalSpan{scratch_mr_.get(), scratch_offset(plan, k, j), s.count * esize}
                                  : LocalSpan{b.recv, b.recv_offset + s.begin * esize, s.count * esize};
        recv_ids[k][j] = p_.recv(left(), rail_of(j), dst);
      }
    };
    post_recvs(0);
    for (size_t j = 0; j < plan.slices(plan.send_chunk(0)); ++j) p_.send(right(), rail_of(j), send_span(plan, b, 0, j));
    for (int k = 0; k < plan.steps(); ++k) {
      // One step ahead: step k+1's scratch half was last read by step k-1, now done.
      post_recvs(k + 1);
      for (size_t j = 0; j < recv_ids[k].size(); ++j) {
        p_.wait(recv_ids[k][j], plan.is_reduce(k) ? "a reduce-scatter slice from the left neighbour"
                                                  : "an all-gather slice from the left neighbour");
        if (plan.is_reduce(k)) reduce_slice(plan, b, k, j, type, op);
        if (k + 1 < plan.steps()) p_.send(right(), rail_of(j), send_span(plan, b, k + 1, j));
      }
    }
    p_.wait_all("all-reduce sends to the right neighbour");
  }

  // imm = step << 16 | slice: unique within one call, so notifications that overtake
  // each other on different rails are still told apart.
  static uint32_t imm_of(int k, size_t j) {
    return (static_cast<uint32_t>(k) << 16) | static_cast<uint32_t>(j & 0xffff);
  }

  void run_write(const RingPlan& plan, const CollectiveBuffers& b, DataType type, ReduceOp op) {
    const size_t esize = plan.esize;
    // 1. Keys: the left neighbour writes into my result buffer, so it gets my key (and
    // offset); I get the right neighbour's. Its scratch key travels along, since one
    // message is as cheap as two. Then n-1 credits from the right: one per
    // reduce-scatter step it has finished reducing, freeing that scratch half.
    auto* out = control_.data();
    auto* in = control_.data() + kControlBytes;
    const uint64_t key_in = p_.recv(right(), 0, LocalSpan{control_mr_.get(), kControlBytes, kControlBytes});
    std::vector<uint64_t> credits(static_cast<size_t>(n_ - 1));
    // Credits land apart from the keys: one may arrive before the keys are unpacked.
    for (auto& c : credits) c = p_.recv(right(), 0, LocalSpan{control_mr_.get(), 2 * kControlBytes, 8});
    const size_t out_len = pack_keys(out, b);
    p_.send(left(), 0, LocalSpan{control_mr_.get(), 0, out_len});
    p_.wait(key_in, "the right neighbour's buffer keys");
    RemoteKey right_scratch, right_recv;
    uint64_t right_recv_offset = 0;
    unpack_keys(in, p_.bytes(key_in), right_scratch, right_recv, right_recv_offset);

    auto post_step = [&](int k, size_t j) {
      const LocalSpan src = send_span(plan, b, k, j);
      const Range s = plan.slice(plan.send_chunk(k), j);
      // The right neighbour's recv_chunk(k) is my send_chunk(k), so slice offsets match.
      const RemoteSpan dst =
          plan.is_reduce(k) ? RemoteSpan{&right_scratch, static_cast<size_t>(k % 2) * half_bytes_ +
                                                             (s.begin - plan.chunk(plan.send_chunk(k)).begin) * esize}
                            : RemoteSpan{&right_recv, right_recv_offset + s.begin * esize};
      p_.write_imm(right(), rail_of(j), src, dst, imm_of(k, j));
    };
    auto await_credit = [&](int k) {
      // Step k reuses the half step k-2 filled: the right neighbour must be done with it.
      if (plan.is_reduce(k) && k >= 2) p_.wait(credits[static_cast<size_t>(k - 2)], "a scratch credit from the right");
    };

    for (size_t j = 0; j < plan.slices(plan.send_chunk(0)); ++j) post_step(0, j);
    for (int k = 0; k < plan.steps(); ++k) {
      const int rc = plan.recv_chunk(k);
      const bool forward = k + 1 < plan.steps();
      if (forward) await_credit(k + 1);
      for (size_t j = 0; j < plan.slices(rc); ++j) {
        p_.wait_imm_value(imm_of(k, j), left(),
                          plan.is_reduce(k) ? "a reduce-scatter slice written by the left neighbour"
                                            : "an all-gather slice written by the left neighbour");
        if (plan.is_reduce(k)) reduce_slice(plan, b, k, j, type, op);
        if (forward) post_step(k + 1, j);
      }
      // My scratch half k%2 is free again: tell the left neighbour.
      if (plan.is_reduce(k)) p_.send(left(), 0, LocalSpan{control_mr_.get(), 0, 8});
    }
    for (uint64_t c : credits) p_.wait(c, "the right neighbour's last scratch credits");
    p_.wait_all("all-reduce writes to the right neighbour");
  }

  // Control message: u64 result-buffer offset, u32 length + scratch key, u32 length +
  // result key.
  size_t pack_keys(std::byte* out, const CollectiveBuffers& b) const {
    auto scratch = scratch_mr_->remote_key().serialize();
    auto recv = b.recv->remote_key().serialize();
    size_t pos = 0;
    auto put = [&](const void* p, size_t len) {
      if (pos + len > kControlBytes) throw TransportError("ring all-reduce: remote keys exceed the control buffer");
      std::memcpy(out + pos, p, len);
      pos += len;
    };
    const uint64_t offset = b.recv_offset;
    put(&offset, 8);
    for (const auto* key : {&scratch, &recv}) {
      const auto len = static_cast<uint32_t>(key->size());
      put(&len, 4);
      put(key->data(), key->size());
    }
    return pos;
  }

  static void unpack_keys(const std::byte* in, size_t len, RemoteKey& scratch, RemoteKey& recv, uint64_t& offset) {
    size_t pos = 0;
    auto get = [&](void* p, size_t n) {
      if (pos + n > len) throw TransportError("ring all-reduce: truncated key message from the right neighbour");
      std::memcpy(p, in + pos, n);
      pos += n;
    };
    get(&offset, 8);
    for (RemoteKey* key : {&scratch, &recv}) {
      uint32_t klen = 0;
      get(&klen, 4);
      std::vector<uint8_t> blob(klen);
      get(blob.data(), klen);
      *key = RemoteKey::deserialize(blob);
    }
  }

  Progress& p_;
  Transport& t_;
  RingOptions opt_;
  int n_, rank_;
  size_t half_bytes_ = 0;
  std::unique_ptr<gpu::Buffer> scratch_;
  std::unique_ptr<MemoryRegion> scratch_mr_;
  std::vector<std::byte> control_;
  std::unique_ptr<MemoryRegion> control_mr_;
};

}  // namespace

std::unique_ptr<AllReduce> make_ring_allreduce(Progress& progress, const RingOptions& options) {
  return std::make_unique<RingAllReduce>(progress, options);
}

}  // namespace railbench
