// Sizes and iteration counts of a sweep, from the common options and a subcommand's defaults.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/runner/options.h"

namespace railbench {

struct Sweep {
  std::vector<uint64_t> sizes;
  int iters = 0;
  int warmup = 0;
};

// The most timed (or warm-up) iterations per size (bench/cli/README.md, "Limits").
inline constexpr int kMaxIters = 1000000;

struct SweepDefaults {
  const char* min_bytes;
  const char* max_bytes;
  int iters;
  int warmup;
};

// Throws UsageError for sizes that do not parse, -b > -e, bad factors or counts.
Sweep make_sweep(const CommonOptions& options, const SweepDefaults& defaults);

}  // namespace railbench
