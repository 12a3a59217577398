#include "collectives/group_ops.h"

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

void ring_reduce_scatter_blocks(Progress& p, const Group& g, int rails, const Vec& v, DataType type, ReduceOp op,
                                const MemoryRegion* scratch) {
  const int n = g.size(), me = g.me;
  if (n <= 1) return;
  const size_t es = size_of(type);
  const int right = g.global((me + 1) % n), left = g.global(ring_mod(me - 1, n));
  // Step s sends the partial sum of block me-s-1 and reduces block me-s-2 into this
  // member's copy; after n-1 steps block me is complete here.
  for (int s = 0; s < n - 1; ++s) {
    const int out = ring_mod(me - s - 1, n), in = ring_mod(me - s - 2, n);
    const size_t in_first = block_first(v.count, n, in), in_len = block_len(v.count, n, in);
    send_recv(p, rails, right, elems(v, block_first(v.count, n, out), block_len(v.count, n, out), es), left,
              LocalSpan{scratch, 0, in_len * es}, "a reduce-scatter block from the left neighbour");
    reduce(scratch->kind(), type, op, v.mr->at(v.offset + in_first * es), scratch->data(),
           v.mr->at(v.offset + in_first * es), in_len);
  }
}

void ring_all_gather_blocks(Progress& p, const Group& g, int rails, const Vec& v, DataType type) {
  const int n = g.size(), me = g.me;
  if (n <= 1) return;
  const size_t es = size_of(type);
  const int right = g.global((me + 1) % n), left = g.global(ring_mod(me - 1, n));
  for (int s = 0; s < n - 1; ++s) {
    const int out = ring_mod(me - s, n), in = ring_mod(me - s - 1, n);
    send_recv(p, rails, right, elems(v, block_first(v.count, n, out), block_len(v.count, n, out), es), left,
              elems(v, block_first(v.count, n, in), block_len(v.count, n, in), es),
              "an all-gather block from the left neighbour");
  }
}

}  // namespace railbench
