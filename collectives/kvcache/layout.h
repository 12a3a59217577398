// The paged KV-cache layout serving engines keep (vLLM-style), written only against
// lib/: per layer one K and one V tensor (one latent tensor for MLA), each an array of
// blocks of `block_tokens` tokens; a request owns a list of block ids, the same in
// every layer, drawn from a pool so that they are scattered. Also the transfer lists
// per mode and the data pattern that proves every block landed in the right place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace railbench {

// One request's KV geometry.
struct KvShape {
  int layers = 1;
  int planes = 2;              // tensors per layer: 2 (K, V) or 1 (MLA latent)
  uint64_t token_bytes = 0;    // bytes of one token in one layer's plane
  uint64_t tokens = 0;         // tokens of the request
  uint64_t block_tokens = 16;  // tokens per block

  uint64_t blocks() const { return (tokens + block_tokens - 1) / block_tokens; }  // per (layer, plane)
  uint64_t block_bytes() const { return block_tokens * token_bytes; }
  // Bytes of logical block b that hold tokens (the last block may be partly filled).
  uint64_t block_len(uint64_t b) const;
  uint64_t units() const { return static_cast<uint64_t>(layers) * planes * blocks(); }  // blocks per request
  uint64_t request_bytes() const { return static_cast<uint64_t>(layers) * planes * tokens * token_bytes; }
};

// One side's block pool: `slots` requests' worth of blocks per (layer, plane) tensor.
// The allocator hands out runs of `alloc_run` consecutive block ids in an order
// shuffled by `seed`, so a request's blocks are scattered (alloc_run 1: no two
// adjacent) as in a pool that has served many requests.
class KvPool {
 public:
  KvPool() = default;
  KvPool(const KvShape& shape, int slots, int alloc_run, uint64_t seed);

  uint64_t pool_blocks() const { return pool_blocks_; }  // per (layer, plane) tensor
  uint64_t bytes() const;
  uint64_t block_id(int slot, uint64_t b) const { return ids_[static_cast<size_t>(slot) * shape_.blocks() + b]; }
  // Byte offset of logical block b of `slot` in (layer, plane).
  uint64_t offset(int slot, int layer, int plane, uint64_t b) const;
  const KvShape& shape() const { return shape_; }

 private:
  KvShape shape_;
  uint64_t pool_blocks_ = 0;
  std::vector<uint64_t> ids_;
};

// One transfer: bytes [src, src+len) to [dst, dst+len), on `rail`.
struct KvCopy {
  uint64_t src = 0;
  uint64_t dst = 0;
  uint64_t len = 0;
  int rail = 0;
};

// `blocks` in the functions below: a request that fills only the first `blocks` blocks
// of each (layer, plane) of its slot (kvcache --serve's per-request sizes); more than the
// shape has means all of them. `first`: the leading blocks the decode side already holds
// (kvcache --serve's prefix reuse), left out: the functions cover blocks [first, blocks).
inline constexpr uint64_t kKvAllBlocks = UINT64_MAX;

// One write per block in (layer, plane, block) order, or, with `coalesce`, adjacent
// blocks (consecutive on both sides) merged into one write. Rails round-robin.
std::vector<KvCopy> kv_block_copies(const KvPool& src, int src_slot, const KvPool& dst, int dst_slot, bool coalesce,
                                    int rails, uint64_t blocks = kKvAllBlocks, uint64_t first = 0);
// Pool blocks of `slot` to (or, swapped, from) a contiguous buffer of request_bytes()
// in (layer, plane, block) order: what staged mode packs and unpacks.
std::vector<KvCopy> kv_pack_copies(const KvPool& pool, int slot, uint64_t blocks = kKvAllBlocks, uint64_t first = 0);
// One contiguous transfer of `bytes` from src to dst, split into messages of at most
// max_msg bytes, and over rails when large.
std::vector<KvCopy> kv_contiguous_copies(uint64_t src, uint64_t dst, uint64_t bytes, size_t max_msg, int rails);
// Splits copies longer than max_msg.
void kv_split_copies(std::vector<KvCopy>& copies, size_t max_msg);
// memcpy every copy from src_base to dst_base.
void kv_apply_copies(const std::vector<KvCopy>& copies, const std::byte* src_base, std::byte* dst_base);

// The check pattern: every 8 bytes of a block encode (request, layer, plane, logical
// block, offset), so a block in the wrong place, layer or K/V slot is caught, not only
// a corrupt one.
void kv_fill(const KvPool& pool, int slot, std::byte* base, uint32_t request, uint64_t blocks = kKvAllBlocks,
             uint64_t first = 0);
// Bytes of `slot`'s blocks that differ from request's pattern.
uint64_t kv_count_wrong(const KvPool& pool, int slot, const std::byte* base, uint32_t request,
                        uint64_t blocks = kKvAllBlocks, uint64_t first = 0);
// Blocks of `slot` (over every layer and plane) that hold request's pattern exactly: a
// block the decode side held already and was not sent must count none.
uint64_t kv_count_patterned_blocks(const KvPool& pool, int slot, const std::byte* base, uint32_t request,
                                   uint64_t blocks, uint64_t first = 0);

}  // namespace railbench
