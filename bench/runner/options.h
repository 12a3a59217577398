// Command-line options shared by the subcommands, nccl-tests compatible where they overlap.
// Each subcommand keeps its own options beside its code (cmd_*.cc, collective_sweep.h,
// kvcache_options.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace railbench {

struct CommonOptions {
  std::string transport = "ofi";  // -t: "ofi", "ofi:tcp", "ofi:shm", ...
  std::string min_bytes;          // -b (subcommand default when empty)
  std::string max_bytes;          // -e
  uint64_t step_factor = 2;       // -f
  uint64_t step_bytes = 0;        // -i (fixed increment instead of -f)
  int iters = -1;                 // -n (subcommand default when < 0)
  int warmup_iters = -1;          // -w
  bool check = false;             // -c
  std::string json_path;          // --json
  std::string csv_path;           // --csv: the results' rows (bench/runner/results_csv.h)
  std::string prometheus_path;    // --prometheus: the results' metrics (bench/runner/results_metrics.h)
  std::string timeline_path;      // --timeline: the 1 ms traffic timeline (lib/observe/timeline.h)
  // --db [PATH]: rank 0 puts the results file into the run store when the run ends
  // (bench/runner/run_store.h); empty PATH: the default store.
  std::optional<std::string> db;
  bool quiet = false;        // -q: no progress lines on stderr
  bool no_counters = false;  // --no-counters: no fabric counter snapshots around measurements
  std::string rails;         // --rails: a count ("2") or names ("eth0,eth1")
  double timeout_s = 60;     // --timeout: no progress from a peer for this long fails
  // Each transport's own options (--verbs-gid-index, ...) by flag without dashes; the
  // transports declare them (lib/transport/registry.h) and bench/cli adds them.
  std::map<std::string, int> transport_options;
  std::string mem;                // --mem: host, cuda, cuda-host; empty: cuda for -t nccl, else host
  std::string gpu_map;            // --gpu-map: GPU per local rank ("0,1,2,3"); empty: local rank i -> GPU i
  std::string duration;           // --duration: burn-in by time ("10m"; bench/runner/burn_in.h); empty: off
  int cycles = 0;                 // --cycles: burn-in by count of windows; 0: off
  int paths = 0;                  // --paths N: trace the transport's flows to the next N ranks (paths_run.h); 0: off
  double probe_rate = 100;        // --probe-rate: ICMP answers a second asked of any one switch
  std::vector<std::string> argv;  // the command line, recorded in the results
};

}  // namespace railbench
