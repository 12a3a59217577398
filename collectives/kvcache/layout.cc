#include "collectives/kvcache/layout.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "collectives/group.h"

namespace railbench {

uint64_t KvShape::block_len(uint64_t b) const {
  const uint64_t first = b * block_tokens;
  return (std::min(tokens, first + block_tokens) - first) * token_bytes;
}

KvPool::KvPool(const KvShape& shape, int slots, int alloc_run, uint64_t seed) : shape_(shape) {
  const uint64_t run = static_cast<uint64_t>(std::max(alloc_run, 1));
  pool_blocks_ = static_cast<uint64_t>(slots) * shape.blocks();
  // Shuffle runs of `run` ids, then hand them out in that order.
  std::vector<uint64_t> runs((pool_blocks_ + run - 1) / run);
  for (uint64_t i = 0; i < runs.size(); ++i) runs[i] = i;
  std::mt19937_64 rng(seed);
  std::shuffle(runs.begin(), runs.end(), rng);
  ids_.reserve(pool_blocks_);
  for (uint64_t r : runs)
    for (uint64_t id = r * run; id < std::min(pool_blocks_, (r + 1) * run); ++id) ids_.push_back(id);
}

uint64_t KvPool::bytes() const {
  return static_cast<uint64_t>(shape_.layers) * shape_.planes * pool_blocks_ * shape_.block_bytes();
}

uint64_t KvPool::offset(int slot, int layer, int plane, uint64_t b) const {
  const uint64_t tensor = static_cast<uint64_t>(layer) * shape_.planes + static_cast<uint64_t>(plane);
  return (tensor * pool_blocks_ + block_id(slot, b)) * shape_.block_bytes();
}

std::vector<KvCopy> kv_block_copies(const KvPool& src, int src_slot, const KvPool& dst, int dst_slot, bool coalesce,
                                    int rails, uint64_t blocks, uint64_t first) {
  const KvShape& s = src.shape();
  std::vector<KvCopy> out;
  out.reserve(s.units());
  for (int l = 0; l < s.layers; ++l) {
    for (int p = 0; p < s.planes; ++p) {
      for (uint64_t b = first; b < std::min(blocks, s.blocks()); ++b) {
        KvCopy c{src.offset(src_slot, l, p, b), dst.offset(dst_slot, l, p, b), s.block_len(b), 0};
        if (coalesce && !out.empty()) {
          KvCopy& last = out.back();
          if (last.len % s.block_bytes() == 0 && last.src + last.len == c.src && last.dst + last.len == c.dst) {
            last.len += c.len;
            continue;
          }
        }
        out.push_back(c);
      }
    }
  }
  const int r = std::max(rails, 1);
  for (size_t i = 0; i < out.size(); ++i) out[i].rail = static_cast<int>(i % static_cast<size_t>(r));
  return out;
}

std::vector<KvCopy> kv_pack_copies(const KvPool& pool, int slot, uint64_t blocks, uint64_t first) {
  const KvShape& s = pool.shape();
  std::vector<KvCopy> out;
  out.reserve(s.units());
  uint64_t packed = 0;
  for (int l = 0; l < s.layers; ++l) {
    for (int p = 0; p < s.planes; ++p) {
      for (uint64_t b = first; b < std::min(blocks, s.blocks()); ++b) {
        out.push_back(KvCopy{pool.offset(slot, l, p, b), packed, s.block_len(b), 0});
        packed += s.block_len(b);
      }
    }
  }
  return out;
}

std::vector<KvCopy> kv_contiguous_copies(uint64_t src, uint64_t dst, uint64_t bytes, size_t max_msg, int rails) {
  std::vector<KvCopy> out;
  for_each_piece(bytes, rails, max_msg, [&](int rail, size_t off, size_t len) {
    out.push_back(KvCopy{src + off, dst + off, len, rail});
  });
  return out;
}

void kv_split_copies(std::vector<KvCopy>& copies, size_t max_msg) {
  if (std::all_of(copies.begin(), copies.end(), [&](const KvCopy& c) { return c.len <= max_msg; })) return;
  std::vector<KvCopy> out;
  for (const KvCopy& c : copies)
    for (uint64_t off = 0; off < c.len; off += max_msg)
      out.push_back(KvCopy{c.src + off, c.dst + off, std::min<uint64_t>(max_msg, c.len - off), c.rail});
  copies.swap(out);
}

void kv_apply_copies(const std::vector<KvCopy>& copies, const std::byte* src_base, std::byte* dst_base) {
  for (const KvCopy& c : copies) std::memcpy(dst_base + c.dst, src_base + c.src, c.len);
}

namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t block_seed(uint32_t request, int layer, int plane, uint64_t b) {
  return mix((static_cast<uint64_t>(request) << 40) ^ (static_cast<uint64_t>(layer) << 24) ^
             (static_cast<uint64_t>(plane) << 22) ^ b);
}

// Word w of a block: distinct per offset, so a shifted copy is caught too.
inline uint64_t word(uint64_t seed, uint64_t w) {
  return seed ^ (w * 0xd1342543de82ef95ULL + 1);
}

template <class Fn>
void for_each_block(const KvPool& pool, int slot, uint64_t blocks, uint64_t first, Fn&& fn) {
  const KvShape& s = pool.shape();
  for (int l = 0; l < s.layers; ++l)
    for (int p = 0; p < s.planes; ++p)
      for (uint64_t b = first; b < std::min(blocks, s.blocks()); ++b)
        fn(pool.offset(slot, l, p, b), s.block_len(b), l, p, b);
}

}  // namespace

