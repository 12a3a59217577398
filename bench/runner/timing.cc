#include "bench/runner/timing.h"

#include "lib/core/clock.h"
#include "lib/core/stats.h"

namespace railbench {

std::vector<double> time_iterations(RunContext& ctx, int warmup, int iters, const std::function<void()>& once) {
  for (int i = 0; i < warmup; ++i) once();
  ctx.bootstrap().barrier();
  std::vector<double> local(static_cast<size_t>(iters));
  // --timeline marks each iteration; its room is made here, outside the timed loop.
  TimelineRecorder* timeline = ctx.timeline();
  if (timeline) timeline->reserve_marks(static_cast<size_t>(iters));
  auto prev = Clock::now();
  for (int i = 0; i < iters; ++i) {
    once();
    auto now = Clock::now();
    const double device_us = ctx.transport().device_time_us();
    local[static_cast<size_t>(i)] = device_us >= 0 ? device_us : seconds_between(prev, now) * 1e6;
    if (timeline) timeline->mark(prev, now);
    prev = now;
  }
  return ctx.bootstrap().all_reduce_max(local);
}

CollectiveSide collective_side(const std::vector<double>& iter_us, uint64_t bytes, Pattern pattern, int ranks) {
  CollectiveSide side;
  side.iter_us = summarize(iter_us);
  side.time_us = side.iter_us.mean;
  side.algbw = gbps(static_cast<double>(bytes), side.time_us * 1e-6);
  side.busbw = side.algbw * bus_factor(pattern, ranks);
  return side;
}

}  // namespace railbench
