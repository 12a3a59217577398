// Traces recorded outside railbench (Chakra execution traces, PARAM's comms JSON,
// PyTorch execution trace JSON) read into workload::Trace, so that the executor, the
// reports and the straggler attribution run them unchanged. Each format's reader turns
// one rank's file into a RankTrace (items in issue order, the process groups it names,
// what it skipped); to_trace joins the ranks into one Trace and refuses, naming the file,
// the node and the field, what would hang or not add up. The readers and writers live one
// per file beside this one (trace_chakra.cc, trace_param.cc, trace_pytorch.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/workload/trace.h"

namespace railbench::workload::formats {

enum class ItemKind { compute, collective, send, recv, wait };

// One thing a rank does, in the executor's terms.
struct Item {
  ItemKind kind = ItemKind::compute;
  OpType op = OpType::compute;        // collective: all_reduce, reduce_scatter, all_gather, all_to_all_v
  uint64_t bytes = 0;                 // as workload::Op::bytes (all-gather: output; reduce-scatter: input)
  std::vector<uint64_t> split_bytes;  // all_to_all_v: bytes to each member in the group's order
  std::string pg;                     // collective: the process group's name
  int peer = -1;                      // send: the destination; recv: the source (trace ranks)
  double us = 0;                      // compute: microseconds
  bool async = false;                 // collective issued now and waited for by a later wait
  bool after_prev = false;            // depends on the item before it (a send and a receive that do
                                      // not are posted together, as one exchange)
  bool pairable = true;               // a send or receive that may go with its neighbour as one exchange
                                      // (PARAM: use_batch, isend / irecv)
  uint64_t node = 0;                  // the node id or record index, for messages
  std::string label;
};

// A process group as a trace records it; empty ranks: every rank of the trace.
struct ProcessGroup {
  std::string name, desc;
  std::vector<int> ranks;
  // The backend's object id (pg_config's "backend_id"), by which older PyTorch execution
  // traces' record_param_comms name the group instead of its pg_name. "" when not given.
  std::string backend_id;
};

// The format's own names of the fields a refusal points at.
struct FieldNames {
  std::string bytes = "bytes", pg = "pg", dst = "peer", src = "from";
};

struct RankTrace {
  std::string file;
  std::string format;  // chakra, param, pytorch
  FieldNames fields;
  std::vector<Item> items;
  std::vector<ProcessGroup> pgs;
  std::string dtype;                        // bf16, f16 or f32 where the file says; "" otherwise
  std::map<std::string, uint64_t> skipped;  // what was read but not replayed, by reason
};

struct ImportOptions {
  double compute_scale = 1;  // --compute-scale: compute waits stretched (>1) or shrunk
  bool no_compute = false;   // --no-compute: compute dropped
  int fold = 1;              // --fold K: job rank j replays trace rank j*K
};

// Joins the ranks' files (ranks[r]: trace rank r) into one checked Trace (check_trace):
// process groups agree between files, every rank issues the same collectives on a group,
// every send has its receive of the same size on the peer. Throws UsageError naming the
// file, the node and the field.
Trace to_trace(const std::vector<RankTrace>& ranks, const ImportOptions& o);

// A dependency graph's nodes (a Chakra trace's) in file order, with their direct
// dependencies (node ids; ids not in the graph are taken as done).
struct GraphNode {
  Item item;
  std::vector<uint64_t> deps;  // data dependencies (Chakra's data_deps)
  std::vector<uint64_t> ctrl;  // control dependencies (ctrl_deps)
};
// The issue order: a topological order that keeps the file's order where the
// dependencies allow. A collective that the next item does not depend on is issued
// async, with a wait before its first dependent (or at the end). Where control edges
// close a cycle with the data edges (older Chakra converters made a CPU op's GPU kernel
// its ctrl_dep while the kernel's data_deps name the op), the control edges of the
// nodes caught in it are dropped and counted in `dropped_ctrl`. Throws UsageError naming
// a node of a cycle that the data edges alone make.
std::vector<Item> issue_order(const std::vector<GraphNode>& nodes, const std::string& file,
                              size_t* dropped_ctrl = nullptr);

// --fold K: a trace of world W = K x N replayed on N ranks, job rank j playing trace rank
// j*K. Groups keep their replayed members; a collective left with one member, and a
// send or receive whose peer is not replayed, are dropped (counted in meta.fold).
Trace fold_trace(const Trace& t, int k);

// The group kind a process group plays: from its description or name (tp/tensor,
// pp/pipe, edp, ep/expert, dp/data), else tp for consecutive ranks fewer than the
// world, dp otherwise.
GroupKind guess_kind(const ProcessGroup& pg, int world);

// PyTorch's process-group config (process_group:init's input): a JSON list of
// {"pg_name", "pg_desc", "ranks", ...}, found in `text` as it is or inside the text of a
// Python list (a Chakra trace's IOInfo values). Throws UsageError naming `where`.
std::vector<ProcessGroup> parse_pg_config(std::string_view text, const std::string& where);
// The same config for a Trace's groups, as the writers record it: pg_name the group's
// index, pg_desc its name (which carries its kind: tp0, dp1, ...).
nlohmann::json pg_config(const Trace& t);

// A group every rank is in (`name`, e.g. a Chakra trace's implicit "world" or PARAM's
// default group "0"), added to `r.pgs` when a collective names it and no group defines it.
void add_default_group(RankTrace& r, const std::string& name, const std::string& desc);

// A communication's name as PARAM and PyTorch record it (all_reduce, allreduce,
// _allgather_base, all_gather_into_tensor, reduce_scatter_tensor, all_to_allv,
// alltoall_base, isend, irecv, wait, ...): what it replays as. nullopt for one the
// executor has no algorithm for (broadcast, reduce, gather, scatter, barrier, ...);
// "init" is ItemKind::compute with OpType::compute (a process group's creation).
struct CommName {
  ItemKind kind;
  OpType op;
};
std::optional<CommName> comm_name(const std::string& name);

// "bfloat16", "BFloat16", "c10::BFloat16", "half", "float", "double", "int", "long",
// "byte", "char", "bool": the element's size in bytes (0 when unknown).
size_t dtype_bytes(const std::string& dtype);
// The executor's dtype for a trace's element type: bf16, f16 or f32 ("" otherwise).
std::string executor_dtype(const std::string& dtype);

}  // namespace railbench::workload::formats