void kv_fill(const KvPool& pool, int slot, std::byte* base, uint32_t request, uint64_t blocks, uint64_t first) {
  for_each_block(pool, slot, blocks, first, [&](uint64_t off, uint64_t len, int l, int p, uint64_t b) {
    const uint64_t seed = block_seed(request, l, p, b);
    std::byte* d = base + off;
    for (uint64_t i = 0; i < len; i += 8) {
      const uint64_t v = word(seed, i / 8);
      std::memcpy(d + i, &v, std::min<uint64_t>(8, len - i));
    }
  });
}

uint64_t kv_count_wrong(const KvPool& pool, int slot, const std::byte* base, uint32_t request, uint64_t blocks,
                        uint64_t first) {
  uint64_t wrong = 0;
  for_each_block(pool, slot, blocks, first, [&](uint64_t off, uint64_t len, int l, int p, uint64_t b) {
    const uint64_t seed = block_seed(request, l, p, b);
    const std::byte* d = base + off;
    for (uint64_t i = 0; i < len; i += 8) {
      const uint64_t n = std::min<uint64_t>(8, len - i);
      uint64_t got = 0;
      const uint64_t want = word(seed, i / 8);
      std::memcpy(&got, d + i, n);
      if (std::memcmp(&got, &want, n) == 0) continue;
      const auto* g = reinterpret_cast<const unsigned char*>(&got);
      const auto* w = reinterpret_cast<const unsigned char*>(&want);
      for (uint64_t k = 0; k < n; ++k) wrong += g[k] != w[k];
    }
  });
  return wrong;
}

uint64_t kv_count_patterned_blocks(const KvPool& pool, int slot, const std::byte* base, uint32_t request,
                                   uint64_t blocks, uint64_t first) {
  uint64_t same = 0;
  for_each_block(pool, slot, blocks, first, [&](uint64_t off, uint64_t len, int l, int p, uint64_t b) {
    const uint64_t seed = block_seed(request, l, p, b);
    bool all = true;
    for (uint64_t i = 0; i < len && all; i += 8) {
      const uint64_t want = word(seed, i / 8);
      all = std::memcmp(base + off + i, &want, std::min<uint64_t>(8, len - i)) == 0;
    }
    if (all) ++same;
  });
  return same;
}

}  // namespace railbench
