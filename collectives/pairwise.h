// The windowed pairwise exchange that AllToAll and AllToAllV both run: n-1 steps over
// a group, step k sending to member me+k and receiving from member me-k, up to
// `window` steps in flight. The callers say where each member's block comes from and
// lands (any lengths, zero included); this file owns the order, the window, the step
// times and the waits.
#pragma once

#include <functional>
#include <vector>

#include "collectives/group.h"
#include "lib/transport/progress.h"

namespace railbench {

struct PairwiseBlocks {
  std::function<LocalSpan(int member)> send_to;    // what this member sends to `member`
  std::function<LocalSpan(int member)> land_from;  // where the block from `member` lands
  std::function<void()> copy_own;                  // this member's own block; run while the first steps fly
};

// Blocking. step_us[m] gets the microseconds from posting the step that receives from
// member m until m's whole block had arrived (0 for this member). Throws TimeoutError
// naming the peer when one stops answering; `block_what` and `sends_what` name what was
// awaited in that message ("an all-to-all block", "all-to-all sends").
void pairwise_exchange(Progress& p, const Group& g, int rails, int window, const PairwiseBlocks& blocks,
                       std::vector<double>& step_us, const char* block_what, const char* sends_what);

}  // namespace railbench
