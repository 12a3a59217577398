#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "collectives/gather_scatter.h"
#include "collectives/reduce.h"
#include "collectives/ring_common.h"
#include "lib/core/errors.h"
#include "lib/transport/gpu.h"

namespace railbench {

namespace {

// Blocks of `count` elements cut into slices; slices go round-robin over rails.
struct Slicing {
  size_t count, slice_elems;
  int rails;
  size_t slices() const { return (count + slice_elems - 1) / slice_elems; }
  size_t first(size_t j) const { return j * slice_elems; }
  size_t length(size_t j) const { return std::min(slice_elems, count - first(j)); }
  int rail(size_t j) const { return static_cast<int>(j % static_cast<size_t>(rails)); }
};

class RingAllGather final : public AllGather {
 public:
  RingAllGather(Progress& p, const RingOptions& o) : p_(p), t_(p.transport()), opt_(o) {
    check_ring_setup(t_, opt_, "all-gather");
  }

  void run(const CollectiveBuffers& b, size_t count, DataType type) override {
    const int n = t_.world_size(), r = t_.rank();
    const size_t es = size_of(type), block = count * es;
    if (block * static_cast<size_t>(n) > opt_.max_bytes) {
      throw UsageError(fmt::format("all-gather of {} bytes exceeds the {} bytes this ring was built for",
                                   block * static_cast<size_t>(n), opt_.max_bytes));
    }
    std::byte* mine = b.recv->at(b.recv_offset + static_cast<size_t>(r) * block);
    const std::byte* input = b.send->at(b.send_offset);
    if (n == 1 || count == 0) {
      if (input != mine) copy_bytes(opt_.memory, mine, input, block);
      return;
    }

    const Slicing sl{count, std::max<size_t>(1, opt_.slice_bytes / es), opt_.rails};
    const int right = (r + 1) % n, left = (r - 1 + n) % n;
    auto span = [&](int blk, size_t j) {
      return LocalSpan{b.recv, b.recv_offset + static_cast<size_t>(blk) * block + sl.first(j) * es, sl.length(j) * es};
    };
    // All receives up front: every block lands in its own place, nothing is reused.
    std::vector<std::vector<uint64_t>> recvs(static_cast<size_t>(n - 1), std::vector<uint64_t>(sl.slices()));
    for (int s = 0; s < n - 1; ++s)
      for (size_t j = 0; j < sl.slices(); ++j) recvs[s][j] = p_.recv(left, sl.rail(j), span(ring_mod(r - s - 1, n), j));
    // Step 0 sends straight from the input, so copying it into its own block of the
    // result (out of place) overlaps the transfer instead of delaying it.
    for (size_t j = 0; j < sl.slices(); ++j)
      p_.send(right, sl.rail(j), LocalSpan{b.send, b.send_offset + sl.first(j) * es, sl.length(j) * es});
    if (input != mine) copy_bytes(opt_.memory, mine, input, block);
    for (int s = 0; s < n - 1; ++s) {
      for (size_t j = 0; j < sl.slices(); ++j) {
        p_.wait(recvs[s][j], "an all-gather slice from the left neighbour");
        // What arrived at step s is what step s+1 sends on.
        if (s + 1 < n - 1) p_.send(right, sl.rail(j), span(ring_mod(r - s - 1, n), j));
      }
    }
    p_.wait_all("all-gather sends to the right neighbour");
  }

 private:
  Progress& p_;
  Transport& t_;
  RingOptions opt_;
};

class RingReduceScatter final : public ReduceScatter {
 public:
  RingReduceScatter(Progress& p, const RingOptions& o) : p_(p), t_(p.transport()), opt_(o) {
    check_ring_setup(t_, opt_, "reduce-scatter");
    // Halves on cache lines: step k receives into half k%2 and reduces into forward
    // half k%2 while step k-1's halves are still in use.
    half_ = ring_half_bytes(opt_.max_bytes, t_.world_size());
    scratch_ = std::make_unique<gpu::Buffer>(opt_.memory, 2 * half_);
    forward_ = std::make_unique<gpu::Buffer>(opt_.memory, 2 * half_);
    scratch_mr_ = t_.register_memory(scratch_->data(), scratch_->size(), opt_.memory);
    forward_mr_ = t_.register_memory(forward_->data(), forward_->size(), opt_.memory);
  }

