// Ring all-gather and reduce-scatter, written only against lib/ (Transport through
// Progress). Counts are per rank, as in nccl-tests: all-gather takes `count` elements
// from every rank and leaves n x count in each; reduce-scatter takes n x count and
// leaves each rank its reduced block of `count`.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "collectives/allreduce.h"

namespace railbench {

class AllGather {
 public:
  virtual ~AllGather() = default;
  // In place when send is recv at offset rank x count x type size (as nccl-tests).
  virtual void run(const CollectiveBuffers& buffers, size_t count, DataType type) = 0;
};

class ReduceScatter {
 public:
  virtual ~ReduceScatter() = default;
  // In place when recv is send at offset rank x count x type size (as nccl-tests).
  virtual void run(const CollectiveBuffers& buffers, size_t count, DataType type, ReduceOp op) = 0;
};

// n-1 steps; step s sends block (rank - s) to the right and receives block
// (rank - s - 1) from the left, each slice forwarded as soon as it arrives.
// options.max_bytes bounds the whole n x count buffer. Needs caps().send_recv.
std::unique_ptr<AllGather> make_ring_allgather(Progress& progress, const RingOptions& options);

// n-1 steps; step k sends the partial sum of block (rank - k - 1) and receives that of
// block (rank - k - 2), reducing it with this rank's input; the last step's result is
// block `rank`, this rank's share.
std::unique_ptr<ReduceScatter> make_ring_reducescatter(Progress& progress, const RingOptions& options);

}  // namespace railbench
