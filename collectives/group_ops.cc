#include "collectives/group_ops.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "collectives/reduce.h"
#include "collectives/ring_common.h"

namespace railbench {

namespace {

LocalSpan elems(const Vec& v, size_t first, size_t len, size_t es) {
  return LocalSpan{v.mr, v.offset + first * es, len * es};
}

}  // namespace

void rhd_allreduce(Progress& p, const Group& g, int rails, const Vec& v, DataType type, ReduceOp op,
                   const MemoryRegion* scratch) {
  const int n = g.size(), me = g.me;
  if (n <= 1 || v.count == 0) return;
  const size_t es = size_of(type);
  int pow2 = 1;
  while (pow2 * 2 <= n) pow2 *= 2;
  const int rem = n - pow2;
  // Members below 2*rem fold pairwise: the even one hands its vector to the odd one
  // and sits out; the others are renumbered into 0..pow2-1.
  auto member_of = [&](int nr) { return nr < rem ? nr * 2 + 1 : nr + rem; };
  int nr = me - rem;
  if (me < 2 * rem) {
    if (me % 2 == 0) {
      exchange(p, g.global(me + 1), rails, elems(v, 0, v.count, es), LocalSpan{}, "an rhd fold to the odd partner");
      nr = -1;
    } else {
      exchange(p, g.global(me - 1), rails, LocalSpan{}, LocalSpan{scratch, 0, v.count * es},
               "an rhd fold from the even partner");
      reduce(scratch->kind(), type, op, v.mr->at(v.offset), scratch->data(), v.mr->at(v.offset), v.count);
      nr = me / 2;
    }
  }
  if (nr >= 0) {
    // Reduce-scatter by recursive halving: each step keeps half the current range,
    // sends the other half to the partner and reduces the partner's copy of the kept half.
    std::vector<std::pair<size_t, size_t>> ranges;  // the range before each step
    size_t lo = 0, hi = v.count;
    for (int mask = pow2 / 2; mask >= 1; mask /= 2) {
      const int partner = g.global(member_of(nr ^ mask));
      const size_t mid = lo + (hi - lo) / 2;
      const bool lower = (nr & mask) == 0;
      const size_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
      const size_t send_lo = lower ? mid : lo, send_hi = lower ? hi : mid;
      exchange(p, partner, rails, elems(v, send_lo, send_hi - send_lo, es),
               LocalSpan{scratch, 0, (keep_hi - keep_lo) * es}, "an rhd reduce-scatter step");
      reduce(scratch->kind(), type, op, v.mr->at(v.offset + keep_lo * es), scratch->data(),
             v.mr->at(v.offset + keep_lo * es), keep_hi - keep_lo);
      ranges.emplace_back(lo, hi);
      lo = keep_lo;
      hi = keep_hi;
    }
    // All-gather by recursive doubling: the same partners in reverse order, each step
    // sending the reduced range and receiving its complement in the previous range.
    int mask = 1;
    for (auto it = ranges.rbegin(); it != ranges.rend(); ++it, mask *= 2) {
      const int partner = g.global(member_of(nr ^ mask));
      const auto [plo, phi] = *it;
      const size_t other_lo = lo == plo ? hi : plo, other_hi = lo == plo ? phi : lo;
      exchange(p, partner, rails, elems(v, lo, hi - lo, es), elems(v, other_lo, other_hi - other_lo, es),
               "an rhd all-gather step");
      lo = plo;
      hi = phi;
    }
  }
  if (me < 2 * rem) {
    if (me % 2 == 1) {
      exchange(p, g.global(me - 1), rails, elems(v, 0, v.count, es), LocalSpan{}, "an rhd unfold to the even partner");
    } else {
      exchange(p, g.global(me + 1), rails, LocalSpan{}, elems(v, 0, v.count, es), "an rhd unfold from the odd partner");
    }
  }
}

namespace {

// Block `blk` of the ring cut into slices: slice j on rail j % rails. Every member
// computes the same cut of a block from its length alone, so sender and receiver agree
// and FIFO matching per (peer, rail) pairs the slices up. A slice is at most a rail's
// share of the block (one slice per rail for slice_bytes 0), except that a block under
// 64 KiB a rail stays whole on rail 0, as for_each_piece cuts a plain transfer.
struct BlockSlices {
  size_t first = 0, len = 0, slice = 1;  // in elements
  int rails = 1;
  size_t count() const { return len == 0 ? 0 : (len + slice - 1) / slice; }
  size_t at(size_t j) const { return first + j * slice; }
  size_t len_of(size_t j) const { return std::min(slice, len - j * slice); }
  int rail(size_t j) const { return static_cast<int>(j % static_cast<size_t>(rails)); }
};

BlockSlices block_slices(const Vec& v, int n, int blk, int rails, size_t slice_bytes, size_t max_msg, size_t es) {
  BlockSlices b;
  b.first = block_first(v.count, n, blk);
  b.len = block_len(v.count, n, blk);
  b.rails = std::max(rails, 1);
  // Never more than a rail's share: a block of at least 64 KiB a rail goes over every rail.
  const size_t share = rail_share(b.len * es, b.rails);
  size_t bytes = slice_bytes == 0 ? share : std::min<size_t>(slice_bytes, share);
  // Cache-line multiples, so every slice starts aligned; never over the transport's message.
  bytes = std::min(std::max<size_t>((bytes + 63) & ~size_t{63}, 64), max_msg);
  b.slice = std::max<size_t>(bytes / es, 1);
  return b;
}

size_t max_message(Progress& p) {
  return std::max<size_t>(p.transport().caps().max_msg_size, 64);
}

}  // namespace

size_t ring_scratch_bytes(size_t count, int n, size_t es) {
  const size_t half = ((block_len(count, n, 0) + 1) * es + 63) & ~size_t{63};
  return 2 * half;
}

void ring_reduce_scatter_blocks(Progress& p, const Group& g, int rails, const Vec& v, DataType type, ReduceOp op,
                                const MemoryRegion* scratch, size_t slice_bytes) {
  const int n = g.size(), me = g.me;
  if (n <= 1) return;
  const size_t es = size_of(type), max_msg = max_message(p);
  const int right = g.global((me + 1) % n), left = g.global(ring_mod(me - 1, n));
  // Two scratch halves: step s receives into half s%2 while step s-1's half is reduced.
  const size_t half = ring_scratch_bytes(v.count, n, es) / 2;
  auto slices = [&](int blk) { return block_slices(v, n, blk, rails, slice_bytes, max_msg, es); };
  // Step s sends the partial sum of block me-s-1 and reduces block me-s-2 into this
  // member's copy; after n-1 steps block me is complete here. Each slice of step s is
  // sent on as step s+1's as soon as it is reduced, so the steps overlap slice by slice.
  std::vector<std::vector<uint64_t>> recvs(static_cast<size_t>(n - 1)), sends(static_cast<size_t>(n - 1));
  auto post_recvs = [&](int s) {
    if (s >= n - 1) return;
    const BlockSlices in = slices(ring_mod(me - s - 2, n));
    const size_t base = static_cast<size_t>(s % 2) * half;
    for (size_t j = 0; j < in.count(); ++j)
      recvs[static_cast<size_t>(s)].push_back(
          p.recv(left, in.rail(j), LocalSpan{scratch, base + (in.at(j) - in.first) * es, in.len_of(j) * es}));
  };
  post_recvs(0);
  const BlockSlices out0 = slices(ring_mod(me - 1, n));
  for (size_t j = 0; j < out0.count(); ++j)
    sends[0].push_back(p.send(right, out0.rail(j), elems(v, out0.at(j), out0.len_of(j), es)));
  for (int s = 0; s < n - 1; ++s) {
    post_recvs(s + 1);  // its half was last reduced from in step s-1, which is done
    const BlockSlices in = slices(ring_mod(me - s - 2, n));
    const size_t base = static_cast<size_t>(s % 2) * half;
    for (size_t j = 0; j < in.count(); ++j) {
      p.wait(recvs[static_cast<size_t>(s)][j], "a reduce-scatter slice from the left neighbour");
      // In the last step, this step's send of the same slice first: a reduction makes no
      // progress on the wire, and a provider that moves a send in pieces (shm's SAR) would
      // hold the right neighbour's last step up for the whole reduction. Earlier steps do
      // not wait: that would chain every member's step to its right neighbour's.
      if (s == n - 2 && j < sends[static_cast<size_t>(s)].size())
        p.wait(sends[static_cast<size_t>(s)][j], "a reduce-scatter slice to the right neighbour");
      std::byte* dst = v.mr->at(v.offset + in.at(j) * es);
      reduce(scratch->kind(), type, op, dst, scratch->at(base + (in.at(j) - in.first) * es), dst, in.len_of(j));
      // Block me-s-2 is what step s+1 sends: no send of it is in flight while it is reduced.
      if (s + 1 < n - 1)
        sends[static_cast<size_t>(s + 1)].push_back(p.send(right, in.rail(j), elems(v, in.at(j), in.len_of(j), es)));
    }
  }
  for (const auto& step : sends)
    for (uint64_t id : step) p.wait(id, "a reduce-scatter slice to the right neighbour");
}

void ring_all_gather_blocks(Progress& p, const Group& g, int rails, const Vec& v, DataType type, size_t slice_bytes) {
  const int n = g.size(), me = g.me;
  if (n <= 1) return;
  const size_t es = size_of(type), max_msg = max_message(p);
  const int right = g.global((me + 1) % n), left = g.global(ring_mod(me - 1, n));
  auto slices = [&](int blk) { return block_slices(v, n, blk, rails, slice_bytes, max_msg, es); };
  // Every block lands in its own place, so each slice is sent on as step s+1's the moment
  // it arrives. Receives go up one step ahead, which keeps the posted ones to two steps'.
  std::vector<std::vector<uint64_t>> recvs(static_cast<size_t>(n - 1));
  std::vector<uint64_t> sends;
  auto post_recvs = [&](int s) {
    if (s >= n - 1) return;
    const BlockSlices in = slices(ring_mod(me - s - 1, n));
    for (size_t j = 0; j < in.count(); ++j)
      recvs[static_cast<size_t>(s)].push_back(p.recv(left, in.rail(j), elems(v, in.at(j), in.len_of(j), es)));
  };
  post_recvs(0);
  const BlockSlices mine = slices(me);
  for (size_t j = 0; j < mine.count(); ++j)
    sends.push_back(p.send(right, mine.rail(j), elems(v, mine.at(j), mine.len_of(j), es)));
  for (int s = 0; s < n - 1; ++s) {
    post_recvs(s + 1);
    const BlockSlices in = slices(ring_mod(me - s - 1, n));
    for (size_t j = 0; j < in.count(); ++j) {
      p.wait(recvs[static_cast<size_t>(s)][j], "an all-gather slice from the left neighbour");
      if (s + 1 < n - 1) sends.push_back(p.send(right, in.rail(j), elems(v, in.at(j), in.len_of(j), es)));
    }
  }
  for (uint64_t id : sends) p.wait(id, "an all-gather slice to the right neighbour");
}

}  // namespace railbench
