// One training step's communication as every rank issues it: the format railbench's
// workload executor runs, whether it came from a parallelism spec (schedule.h) or from a
// file (--trace, e.g. converted from a PARAM / Chakra execution trace). A trace lists the
// groups (name, kind, member ranks) and, per rank, its ops in issue order; the executor
// repeats the step --iters times.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/workload/layout.h"

namespace railbench::workload {

enum class OpType { compute, all_reduce, reduce_scatter, all_gather, all_to_all_v, send, recv, sendrecv, wait };
const char* to_string(OpType t);

struct Op {
  OpType type = OpType::compute;
  double us = 0;       // compute: microseconds of stand-in work
  int group = -1;      // collectives: index into Trace::groups
  uint64_t bytes = 0;  // all_reduce: the vector; reduce_scatter: the input; all_gather: the output;
                       // send / sendrecv: bytes sent
  int peer = -1;       // send, sendrecv: the destination rank
  int from = -1;       // recv, sendrecv: the source rank
  uint64_t recv_bytes = 0;
  bool async = false;  // issued now, completed by a later wait: overlaps the compute after it
  // all_to_all_v: bytes to each member (explicit splits), or routed tokens.
  std::vector<uint64_t> split_bytes;
  uint64_t tokens = 0;             // routed: tokens this rank dispatches (each to topk experts)
  uint64_t token_bytes = 0;        // routed: bytes per token
  uint32_t route_key = 0;          // routed: which routing draw (layer, micro-batch, pass)
  GroupKind kind = GroupKind::tp;  // what the op belongs to (p2p ops: pp)
  std::string label;               // "F L0-3 mb2 attn-ag": where it sits in the step
};

struct TraceRouting {
  std::string distribution = "uniform";  // uniform, zipf:S, file:PATH
  int experts = 0;
  int topk = 0;
  uint64_t seed = 1;
};

struct Trace {
  int world = 0;
  std::string dtype = "bf16";
  std::vector<GroupDef> groups;
  std::vector<std::vector<Op>> ranks;  // ranks[r]: rank r's ops of one step
  TraceRouting routing;                // for routed all_to_all_v ops
  nlohmann::json meta;                 // what made it (model, shape, options): recorded in the results
};

// The trace file's JSON (format "railbench-workload-trace", version 1; documented in
// bench/commands/workload/README.md).
nlohmann::json to_json(const Trace& t);
// Parses and checks a trace file's JSON; throws UsageError naming the rank, op and field.
Trace trace_from_json(const nlohmann::json& j, const std::string& where);

// Everything a run needs settled before any rank opens a transport: ranks within the
// world, collective ops issued by members of their group only and in the same order
// with the same size on every member, every send matched by a receive of the same size,
// and no deadlock when each op blocks until its peers reach it (ops are simulated in
// issue order; a send completes only once its receive is posted). Throws UsageError
// naming the first stuck ranks and their ops.
void check_trace(const Trace& t);

}  // namespace railbench::workload
