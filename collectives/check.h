// Data patterns for -c. Inputs are small integers chosen so that every reduction is
// exact in every type for modest rank counts (sums up to 7n, products of 1s and 2s), so
// a wrong element is a real fault, not rounding; a tolerance scaled by the type's
// epsilon and the rank count covers larger jobs where floating order matters.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/core/datatype.h"

namespace railbench {

// Fills rank `rank`'s input of `count` elements for reduction `op`; `seed` changes the
// pattern between sizes and runs so stale data is caught.
void fill_input(DataType type, ReduceOp op, int rank, uint32_t seed, void* buf, size_t count);

// Counts elements of `result` that differ from the reduction of every rank's input
// (recomputed here, since inputs are deterministic). `first` is the index in the
// inputs of result[0]: 0 for all-reduce, rank x count for a reduce-scatter block.
uint64_t count_wrong_allreduce(DataType type, ReduceOp op, int nranks, uint32_t seed, const void* result, size_t count,
                               size_t first = 0);

// Data-movement pattern (all-gather, all-to-all): the block rank `src` sends to rank
// `dst`. Integers 0..250, exact in every type (bf16 included), differing between
// blocks, so a block delivered to the wrong place is caught, not only a corrupt one.
void fill_block(DataType type, int src, int dst, uint32_t seed, void* buf, size_t count);
uint64_t count_wrong_block(DataType type, int src, int dst, uint32_t seed, const void* buf, size_t count);

// All-gather: block q of `result` (count elements) must be fill_block(q, 0), bit for bit.
uint64_t count_wrong_allgather(DataType type, int nranks, uint32_t seed, const void* result, size_t count);

// All-to-all on rank `rank`: block q of `input` is fill_block(rank, q); block q of
// `result` must be fill_block(q, rank).
void fill_alltoall(DataType type, int rank, int nranks, uint32_t seed, void* input, size_t count);
uint64_t count_wrong_alltoall(DataType type, int rank, int nranks, uint32_t seed, const void* result, size_t count);

// Byte pattern for point-to-point checks: depends on sender, seed and offset.
void fill_bytes(int sender, uint32_t seed, void* buf, size_t len);
uint64_t count_wrong_bytes(int sender, uint32_t seed, const void* buf, size_t len);

}  // namespace railbench
