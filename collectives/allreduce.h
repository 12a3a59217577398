// All-reduce algorithms written only against lib/ (Transport through Progress).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "lib/datatype.h"
#include "lib/progress.h"
#include "lib/transport.h"

namespace railbench {

// Registered buffers of one collective call. In-place when send and recv are the same
// region and offset.
struct CollectiveBuffers {
  const MemoryRegion* send = nullptr;
  size_t send_offset = 0;
  const MemoryRegion* recv = nullptr;
  size_t recv_offset = 0;

  bool in_place() const { return send == recv && send_offset == recv_offset; }
};

class AllReduce {
 public:
  virtual ~AllReduce() = default;
  virtual std::string name() const = 0;
  // Blocking; throws TimeoutError naming the peer when a neighbour stops answering.
  virtual void run(const CollectiveBuffers& buffers, size_t count, DataType type, ReduceOp op) = 0;
};

struct RingOptions {
  size_t max_bytes = 0;          // largest buffer this instance will reduce
  size_t slice_bytes = 1 << 20;  // pipeline unit: transfers and reductions overlap per slice
  int rails = 1;                 // slices go round-robin over rails
};

// Ring all-reduce: reduce-scatter then all-gather, 2(n-1) steps, each step's slices
// forwarded as soon as they are reduced. Needs caps().send_recv.
std::unique_ptr<AllReduce> make_ring_allreduce(Progress& progress, const RingOptions& options);

}  // namespace railbench
