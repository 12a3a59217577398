// Reading what the NCCL Inspector profiler plugin (NCCL's ext-profiler/inspector) wrote
// during a real job: one JSON object a line, one line per sampled collective of one
// communicator on one rank, in <dump dir>/<host>-pid<pid>.log. `railbench compare --job`
// holds these calls against railbench's own figures (job.h); only the fields it reads are
// required, and fields it does not know are ignored.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/core/bandwidth.h"

namespace railbench::compare {

// One line of an Inspector file: one collective of one communicator, as one rank saw it.
struct InspectorRecord {
  std::string file;  // where it was read, for messages
  size_t line = 0;   // 1-based
  std::string comm;  // header.id, the communicator's hash ("0x7f8c496ae9f661")
  int rank = 0;      // header.rank, in the communicator
  int nranks = 0;    // header.n_ranks
  std::string host;  // metadata.hostname ("" when absent)
  std::string coll;  // coll_perf.coll, NCCL's name: "AllReduce", "AllGather", ...
  uint64_t sn = 0;   // coll_perf.coll_sn: the call's sequence number in the communicator
  // coll_perf.coll_msg_size_bytes: count x type size of NCCL's call, so per rank for
  // AllGather and ReduceScatter (their sendcount, recvcount).
  uint64_t msg_bytes = 0;
  double exec_us = 0;                // coll_perf.coll_exec_time_us, whole microseconds
  std::optional<double> file_busbw;  // coll_perf.coll_busbw_gbs, when a number
  // coll_perf.coll_timing_source: "kernel_gpu" (the GPU's clock), "kernel_cpu" or
  // "collective_cpu" (host clocks around the kernel or the call); "" when absent.
  std::string timing_source;
};

// The records of every Inspector file in `paths`, in order; a directory stands for the
// regular files in it (the Inspector's dump directory), by name. Blank lines are
// skipped. Throws UsageError naming the file and line, and the fix, for a line that is
// not a JSON object, lacks a field compare reads or has one of the wrong type, for the
// Inspector's Prometheus output (NCCL_INSPECTOR_PROM_DUMP=1), and for a file that cannot
// be read.
std::vector<InspectorRecord> read_inspector_files(const std::vector<std::string>& paths);
// The same, each record handed to `visit` as it is read (none kept).
void read_inspector_files(const std::vector<std::string>& paths,
                          const std::function<void(const InspectorRecord&)>& visit);

// One line's record (`text` without its line end); throws UsageError as above.
InspectorRecord parse_inspector_line(const std::string& text, const std::string& file, size_t line);

// Whether the file at `path` looks like an Inspector file (its first non-blank line is a
// JSON object with "coll_perf" or the Inspector's Prometheus text, it is empty, or it is
// a directory) rather than a railbench results file: `compare --job` takes both kinds as
// its positional files.
bool looks_like_inspector(const std::string& path);

// What railbench calls NCCL's collective: "AllReduce" -> "allreduce", "AllGather" ->
// "allgather", "ReduceScatter" -> "reducescatter", "AlltoAll" -> "alltoall",
// "Broadcast" -> "broadcast", "Reduce" -> "reduce", "Send"/"Recv"/"SendRecv" ->
// "sendrecv"; any other name in lower case.
std::string railbench_collective(const std::string& nccl_coll);

// The nccl-tests pattern of a railbench collective name (lib/core/bandwidth.h); none for
// those without a bus factor here (reduce and unknown names).
std::optional<Pattern> pattern_of(const std::string& collective);

// nccl-tests' S, the bytes a collective's size counts, from the Inspector's message size:
// msg x n for allgather, reducescatter and alltoall (the Inspector's count is per rank),
// msg otherwise. railbench's "bytes" are the same S.
uint64_t collective_bytes(const std::string& collective, uint64_t msg_bytes, int nranks);

}  // namespace railbench::compare
