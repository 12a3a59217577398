// The paged layout without a transport: pools are scattered, every transfer list moves
// each byte of the request exactly once to the right block, and the check pattern
// catches a block in the wrong place, layer or K/V slot.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>

#include "collectives/kvcache/layout.h"

using namespace railbench;

namespace {

KvShape shape(uint64_t tokens, uint64_t block_tokens = 4) {
  KvShape s;
  s.layers = 3;
  s.planes = 2;
  s.token_bytes = 24;  // not a multiple of 16, so patterns have odd tails
  s.tokens = tokens;
  s.block_tokens = block_tokens;
  return s;
}

}  // namespace

TEST_CASE("pool block ids are a scattered permutation, runs of alloc_run", "[kvcache][unit]") {
  const KvShape s = shape(64);  // 16 blocks per request
  const KvPool pool(s, 3, 1, 7);
  std::set<uint64_t> ids;
  int adjacent = 0;
  for (int slot = 0; slot < 3; ++slot) {
    for (uint64_t b = 0; b < s.blocks(); ++b) {
      ids.insert(pool.block_id(slot, b));
      if (b > 0 && pool.block_id(slot, b) == pool.block_id(slot, b - 1) + 1) ++adjacent;
    }
  }
  CHECK(ids.size() == 48);
  CHECK(*ids.rbegin() == 47);
  CHECK(adjacent < 10);  // a shuffle, not the identity
  const KvPool runs(s, 3, 4, 7);
  for (uint64_t b = 0; b < s.blocks(); b += 4)
    for (uint64_t i = 1; i < 4; ++i) CHECK(runs.block_id(1, b + i) == runs.block_id(1, b) + i);
  CHECK(pool.bytes() == 3ULL * 2 * 48 * s.block_bytes());
}

TEST_CASE("every mode's copies move each byte once into the right destination block", "[kvcache][unit]") {
  for (uint64_t tokens : {uint64_t{4}, uint64_t{37}, uint64_t{64}}) {
    const KvShape s = shape(tokens);
    const KvPool src(s, 2, 2, 11), dst(s, 3, 2, 12);
    std::vector<std::byte> a(src.bytes()), b(dst.bytes()), staged(s.request_bytes());
    kv_fill(src, 1, a.data(), 99);
    CHECK(kv_count_wrong(src, 1, a.data(), 99) == 0);
    for (bool coalesce : {false, true}) {
      DYNAMIC_SECTION(tokens << " tokens, coalesce " << coalesce) {
        std::fill(b.begin(), b.end(), std::byte{0});
        auto copies = kv_block_copies(src, 1, dst, 2, coalesce, 2);
        uint64_t moved = 0;
        for (const auto& c : copies) moved += c.len;
        CHECK(moved == s.request_bytes());
        if (!coalesce) CHECK(copies.size() == s.units());
        if (coalesce) CHECK(copies.size() <= s.units());
        kv_split_copies(copies, 40);
        for (const auto& c : copies) CHECK(c.len <= 40);
        kv_apply_copies(copies, a.data(), b.data());
        CHECK(kv_count_wrong(dst, 2, b.data(), 99) == 0);
        CHECK(kv_count_wrong(dst, 2, b.data(), 98) > 0);  // another request's pattern
      }
    }
    // staged: pack, one contiguous copy, unpack.
    std::fill(b.begin(), b.end(), std::byte{0});
    kv_apply_copies(kv_pack_copies(src, 1), a.data(), staged.data());
    auto unpack = kv_pack_copies(dst, 0);
    for (auto& c : unpack) std::swap(c.src, c.dst);
    kv_apply_copies(unpack, staged.data(), b.data());
    CHECK(kv_count_wrong(dst, 0, b.data(), 99) == 0);
  }
}

TEST_CASE("coalescing merges only blocks adjacent on both sides", "[kvcache][unit]") {
  const KvShape s = shape(64);
  const KvPool src(s, 1, 4, 1), dst(s, 1, 4, 2);
  const auto merged = kv_block_copies(src, 0, dst, 0, true, 1);
  CHECK(merged.size() <= s.units() / 4);  // runs of 4 on both sides, aligned
  const KvPool scattered(s, 1, 1, 3);
  CHECK(kv_block_copies(scattered, 0, dst, 0, true, 1).size() > s.units() / 2);
}

TEST_CASE("the pattern catches a block in the wrong place, layer or K/V slot", "[kvcache][unit]") {
  const KvShape s = shape(32);
  const KvPool pool(s, 1, 1, 5);
  std::vector<std::byte> mem(pool.bytes());
  kv_fill(pool, 0, mem.data(), 3);
  auto swap_blocks = [&](uint64_t x, uint64_t y) {
    std::vector<std::byte> tmp(s.block_bytes());
    std::memcpy(tmp.data(), mem.data() + x, tmp.size());
    std::memcpy(mem.data() + x, mem.data() + y, tmp.size());
    std::memcpy(mem.data() + y, tmp.data(), tmp.size());
  };
  // Two blocks of one tensor, K against V, layer 0 against layer 1.
  for (auto [x, y] : {std::pair{pool.offset(0, 0, 0, 1), pool.offset(0, 0, 0, 2)},
                      std::pair{pool.offset(0, 1, 0, 3), pool.offset(0, 1, 1, 3)},
                      std::pair{pool.offset(0, 0, 1, 0), pool.offset(0, 1, 1, 0)}}) {
    swap_blocks(x, y);
    CHECK(kv_count_wrong(pool, 0, mem.data(), 3) > s.block_bytes());
    swap_blocks(x, y);
    CHECK(kv_count_wrong(pool, 0, mem.data(), 3) == 0);
  }
  mem[pool.offset(0, 2, 1, 7) + 5] ^= std::byte{1};
  CHECK(kv_count_wrong(pool, 0, mem.data(), 3) == 1);
}
