// Runs one rank's part of a Trace over a Progress engine, step after step: collectives
// over the trace's groups (ring reduce-scatter / all-gather, the all-reduce as the two,
// all-to-all-v pairwise), send/recv with stage neighbours, compute as a timed wait.
//
// Async ops (DP gradient buckets) are issued where the schedule issues them and run to
// completion there; the time they take is credited against the compute that follows
// until the step's wait, which is what overlapping them with the backward does on a GPU
// (the NIC moves the bucket while the SMs compute). Ops of one rank therefore never
// interleave on the wire: two groups that share a pair of ranks (EP inside DP) need no
// tag to keep their messages apart, since each channel (peer, rail) sees one op's
// messages at a time, in the trace's order on both sides.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "collectives/moe_routing.h"
#include "collectives/workload/trace.h"
#include "lib/core/datatype.h"
#include "lib/transport/gpu.h"
#include "lib/transport/progress.h"

namespace railbench {
class AllToAllV;
}

namespace railbench::workload {

struct ExecOptions {
  int rails = 1;
  DataType type = DataType::bf16;
  bool check = false;  // fill every op's data and verify what arrived
  uint32_t seed = 1;
  uint64_t chunk_bytes = 64u << 20;  // an op larger than this runs as several of at most this size
  // Ring collectives cut each block into slices of this size, round-robin over the rails,
  // and send a slice on to the next step as soon as it is in: steps overlap. 0: one slice
  // per rail.
  uint64_t slice_bytes = 0;
  MemoryKind memory = MemoryKind::host;
};

// Seen around every op that communicates (not compute, not wait).
struct OpHooks {
  std::function<void(size_t pc, const Op& op)> begin;  // this rank is ready: its arrival
  std::function<void(size_t pc, const Op& op)> end;
};

struct StepTimes {
  double step_us = 0;
  double compute_us = 0;                       // nominal compute of the step (what the trace asks for)
  double slept_us = 0;                         // compute actually waited (nominal minus what async ops covered)
  double async_us = 0;                         // time in async ops
  double kind_us[5] = {0, 0, 0, 0, 0};         // time in ops per GroupKind (sync and async)
  double kind_bytes[5] = {0, 0, 0, 0, 0};      // bytes of the kind's ops (all-to-all-v: sent to others)
  double kind_bus_bytes[5] = {0, 0, 0, 0, 0};  // the same times nccl-tests' bus factor
  std::vector<float> op_us;                    // per op of the rank's list; 0 for compute and wait
  // Per op, where it sat in the step (us from the step's start): a communicating op from
  // its start to its return, a compute op over the time it actually waited (less where
  // async ops already covered it), a wait at its point. For a step's timeline.
  std::vector<float> op_start_us, op_end_us;
};

class Executor {
 public:
  Executor(Progress& progress, const Trace& trace, int rank, const ExecOptions& options);
  ~Executor();

  // One step (iteration `iter`: routed all-to-all-v draws differ per iteration).
  StepTimes run_step(int iter, const OpHooks& hooks);
  // Elements that arrived wrong so far (with check).
  uint64_t wrong() const { return wrong_; }
  // Bytes the busiest link of this rank carries per step, per kind (for the line-rate ideal).
  double step_link_bytes(bool async) const { return async ? async_link_bytes_ : sync_link_bytes_; }
  // EP: max / mean token copies per expert (moe_routing.h), the mean and the worst over
  // the routed ops so far (1 when none).
  // rank_mean: max / mean token copies one member receives, the mean over the routed
  // ops (the all-to-all-v lasts as long as its busiest member's share).
  struct Imbalance {
    double mean = 1, worst = 1, rank_mean = 1;
  };
  Imbalance expert_imbalance() const;

 private:
  // One op of a step: compute waits (less what async ops covered), a wait ends the
  // overlap, anything else communicates and is timed into `st`.
  void run_one(size_t pc, const Op& op, int iter, const OpHooks& hooks, StepTimes& st);
  void run_op(size_t pc, const Op& op, int iter);
  void collective(const Op& op, int iter);
  void p2p(const Op& op);
  void alltoallv(size_t pc, const Op& op, int iter);
  void splits(size_t pc, const Op& op, int iter, std::vector<uint64_t>& send, std::vector<uint64_t>& recv);
  void prepare();

  Progress& p_;
  const Trace& t_;
  int rank_;
  ExecOptions opt_;
  std::unique_ptr<gpu::Buffer> buf_, scratch_;
  std::unique_ptr<MemoryRegion> mr_, scratch_mr_;
  uint64_t capacity_ = 0;  // bytes of each of the two halves of buf_
  uint64_t wrong_ = 0;
  double credit_us_ = 0;                                 // async time not yet set against compute
  std::map<int, std::unique_ptr<AllToAllV>> alltoallv_;  // per EP group
  uint64_t a2av_sent_ = 0;                               // the last all-to-all-v's bytes to other members
  double sync_link_bytes_ = 0, async_link_bytes_ = 0;    // link bytes of one step (routed ops: expected)
  std::vector<std::vector<uint64_t>> recv_splits_;       // per op of this rank (explicit all-to-all-v)
  RoutingSpec routing_spec_;                             // parsed once (a file: read once)
  std::unique_ptr<MoeRouting> routed_;
  uint32_t routed_key_ = 0;
  int routed_iter_ = 0;
  double expert_max_ = 0, expert_sum_ = 0, rank_sum_ = 0;
  uint64_t expert_draws_ = 0;
  std::vector<std::byte> host_;  // staging for check with device memory
};

}  // namespace railbench::workload
