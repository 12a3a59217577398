// What the ring algorithms (all-reduce, all-gather, reduce-scatter) share.
#pragma once

#include <algorithm>
#include <cstddef>

#include <fmt/format.h>

#include "collectives/allreduce.h"
#include "lib/core/errors.h"

namespace railbench {

// Throws when the transport cannot run a ring of these options.
inline void check_ring_setup(const Transport& t, const RingOptions& o, const char* what) {
  if (!t.caps().send_recv) {
    throw UnsupportedError(fmt::format("ring {} needs send/recv, which {} ({}) lacks", what, t.name(), t.provider()));
  }
  if (o.rails < 1 || o.rails > t.num_rails()) {
    throw UsageError(fmt::format("ring {} asked for {} rails, transport has {}", what, o.rails, t.num_rails()));
  }
}

// Size of one of the two scratch halves: a chunk of the largest buffer (plus slack for
// uneven chunks), rounded to a cache line so every element in the second half is
// aligned too.
inline size_t ring_half_bytes(size_t max_bytes, int n) {
  return ((max_bytes / static_cast<size_t>(std::max(n, 1))) + 64 + 63) & ~size_t{63};
}

// x mod n for negative x too: ring neighbours are rank - k.
inline int ring_mod(int x, int n) {
  return ((x % n) + n) % n;
}

}  // namespace railbench
