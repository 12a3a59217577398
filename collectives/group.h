// What the non-ring algorithms share: a group of ranks (the world, the ranks of one
// node, the ranks of one rail across nodes) and one logical transfer split over rails.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "lib/transport/progress.h"
#include "lib/transport/transport.h"

namespace railbench {

// Ranks taking part in one algorithm, in the order the algorithm numbers them.
struct Group {
  std::vector<int> ranks;  // global ranks, ranks[i] is member i
  int me = 0;              // this rank's member index

  int size() const { return static_cast<int>(ranks.size()); }
  int global(int member) const { return ranks[static_cast<size_t>(member)]; }

  static Group world(const Transport& t) {
    Group g;
    for (int r = 0; r < t.world_size(); ++r) g.ranks.push_back(r);
    g.me = t.rank();
    return g;
  }
};

// Splits one logical transfer of `bytes` over `rails` rails (cache-line multiples, so
// every piece starts aligned) and into messages of at most `max_msg` bytes, calling
// fn(rail, offset, length) per piece. Both sides compute the same pieces in the same
// order, so FIFO matching per (peer, rail) pairs them up.
// One rail's share of a transfer of `bytes` over `rails` rails: a cache-line multiple, or
// the whole transfer when it is under 64 KiB a rail (splitting that buys only overhead).
inline size_t rail_share(size_t bytes, int rails) {
  const size_t r = static_cast<size_t>(std::max(rails, 1));
  constexpr size_t kStripeMin = 64 << 10;
  return bytes < kStripeMin * r ? bytes : ((bytes + r - 1) / r + 63) & ~size_t{63};
}

template <class Fn>
void for_each_piece(size_t bytes, int rails, size_t max_msg, Fn&& fn) {
  if (bytes == 0) return;
  const size_t share = rail_share(bytes, rails);
  int rail = 0;
  for (size_t off = 0; off < bytes; off += share, ++rail) {
    const size_t len = std::min(share, bytes - off);
    for (size_t p = 0; p < len; p += max_msg) fn(rail, off + p, std::min(max_msg, len - p));
  }
}

// Posts the receives, then the sends, of one exchange with `peer` (either may be
// empty) and records their ids in `ids`.
inline void post_exchange(Progress& p, int peer, int rails, const LocalSpan& send, const LocalSpan& recv,
                          std::vector<uint64_t>& ids) {
  const size_t max_msg = std::max<size_t>(p.transport().caps().max_msg_size, 64);
  for_each_piece(recv.length, rails, max_msg, [&](int rail, size_t off, size_t len) {
    ids.push_back(p.recv(peer, rail, LocalSpan{recv.mr, recv.offset + off, len}));
  });
  for_each_piece(send.length, rails, max_msg, [&](int rail, size_t off, size_t len) {
    ids.push_back(p.send(peer, rail, LocalSpan{send.mr, send.offset + off, len}));
  });
}

// Blocking: sends `send` to `to` and receives `recv` from `from` (sizes both sides
// agree on; either may be empty).
inline void send_recv(Progress& p, int rails, int to, const LocalSpan& send, int from, const LocalSpan& recv,
                      const char* what) {
  std::vector<uint64_t> ids;
  post_exchange(p, from, rails, LocalSpan{}, recv, ids);
  post_exchange(p, to, rails, send, LocalSpan{}, ids);
  for (uint64_t id : ids) p.wait(id, what);
}

// Blocking exchange with one peer.
inline void exchange(Progress& p, int peer, int rails, const LocalSpan& send, const LocalSpan& recv, const char* what) {
  send_recv(p, rails, peer, send, peer, recv, what);
}

}  // namespace railbench
