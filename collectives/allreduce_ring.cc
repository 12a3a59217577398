#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "collectives/allreduce.h"
#include "collectives/reduce.h"
#include "lib/errors.h"

namespace railbench {

namespace {

// Element range of chunk c when `count` elements are split into n nearly equal chunks.
struct Range {
  size_t begin = 0, count = 0;
};

Range chunk_range(size_t count, int n, int c) {
  const size_t base = count / static_cast<size_t>(n), extra = count % static_cast<size_t>(n);
  const auto uc = static_cast<size_t>(c);
  return Range{uc * base + std::min(uc, extra), base + (uc < extra ? 1 : 0)};
}

class RingAllReduce final : public AllReduce {
 public:
  RingAllReduce(Progress& progress, const RingOptions& options)
      : p_(progress), t_(progress.transport()), opt_(options), n_(t_.world_size()), rank_(t_.rank()) {
    if (!t_.caps().send_recv) {
      throw UnsupportedError(
          fmt::format("ring all-reduce needs send/recv, which transport {} ({}) lacks", t_.name(), t_.provider()));
    }
    if (opt_.rails < 1 || opt_.rails > t_.num_rails()) {
      throw UsageError(fmt::format("ring all-reduce asked for {} rails, transport has {}", opt_.rails, t_.num_rails()));
    }
    opt_.slice_bytes = std::min(std::max<size_t>(opt_.slice_bytes, 64), t_.caps().max_msg_size);
    // Two chunk-sized halves: step k receives into half k%2 while step k-1's half is
    // still being reduced.
    // Each half starts on a cache line, so every element in it is aligned.
    half_bytes_ = ((opt_.max_bytes / static_cast<size_t>(std::max(n_, 1))) + 64 + 63) & ~size_t{63};
    scratch_.resize(2 * half_bytes_);
    scratch_mr_ = t_.register_memory(scratch_.data(), scratch_.size(), MemoryKind::host);
  }

  std::string name() const override { return "ring"; }

  void run(const CollectiveBuffers& b, size_t count, DataType type, ReduceOp op) override {
    const size_t esize = size_of(type);
    if (count * esize > opt_.max_bytes) {
      throw UsageError(fmt::format("all-reduce of {} bytes exceeds the {} bytes this ring was built for", count * esize,
                                   opt_.max_bytes));
    }
    if (n_ == 1) {
      if (!b.in_place()) std::memcpy(b.recv->at(b.recv_offset), b.send->at(b.send_offset), count * esize);
      return;
    }
    const int right = (rank_ + 1) % n_, left = (rank_ - 1 + n_) % n_;
    const int nsteps = 2 * (n_ - 1);

    // Step k (k < n-1: reduce-scatter, else all-gather) sends chunk send_chunk(k) to the
    // right and receives chunk recv_chunk(k) from the left; send_chunk(k+1) ==
    // recv_chunk(k), which is what lets each slice move on as soon as it arrives.
    auto mod = [&](int x) { return ((x % n_) + n_) % n_; };
    auto send_chunk = [&](int k) { return k < n_ - 1 ? mod(rank_ - k) : mod(rank_ + 1 - (k - (n_ - 1))); };
    auto recv_chunk = [&](int k) { return k < n_ - 1 ? mod(rank_ - k - 1) : mod(rank_ - (k - (n_ - 1))); };
    auto is_reduce = [&](int k) { return k < n_ - 1; };

    const size_t slice_elems = std::max<size_t>(1, opt_.slice_bytes / esize);
    auto nslices = [&](int chunk) {
      size_t c = chunk_range(count, n_, chunk).count;
      return (c + slice_elems - 1) / slice_elems;
    };
    auto slice = [&](int chunk, size_t j) {
      Range r = chunk_range(count, n_, chunk);
      size_t first = j * slice_elems;
      return Range{r.begin + first, std::min(slice_elems, r.count - first)};
    };
    auto rail_of = [&](size_t j) { return static_cast<int>(j % static_cast<size_t>(opt_.rails)); };

    // Where step k's slice j lands: scratch half for reduce-scatter, the result
    // buffer for all-gather.
    auto recv_span = [&](int k, size_t j) {
      Range s = slice(recv_chunk(k), j);
      if (is_reduce(k)) {
        size_t off =
            static_cast<size_t>(k % 2) * half_bytes_ + (s.begin - chunk_range(count, n_, recv_chunk(k)).begin) * esize;
        return LocalSpan{scratch_mr_.get(), off, s.count * esize};
      }
      return LocalSpan{b.recv, b.recv_offset + s.begin * esize, s.count * esize};
    };
    auto send_span = [&](int k, size_t j) {
      Range s = slice(send_chunk(k), j);
      // Step 0 sends the caller's input; later steps forward what was reduced or received.
      if (k == 0) return LocalSpan{b.send, b.send_offset + s.begin * esize, s.count * esize};
      return LocalSpan{b.recv, b.recv_offset + s.begin * esize, s.count * esize};
    };

    std::vector<std::vector<uint64_t>> recv_ids(static_cast<size_t>(nsteps));
    auto post_recvs = [&](int k) {
      if (k >= nsteps) return;
      const size_t ns = nslices(recv_chunk(k));
      recv_ids[k].resize(ns);
      for (size_t j = 0; j < ns; ++j) recv_ids[k][j] = p_.recv(left, rail_of(j), recv_span(k, j));
    };

    post_recvs(0);
    for (size_t j = 0, ns = nslices(send_chunk(0)); j < ns; ++j) p_.send(right, rail_of(j), send_span(0, j));

    for (int k = 0; k < nsteps; ++k) {
      // One step ahead: step k+1's scratch half was last read by step k-1, now done.
      post_recvs(k + 1);
      const int rc = recv_chunk(k);
      for (size_t j = 0; j < recv_ids[k].size(); ++j) {
        p_.wait(recv_ids[k][j], is_reduce(k) ? "a reduce-scatter slice from the left neighbour"
                                             : "an all-gather slice from the left neighbour");
        if (is_reduce(k)) {
          Range s = slice(rc, j);
          const void* mine = b.send->at(b.send_offset + s.begin * esize);
          const LocalSpan in = recv_span(k, j);
          void* dst = b.recv->at(b.recv_offset + s.begin * esize);
          reduce(type, op, mine, scratch_mr_->at(in.offset), dst, s.count);
        }
        if (k + 1 < nsteps) p_.send(right, rail_of(j), send_span(k + 1, j));
      }
    }
    p_.wait_all("all-reduce sends to the right neighbour");
  }

 private:
  Progress& p_;
  Transport& t_;
  RingOptions opt_;
  int n_, rank_;
  size_t half_bytes_ = 0;
  std::vector<std::byte> scratch_;
  std::unique_ptr<MemoryRegion> scratch_mr_;
};

}  // namespace

std::unique_ptr<AllReduce> make_ring_allreduce(Progress& progress, const RingOptions& options) {
  return std::make_unique<RingAllReduce>(progress, options);
}

}  // namespace railbench
