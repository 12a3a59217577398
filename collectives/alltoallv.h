// All-to-all-v: the uneven all-to-all of expert-parallel (MoE) dispatch and combine,
// over a Group (member order), written only against lib/. Every member sends its own
// count to every member (zero allowed, itself included), by the same windowed pairwise
// exchange as AllToAll (collectives/pairwise.h), striped over rails like every block.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "collectives/allreduce.h"
#include "collectives/group.h"
#include "lib/transport/gpu.h"

namespace railbench {

// Counts and offsets in elements, one entry per group member (as MPI_Alltoallv's).
// send_counts[m] here must equal member m's recv_counts[me]: both sides post the same
// pieces, so a mismatch is a protocol error that shows as a timeout or short receive.
struct AllToAllVLayout {
  std::vector<size_t> send_counts, send_offsets;
  std::vector<size_t> recv_counts, recv_offsets;

  // Blocks packed in member order from offset 0: send_counts[m] = counts_to[m], etc.
  static AllToAllVLayout packed(const std::vector<size_t>& counts_to, const std::vector<size_t>& counts_from);
  size_t send_extent() const;  // elements the send side spans (max offset + count)
  size_t recv_extent() const;
};

struct AllToAllVOptions {
  size_t max_bytes = 0;                  // in place: the largest recv extent in bytes (the scratch)
  int rails = 1;                         // blocks of 64 KiB x rails and more are striped over rails
  int window = 4;                        // steps (members) in flight at once; 1 is the classic pairwise exchange
  MemoryKind memory = MemoryKind::host;  // of the caller's buffers; scratch is allocated alike
};

// Needs caps().send_recv. Ranks outside the group do not call run(); the group's
// members must all call it with matching layouts.
class AllToAllV {
 public:
  AllToAllV(Progress& progress, Group group, const AllToAllVOptions& options);
  ~AllToAllV();

  // Blocking; throws UsageError for a layout that does not fit the group or this
  // instance, TimeoutError naming the peer when one stops answering. In place (send is
  // recv) reads blocks at the send offsets and writes them at the recv offsets of the
  // same buffer, receiving into scratch until every send is done.
  void run(const CollectiveBuffers& buffers, const AllToAllVLayout& layout, DataType type);

  // For the last run(): step_us()[m] is the time in microseconds from posting the step
  // that receives from member m until m's whole block had arrived (0 for this member).
  const std::vector<double>& step_us() const { return step_us_; }
  const Group& group() const { return g_; }

 private:
  void check_layout(const CollectiveBuffers& b, const AllToAllVLayout& l, size_t esize) const;

  Progress& p_;
  Group g_;
  AllToAllVOptions opt_;
  std::unique_ptr<gpu::Buffer> scratch_;  // in-place landing area
  std::unique_ptr<MemoryRegion> scratch_mr_;
  std::vector<double> step_us_;
};

}  // namespace railbench
