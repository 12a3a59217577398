// What railbench workload prints and records after its iterations: the rank map, the
// per-kind figures, the ideal step at line rate and the what-if at faster NICs.
#pragma once

#include <array>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/runner/run_context.h"
#include "collectives/workload/trace.h"

namespace railbench {

struct WorkloadTotals {
  std::array<std::vector<double>, 5> op_us;  // per GroupKind: op times (a sample of every rank's)
  std::array<double, 5> bytes{};             // per kind: the busiest rank's bytes per step (mean over iterations)
  std::array<double, 5> bus_bytes{};         // the same with nccl-tests' bus factor
  std::array<double, 5> kind_us{};           // per kind: the slowest rank's time, summed over iterations
  std::vector<double> step_us, exposed_us;   // per iteration: the slowest rank's
  double compute_us = 0;                     // nominal compute of a step
  double sync_link_bytes = 0, async_link_bytes = 0;  // the busiest rank's link bytes per step
  int iterations = 0, micro_batches = 1, rails = 1;
  double line_rate_gbps = 400;
  double imbalance = 1, worst_imbalance = 1;  // EP: max / mean token copies per expert
  double rank_imbalance = 1;                  // EP: max / mean token copies per member
  uint64_t wrong = 0;
};

// Rank 0: which ranks form each kind of group (a few of each, then a count).
void print_rank_map(const RunContext& ctx, const workload::Trace& trace);

// Rank 0 prints; every rank returns the results' "summary".
nlohmann::json print_workload_summary(const RunContext& ctx, const WorkloadTotals& t, bool check);

// The step at `gbps` per rail if the fabric ran at line rate: compute, the synchronous
// communication's link bytes at that rate, and what of the async (DP) traffic does not fit
// under the last micro-batch's backward.
double ideal_step_us(const WorkloadTotals& t, double gbps);

}  // namespace railbench
