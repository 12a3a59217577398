#include "collectives/pairwise.h"

#include <algorithm>

#include "lib/core/clock.h"

namespace railbench {

void pairwise_exchange(Progress& p, const Group& g, int rails, int window, const PairwiseBlocks& blocks,
                       std::vector<double>& step_us, const char* block_what, const char* sends_what) {
  const int n = g.size(), me = g.me;
  step_us.assign(static_cast<size_t>(n), 0.0);
  struct Step {
    int from = 0;
    Clock::time_point posted;
    std::vector<uint64_t> recvs;  // the pieces of the block from `from`
  };
  std::vector<Step> active;
  std::vector<uint64_t> sends, pending;
  int next = 1;
  auto post_step = [&] {
    const int to = (me + next) % n, from = (me - next + n) % n;
    Step s{from, Clock::now(), {}};
    post_exchange(p, g.global(from), rails, LocalSpan{}, blocks.land_from(from), s.recvs);
    post_exchange(p, g.global(to), rails, blocks.send_to(to), LocalSpan{}, sends);
    active.push_back(std::move(s));
    ++next;
  };
  while (next < n && static_cast<int>(active.size()) < window) post_step();
  // This member's own block is copied while the first steps are in flight, not before.
  if (blocks.copy_own) blocks.copy_own();
  while (!active.empty()) {
    // Retire every step whose block is complete; each retired step admits the next.
    bool retired = false;
    for (size_t i = 0; i < active.size();) {
      Step& s = active[i];
      if (std::all_of(s.recvs.begin(), s.recvs.end(), [&](uint64_t id) { return p.done(id); })) {
        step_us[static_cast<size_t>(s.from)] = seconds_between(s.posted, Clock::now()) * 1e6;
        active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
        retired = true;
        if (next < n) post_step();
      } else {
        ++i;
      }
    }
    if (retired || active.empty()) continue;
    pending.clear();
    for (const Step& s : active)
      for (uint64_t id : s.recvs)
        if (!p.done(id)) pending.push_back(id);
    p.wait_any(pending, block_what);
  }
  for (uint64_t id : sends) p.wait(id, sends_what);
}

}  // namespace railbench
