// Every rank's clock against rank 0's, NTP-style: rank 0 sends each peer in turn a ping
// over the transport and the peer answers at once with its own clock reading; of
// `rounds` round trips the one with the smallest round-trip time is kept, since it had
// the least queueing to hide. offset = t_peer - (t0_send + t0_recv) / 2, and the truth
// lies within half that round trip of it: the uncertainty. Waits go through Progress, so
// a peer that does not answer fails with a TimeoutError naming it.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/runtime/bootstrap.h"
#include "lib/transport/progress.h"

namespace railbench {

struct ClockOffset {
  int64_t offset_ns = 0;       // this rank's clock minus rank 0's: rank-0 time = t - offset_ns
  int64_t uncertainty_ns = 0;  // half the best round trip (0 for rank 0 itself)
  int64_t best_rtt_ns = 0;
};

// Collective over the transport's ranks (every rank calls it, with no op recorded and
// nothing else in flight): returns every rank's offset on every rank. Uses rail `rail`
// and a small buffer of its own (registered here: may throw the transport's setup errors).
std::vector<ClockOffset> estimate_clock_offsets(Progress& progress, Bootstrap& bootstrap, int rounds = 8, int rail = 0);

// A rank's time `t_ns` on rank 0's clock.
inline int64_t to_rank0_ns(int64_t t_ns, const ClockOffset& c) {
  return t_ns - c.offset_ns;
}

}  // namespace railbench
