// Message sizes as users type them (8, 4K, 1M, 1G) and nccl-tests style sweeps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace railbench {

// Parses "8", "4K", "4k", "4KB", "1M", "1MiB", "1G": K/M/G are powers of 1024, as in
// nccl-tests and perftest. Throws UsageError naming the text and the accepted forms.
uint64_t parse_size(std::string_view text);

// Saturating byte arithmetic for memory estimates: an absurd request must read as "too
// large" (UINT64_MAX), never wrap around to something small.
inline uint64_t mul_sat(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
inline uint64_t add_sat(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

// "4K", "1M", "1.5M": the shortest exact binary-prefix spelling, else plain bytes.
std::string format_size(uint64_t bytes);

// The most sizes one sweep may have (bench/cli/README.md, "Limits"): -i over a wide range would
// otherwise ask for billions of sizes.
inline constexpr uint64_t kMaxSweepSizes = 10000;

// nccl-tests sweep: min, min*factor, ... while <= max (so max is measured only when a
// step lands on it, as in nccl-tests). factor must be >= 2 unless min == max;
// step_bytes, when non-zero, replaces the factor by a fixed increment (nccl-tests -i).
// Throws UsageError for more than kMaxSweepSizes sizes.
std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, uint64_t factor, uint64_t step_bytes = 0);

}  // namespace railbench
