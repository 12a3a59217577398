// What railbench workload prints and records after its iterations: the rank map, the
// per-kind figures, the ideal step at line rate and the what-if at faster NICs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
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

// One op's place in a step on one rank (us from the step's start).
struct TimelineSpan {
  uint32_t pc = 0;  // the op's index in the rank's list
  float start_us = 0, end_us = 0;
};
inline constexpr size_t kTimelineOps = 4000;  // the longest ops of a larger step are kept

// This rank's spans of one step for the timeline: every communicating op and every
// compute op that waited; the kTimelineOps longest if there are more.
std::vector<TimelineSpan> timeline_spans(const workload::Trace& trace, int rank, const std::vector<float>& start_us,
                                         const std::vector<float>& end_us);
// The results' "step_timeline": `rank`'s ops of step `iteration` with their kind, type
// and label from the trace.
nlohmann::json timeline_json(const workload::Trace& trace, int rank, const std::string& node, int iteration,
                             double step_us, const std::vector<TimelineSpan>& spans);

// Rank 0: which ranks form each kind of group (a few of each, then a count).
void print_rank_map(const RunContext& ctx, const workload::Trace& trace);

// Rank 0 prints; every rank returns the results' "summary".
nlohmann::json print_workload_summary(const RunContext& ctx, const WorkloadTotals& t, bool check);

// The step at `gbps` per rail if the fabric ran at line rate: compute, the synchronous
// communication's link bytes at that rate, and what of the async (DP) traffic does not fit
// under the last micro-batch's backward.
double ideal_step_us(const WorkloadTotals& t, double gbps);

}  // namespace railbench
