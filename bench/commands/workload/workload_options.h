// railbench workload's command line, resolved into the spec the schedule needs.
#pragma once

#include <string>

#include "collectives/workload/schedule.h"

namespace railbench {

struct WorkloadOptions {
  std::string model = "llama-3.1-8b";
  workload::StepSpec spec;
  std::string routing = "uniform";
  uint64_t routing_seed = 1;
  std::string bucket = "25M";
  std::string chunk = "64M";
  std::string slice = "16M";                    // --slice-bytes: the ring's pipeline slice (allreduce's default)
  std::string trace;                            // --trace FILE or 'DIR/name.{rank}.et': run this instead of the spec
  std::string emit_trace;                       // --emit-trace FILE: write the spec's (or --trace's) trace and exit
  std::string emit_trace_format = "railbench";  // railbench, chakra, param, pytorch
  double compute_scale = 1;                     // --compute-scale: a trace's compute stretched or shrunk
  bool no_compute = false;                      // --no-compute: a trace's compute dropped
  int fold = 1;                                 // --fold K: job rank j replays trace rank j*K
  double line_rate_gbps = 400;                  // per rail, for the ideal step
  int ranks_per_node = 0;                       // 0: ranks sharing a host name
  bool no_stragglers = false;                   // --no-stragglers
  std::string straggler_threshold;              // TIME%,ITERS%
};

}  // namespace railbench
