#include "bench/runner/sweep.h"

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/core/sizes.h"

namespace railbench {

Sweep make_sweep(const CommonOptions& options, const SweepDefaults& defaults) {
  Sweep s;
  const uint64_t lo = parse_size(options.min_bytes.empty() ? defaults.min_bytes : options.min_bytes);
  const uint64_t hi = parse_size(options.max_bytes.empty() ? defaults.max_bytes : options.max_bytes);
  s.sizes = size_sweep(lo, hi, options.step_factor, options.step_bytes);
  s.iters = options.iters < 0 ? defaults.iters : options.iters;
  s.warmup = options.warmup_iters < 0 ? defaults.warmup : options.warmup_iters;
  if (s.iters < 1) throw UsageError(fmt::format("-n/--iters {} must be 1 or more", s.iters));
  // Every iteration's time is kept (exact percentiles), on every rank and gathered on rank 0.
  if (s.iters > kMaxIters)
    throw UsageError(fmt::format("-n/--iters {} is more than {}: run fewer iterations (percentiles keep every one)",
                                 s.iters, kMaxIters));
  if (s.warmup > kMaxIters)
    throw UsageError(fmt::format("-w/--warmup-iters {} is more than {}: warm up with fewer", s.warmup, kMaxIters));
  if (s.warmup < 0) throw UsageError(fmt::format("-w/--warmup-iters {} must be 0 or more", s.warmup));
  return s;
}

}  // namespace railbench
