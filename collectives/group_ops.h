// Building blocks over a Group, in place on one registered buffer, without pipelining:
// recursive halving-doubling all-reduce, and ring reduce-scatter / all-gather over
// uneven blocks. The rhd and hier all-reduce algorithms are made of these.
#pragma once

#include <cstddef>

#include "collectives/group.h"
#include "lib/core/datatype.h"

namespace railbench {

// An in-place vector: `count` elements at `offset` of `mr`.
struct Vec {
  const MemoryRegion* mr = nullptr;
  size_t offset = 0;
  size_t count = 0;
};

// Block j of `count` elements split into `parts` nearly equal blocks: [first, first+len).
inline size_t block_first(size_t count, int parts, int j) {
  return count * static_cast<size_t>(j) / static_cast<size_t>(parts);
}
inline size_t block_len(size_t count, int parts, int j) {
  return block_first(count, parts, j + 1) - block_first(count, parts, j);
}

// Recursive halving-doubling (Rabenseifner) for any group size: with p the largest
// power of two <= n, the first 2(n-p) members pair up and fold into p, those p
// reduce-scatter by recursive halving and all-gather by recursive doubling, and the
// folded members get the result back. `scratch` holds at least v.count elements.
void rhd_allreduce(Progress& p, const Group& g, int rails, const Vec& v, DataType type, ReduceOp op,
                   const MemoryRegion* scratch);

// The scratch a ring reduce-scatter of `count` elements over n members needs: two
// halves of the largest block, cache-line aligned.
size_t ring_scratch_bytes(size_t count, int n, size_t es);

// Ring reduce-scatter over g.size() blocks (block_first/len): afterwards block g.me of
// v holds the reduction over the group. `scratch` holds ring_scratch_bytes. Blocks go in
// slices of `slice_bytes` round-robin over the rails (0: one slice per rail), and each
// slice is sent on to the next step as soon as it is reduced, so steps overlap.
void ring_reduce_scatter_blocks(Progress& p, const Group& g, int rails, const Vec& v, DataType type, ReduceOp op,
                                const MemoryRegion* scratch, size_t slice_bytes = 0);

// Ring all-gather over g.size() blocks: block j comes from member j. Sliced and
// pipelined as the reduce-scatter.
void ring_all_gather_blocks(Progress& p, const Group& g, int rails, const Vec& v, DataType type,
                            size_t slice_bytes = 0);

}  // namespace railbench
