// `railbench compare --job`: a real job's NCCL collectives (the NCCL Inspector's records,
// inspector.h) against what railbench measured the fabric can do for the same
// collective, size and rank count. Per collective and size: the job's busbw, railbench's,
// the share the job got, and the time it lost against railbench's rate. Pure functions
// over records and results documents: no transport, no ranks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/offline/compare/inspector.h"
#include "lib/store/store.h"

namespace railbench::compare {

// Every call the job made of one collective at one rank count and size.
struct JobGroup {
  std::string collective;  // railbench's name: "allreduce"
  std::string nccl_name;   // the Inspector's: "AllReduce"
  int nranks = 0;
  uint64_t bytes = 0;                  // nccl-tests' S (inspector.h, collective_bytes)
  std::vector<double> time_us;         // per call (communicator, coll_sn): its slowest recorded rank
  size_t untimed = 0;                  // calls whose every record says 0 us (below the Inspector's 1 us grain)
  std::set<std::string> comms, hosts;  // the communicators and the hosts they ran on
  size_t busbw_mismatches = 0;         // records whose coll_busbw_gbs is not S x factor / time (within 1%)
  size_t host_timed = 0;               // records timed by a host clock, not the GPU's (coll_timing_source)
  double total_us() const;
};

// The records grouped into calls (one per communicator and coll_sn, its time the slowest
// rank's: railbench's definition of an iteration's time) and the calls into groups,
// ordered by collective, rank count and size. add() each record; groups() once, at the end.
// It keeps one time per call, not the records.
class CallGrouper {
 public:
  void add(const InspectorRecord& r);
  std::vector<JobGroup> groups();

 private:
  using GroupKey = std::tuple<std::string, int, uint64_t, std::string>;  // collective, n, S, NCCL name
  std::map<GroupKey, JobGroup> groups_;
  std::map<GroupKey, std::map<std::pair<uint32_t, uint64_t>, double>> calls_;  // (comm, coll_sn) -> slowest us
  std::map<std::string, uint32_t> comm_index_;
  std::vector<std::set<std::string>> comm_hosts_;
};
std::vector<JobGroup> group_calls(const std::vector<InspectorRecord>& records);

// What railbench measured for one collective at one rank count, from one results file.
struct FabricCurve {
  std::string collective;
  int nranks = 0;
  std::string source;                               // the results file
  std::vector<std::pair<uint64_t, double>> points;  // (S bytes, busbw GB/s), by size
  std::set<std::string> hosts;
};

// The curves of one results document: a collective sweep (allreduce, allgather,
// reducescatter, alltoall without --routing: out-of-place busbw, else in-place) or
// validate's collectives. Other commands give none.
std::vector<FabricCurve> fabric_curves(const nlohmann::json& doc, const std::string& path);

// The curves of collective sweeps a run store holds (store::Store::collective_runs, newest
// first): one per run, its rank count as stored and its hosts, its source "store
// NAME: run KEY of STARTED_AT". Names of sizes the store writes ("4M", "512B") are read
// back to bytes; a name that is no size is skipped, and so is a run without its rank
// count (ingested by an older railbench).
std::vector<FabricCurve> fabric_curves_of_store(const std::vector<store::Store::CollectiveRun>& runs,
                                                const std::string& store_name);

// railbench's busbw at `bytes`: the measured size, or interpolated linearly in log(size)
// between the two sizes that bracket it; none outside the sweep.
struct FabricFigure {
  double busbw = 0;
  bool exact = false;
  uint64_t below = 0, above = 0;  // the sizes it lies between (both `bytes` when exact)
};
std::optional<FabricFigure> fabric_at(const FabricCurve& curve, uint64_t bytes);

// One group of the job held against the fabric.
struct JobRow {
  JobGroup group;
  double busbw_p50 = 0, busbw_p10 = 0, busbw_p90 = 0;  // nearest-rank over the timed calls
  std::optional<FabricFigure> fabric;                  // none: not compared, see `why`
  std::string source;                                  // the results file of `fabric`
  double share = 0;                                    // busbw_p50 / fabric busbw
  double fabric_time_us = 0;                           // one call at railbench's rate
  double lost_us = 0;                                  // calls x (mean job time - fabric_time_us)
  std::string nodes = "unknown";                       // "same", "different" or "unknown"
  std::set<std::string> fabric_hosts;
  std::string why;  // when not compared: the reason and the fix
};

struct JobComparison {
  std::vector<JobRow> rows;        // in group order
  std::vector<size_t> shortfalls;  // rows that lost time, the most lost first
  size_t compared() const;
};

// Every group held against the curve of the same collective and rank count (the first
// whose hosts are the job's, else the first given).
JobComparison compare_job(const std::vector<JobGroup>& groups, const std::vector<FabricCurve>& curves);

// The command: reads `inspector_paths` and `results_paths`, prints the table, the
// shortfalls and the summary, writes `json_path` when given. Throws UsageError when no
// group could be compared (each reason and fix) or an input is bad. Returns 0.
// `stored`: curves from a run store (--db), held after the results files' ones.
int run_compare_job(const std::vector<std::string>& inspector_paths, const std::vector<std::string>& results_paths,
                    const std::string& json_path, const std::vector<FabricCurve>& stored = {});

// The printed report and the --json document (job_output.cc).
std::vector<std::string> job_table_lines(const JobComparison& c);
std::string job_summary_line(const JobComparison& c);
nlohmann::json job_json(const JobComparison& c, const std::vector<std::string>& inspector_paths,
                        const std::vector<std::string>& results_paths);

}  // namespace railbench::compare