  void run(const CollectiveBuffers& b, size_t count, DataType type, ReduceOp op) override {
    const int n = t_.world_size(), r = t_.rank();
    const size_t es = size_of(type), block = count * es;
    if (block * static_cast<size_t>(n) > opt_.max_bytes) {
      throw UsageError(fmt::format("reduce-scatter of {} bytes exceeds the {} bytes this ring was built for",
                                   block * static_cast<size_t>(n), opt_.max_bytes));
    }
    if (n == 1 || count == 0) {
      if (b.send->at(b.send_offset) != b.recv->at(b.recv_offset) && count > 0)
        copy_bytes(opt_.memory, b.recv->at(b.recv_offset), b.send->at(b.send_offset), block);
      return;
    }
    const Slicing sl{count, std::max<size_t>(1, opt_.slice_bytes / es), opt_.rails};
    const int right = (r + 1) % n, left = (r - 1 + n) % n, steps = n - 1;
    auto input = [&](int blk, size_t j) {
      return b.send->at(b.send_offset + static_cast<size_t>(blk) * block + sl.first(j) * es);
    };
    auto half_span = [&](const MemoryRegion* mr, int k, size_t j) {
      return LocalSpan{mr, static_cast<size_t>(k % 2) * half_ + sl.first(j) * es, sl.length(j) * es};
    };
    // Step k sends block (r-k-1): its own input at step 0, later the partial sum that
    // step k-1 left in forward half (k-1)%2.
    auto send_span = [&](int k, size_t j) {
      if (k == 0)
        return LocalSpan{b.send, b.send_offset + static_cast<size_t>(ring_mod(r - 1, n)) * block + sl.first(j) * es,
                         sl.length(j) * es};
      return half_span(forward_mr_.get(), k - 1, j);
    };

    std::vector<std::vector<uint64_t>> recvs(static_cast<size_t>(steps)), sends(static_cast<size_t>(steps));
    auto post_recvs = [&](int k) {
      if (k >= steps) return;
      for (size_t j = 0; j < sl.slices(); ++j)
        recvs[k].push_back(p_.recv(left, sl.rail(j), half_span(scratch_mr_.get(), k, j)));
    };
    post_recvs(0);
    for (size_t j = 0; j < sl.slices(); ++j) sends[0].push_back(p_.send(right, sl.rail(j), send_span(0, j)));
    for (int k = 0; k < steps; ++k) {
      post_recvs(k + 1);  // its scratch half was last read by step k-1, now done
      // Forward half k%2 was the source of step k-1's sends: they must be done before
      // this step's reductions overwrite it.
      if (k >= 1) {
        for (uint64_t id : sends[k - 1]) p_.wait(id, "a reduce-scatter send to the right neighbour");
      }
      const int blk = ring_mod(r - k - 2, n);
      const bool last = k == steps - 1;  // blk == r: this rank's result
      for (size_t j = 0; j < sl.slices(); ++j) {
        p_.wait(recvs[k][j], "a reduce-scatter slice from the left neighbour");
        void* dst = last ? static_cast<void*>(b.recv->at(b.recv_offset + sl.first(j) * es))
                         : static_cast<void*>(forward_mr_->at(half_span(forward_mr_.get(), k, j).offset));
        reduce(opt_.memory, type, op, input(blk, j), scratch_mr_->at(half_span(scratch_mr_.get(), k, j).offset), dst,
               sl.length(j));
        if (!last) sends[k + 1].push_back(p_.send(right, sl.rail(j), send_span(k + 1, j)));
      }
    }
    p_.wait_all("reduce-scatter sends to the right neighbour");
  }

 private:
  Progress& p_;
  Transport& t_;
  RingOptions opt_;
  size_t half_ = 0;
  std::unique_ptr<gpu::Buffer> scratch_, forward_;
  std::unique_ptr<MemoryRegion> scratch_mr_, forward_mr_;
};

}  // namespace

std::unique_ptr<AllGather> make_ring_allgather(Progress& progress, const RingOptions& options) {
  return std::make_unique<RingAllGather>(progress, options);
}

std::unique_ptr<ReduceScatter> make_ring_reducescatter(Progress& progress, const RingOptions& options) {
  return std::make_unique<RingReduceScatter>(progress, options);
}

}  // namespace railbench
