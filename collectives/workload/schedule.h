// A training step from a parallelism spec: the ops every rank issues in one iteration of
// a Megatron-style 1F1B pipeline schedule, as a Trace (trace.h).
//
// Per micro-batch and layer group, forward then (later) backward: tensor-parallel
// all-gather / reduce-scatter of the activations (sequence parallelism: two of each per
// layer, around attention and around the MLP), expert-parallel all-to-all-v dispatch and
// combine per MoE layer, pipeline send/recv of activations (forward) and gradients
// (backward) at stage boundaries. Data-parallel gradients are reduced in buckets as the
// last micro-batch's backward produces them, asynchronously (they overlap the rest of
// the backward), and waited for at the end of the step; with ZeRO-1 they are
// reduce-scattered and the updated parameters all-gathered after the optimizer; with
// ZeRO-3 every layer group's parameters are all-gathered before its forward and
// backward too. Compute is a stand-in: --compute-us per layer forward, twice that
// backward.
#pragma once

#include <cstdint>
#include <string>

#include "collectives/workload/layout.h"
#include "collectives/workload/model.h"
#include "collectives/workload/trace.h"

namespace railbench::workload {

struct StepSpec {
  ParallelShape shape;
  int seq = 4096;         // tokens per sample
  int micro_batch = 1;    // samples per micro-batch
  int micro_batches = 8;  // per step (gradient accumulation)
  int dtype_bytes = 2;    // activations and gradients (bf16)
  std::string dtype = "bf16";
  int zero = 0;                       // 0 (DDP all-reduce), 1 or 3
  int layers = 0;                     // 0: the model's; smaller to keep a test short
  int layers_per_op = 1;              // layers whose traffic goes as one op (fewer, larger ops)
  double compute_us = 0;              // per layer, forward; backward is twice
  uint64_t bucket_bytes = 25u << 20;  // DP gradient bucket, as PyTorch DDP
  TraceRouting routing;               // experts / topk 0: the model's
};

// The step's trace for every rank of `map`, or with `only_rank` >= 0 for that rank alone
// (the other ranks' op lists left empty: what a rank of a large job needs to run its
// part). Throws UsageError for a spec that does not fit the model (layers not divisible
// by pp, more experts per rank than experts, ...).
Trace make_step_trace(const TrainModel& model, const StepSpec& spec, const RankMap& map, int only_rank = -1);

}  // namespace railbench::workload
