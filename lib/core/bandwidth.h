// Bandwidth definitions, exactly as nccl-tests defines them (README.md, "What the numbers mean").
#pragma once

#include <cstdint>

namespace railbench {

enum class Pattern : uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast };

// busbw = algbw * factor: all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all
// (n-1)/n; send/recv and broadcast 1. n = 1 gives 0 for the collectives, as nccl-tests.
inline double bus_factor(Pattern p, int n) {
  const double dn = n;
  switch (p) {
    case Pattern::all_reduce: return 2.0 * (dn - 1) / dn;
    case Pattern::all_gather:
    case Pattern::reduce_scatter:
    case Pattern::all_to_all: return (dn - 1) / dn;
    case Pattern::send_recv:
    case Pattern::broadcast: return 1.0;
  }
  return 1.0;
}

// GB/s with GB = 1e9 bytes.
inline double gbps(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds / 1e9 : 0.0;
}

}  // namespace railbench
