// How railbench times a collective: one definition for every command that reports one
// (the collective commands' tables and validate's collectives phase), so a change to
// how iterations are timed changes every figure built on them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "bench/runner/records.h"
#include "bench/runner/run_context.h"
#include "lib/core/bandwidth.h"
#include "lib/results/results.h"

namespace railbench {

// Times `iters` back-to-back calls after `warmup` untimed ones. One barrier before the
// timed loop, none inside it (as nccl-tests), and each rank records when each of its
// iterations ended, so iteration i's time on a rank is end[i] - end[i-1]. The
// iteration's time is then the maximum over ranks. Transports that run on a GPU (NCCL)
// time each iteration with CUDA events on their stream instead of the host clock.
// Collective over ranks; returns microseconds per iteration.
std::vector<double> time_iterations(RunContext& ctx, int warmup, int iters, const std::function<void()>& once);

// One side's figures from its iteration times: time = mean iteration time (nccl-tests'
// "time"), algbw = bytes / time, busbw = algbw x the pattern's bus factor over `ranks`.
CollectiveSide collective_side(const std::vector<double>& iter_us, uint64_t bytes, Pattern pattern, int ranks);

}  // namespace railbench
