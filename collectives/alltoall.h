// All-to-all by pairwise exchange, the expert-parallel (MoE) dispatch pattern, written
// only against lib/. Counts are per block, as in nccl-tests: every rank sends `count`
// elements to every rank (itself included), so each buffer holds n x count.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "collectives/allreduce.h"
#include "collectives/group.h"
#include "lib/transport/gpu.h"

namespace railbench {

struct AllToAllOptions {
  size_t max_bytes = 0;                  // largest n x count buffer this instance will exchange
  int rails = 1;                         // blocks of 64 KiB x rails and more are striped over rails
  int window = 4;                        // steps (peers) in flight at once; 1 is the classic pairwise exchange
  MemoryKind memory = MemoryKind::host;  // of the caller's buffers; scratch is allocated alike
};

// n-1 steps: step k sends block (rank + k) to rank + k and receives block (rank - k)
// from rank - k. Up to `window` steps are in flight; a step is retired when its block
// has arrived, and the next one is posted then. In place (send is recv) receives into
// a scratch copy first, since a block that arrives early would overwrite one not yet
// sent. Needs caps().send_recv.
class AllToAll {
 public:
  AllToAll(Progress& progress, const AllToAllOptions& options);
  ~AllToAll();

  // Blocking; throws TimeoutError naming the peer when one stops answering.
  void run(const CollectiveBuffers& buffers, size_t count, DataType type);

  // For the last run(): step_us()[q] is the time in microseconds from posting the step
  // that receives from rank q until q's whole block had arrived, so a slow link q -> me
  // shows up as a large entry. 0 for this rank itself.
  const std::vector<double>& step_us() const { return step_us_; }

 private:
  Progress& p_;
  AllToAllOptions opt_;
  std::unique_ptr<gpu::Buffer> scratch_;  // in-place landing area
  std::unique_ptr<MemoryRegion> scratch_mr_;
  std::vector<double> step_us_;
};

}  // namespace railbench
