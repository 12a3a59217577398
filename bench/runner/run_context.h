// Everything a subcommand needs around its measurement: the bootstrap, hosts, the
// transport and its Progress, and agreement between ranks on setup errors.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/runner/fabric_counters.h"
#include "bench/runner/memory_setup.h"
#include "bench/runner/options.h"
#include "bench/runner/status_line.h"
#include "bench/runner/timeline_run.h"
#include "bench/runner/transport_factory.h"
#include "lib/core/errors.h"
#include "lib/results/results.h"
#include "lib/runtime/bootstrap.h"
#include "lib/runtime/liveness.h"
#include "lib/transport/progress.h"
#include "lib/transport/transport.h"

namespace railbench {

// A setup error every rank knows about: rank 0 prints it once and all ranks exit
// normally with the same code, instead of aborting the job.
struct AgreedError : Error {
  AgreedError(ErrorCode code, const std::string& what) : Error(code, what) {}
};

class RunContext {
 public:
  // Borrows the bootstrap, which main owns so that it can end the job after errors.
  RunContext(Bootstrap& bootstrap, const CommonOptions& options, std::string command);
  ~RunContext();

  Bootstrap& bootstrap() { return bootstrap_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  const std::vector<std::string>& hosts() const { return hosts_; }
  bool all_on_one_host() const;
  int num_hosts() const;
  std::string peer_name(int rank) const;

  // Runs a local setup step on every rank; if it fails on any rank, every rank throws
  // the same AgreedError naming the ranks and hosts where it failed. `step` must not
  // communicate (a rank that failed would not take part).
  void agree(const std::function<void()>& step);

  // The command line as this run uses it (validate's after its config filled it in).
  const CommonOptions& options() const { return options_; }

  // This rank's --rails, before open_transport (validate: each rank its slot's NIC).
  void set_rails(const std::string& rails) { options_.rails = rails; }

  // Opens the transport named by -t/--rails (agreed), connects all peers, and makes
  // the Progress engine with the run's timeout.
  void open_transport();
  // Wraps the transport once open_transport has connected it, before the Progress engine
  // is made, so every operation goes through the wrapper (--stragglers' op recorder,
  // lib/observe/op_recorder.h). Call before open_transport; wrappers apply in order.
  using TransportWrapper = std::function<std::unique_ptr<Transport>(std::unique_ptr<Transport>)>;
  void wrap_transport(TransportWrapper wrap) { wrappers_.push_back(std::move(wrap)); }
  // Closes the transport (endpoints and completion queues first) while the caller's
  // buffers and memory regions still exist: a command calls it before they go, on every
  // exit path, so a provider never touches freed memory during teardown. Idempotent.
  void close_transport() noexcept;
  Transport& transport() { return *transport_; }
  const Transport& transport() const { return *transport_; }
  Progress& progress() { return *progress_; }
  const TransportSpec& transport_spec() const { return spec_; }
  // This rank's --mem / --gpu-map placement, resolved by open_transport.
  const MemoryPlacement& placement() const { return placement_; }
  MemoryKind memory_kind() const { return placement_.kind; }
  // Index of this rank among the ranks on its host: the launcher's local rank when it
  // gives one, else the count of lower ranks on the same host.
  int local_rank() const;
  // Every rank's local rank as its launcher gave it (-1: not given).
  const std::vector<int>& launcher_local_ranks() const { return launcher_local_ranks_; }

  // The results header: command, argv, config, world and transport.
  nlohmann::json results_header(nlohmann::json config) const;

  // Every rank's per-channel counters, for the results' "channels" field, on rank 0 (an
  // empty array elsewhere; collective: all ranks call it).
  nlohmann::json gather_channels();

  // --timeline: this rank's recorder (nullptr without it), for iteration marks.
  TimelineRecorder* timeline() { return timeline_ ? &timeline_->recorder() : nullptr; }
  // Collective: with --timeline, gathers every rank's timeline, writes the file, sets
  // the results' "timeline" field and prints its summary; nothing without it.
  void finish_timeline(ResultsFile& results);
  // Fabric counters around one measurement (bench/runner/fabric_counters.h), after
  // open_transport: counters_begin() snapshots this rank's rails; counters_end() is
  // collective and returns every rank's deltas (null with --no-counters), for the
  // measurement's "counters" field.
  void counters_begin();
  nlohmann::json counters_end();
  // This rank's deltas only, no communication (validate carries them in its pair results).
  nlohmann::json counters_end_local();

  // rank 0 only: a line to stdout (tables), flushed so a later failure keeps it; the
  // live progress line steps aside for it.
  void print(const std::string& line) const;
  // Where the run is (bench/runner/status_line.h): rank 0's stderr, unless --quiet.
  StatusLine& status() const { return *status_; }
  // "allreduce: size 12/24 (1M), 00:03 elapsed" as a step.
  void sweep_step(size_t index, size_t count, uint64_t bytes) const;
  // rank 0 writes the rows of `results` to --csv and its metrics to --prometheus too,
  // with every rewrite.
  void add_csv(ResultsFile& results) const;

 private:
  // No more ranks on this machine than CPUs they may run on together.
  bool has_own_core() const;
  void find_own_cores();  // sets own_core_ from the gathered boot ids and affinities
  void trace_paths();     // --paths: every rank's flows traced, into paths_ (rank 0)

  CommonOptions options_;
  std::string command_;
  Bootstrap& bootstrap_;
  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;
  std::vector<std::string> boot_ids_;    // per rank: its kernel's boot id, "" if unreadable
  std::vector<std::string> affinities_;  // per rank: the CPUs it may run on, "0-3,8"; "" if unreadable
  std::vector<bool> own_core_;           // per rank: has_own_core() as that rank sees it
  nlohmann::json paths_;                 // --paths: the traced flows (rank 0), the results' "paths"; null: not traced
  std::vector<long> pids_;               // per rank: its process id on its host
  std::vector<int> launcher_local_ranks_;
  std::unique_ptr<Liveness> liveness_;  // names a stopped or dead rank when a wait times out
  TransportSpec spec_;
  std::unique_ptr<Transport> transport_;
  std::vector<TransportWrapper> wrappers_;
  std::unique_ptr<RunTimeline> timeline_;  // --timeline: owns the recorder the transport writes to
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<FabricCounters> counters_;
  std::vector<nlohmann::json> rank_rails_;   // per rank: its rails as JSON
  std::vector<nlohmann::json> rank_memory_;  // per rank: its MemoryPlacement as JSON
  MemoryPlacement placement_;
  std::unique_ptr<StatusLine> status_;
};

}  // namespace railbench
