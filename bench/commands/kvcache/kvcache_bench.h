// railbench kvcache's driver, shared by its files: the sweep (cmd_kvcache.cc), the
// open-loop serving run (kvcache_serve.cc) and --find-max-rate (kvcache_find_max_rate.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/commands/kvcache/kvcache_options.h"
#include "bench/commands/kvcache/kvcache_report.h"
#include "bench/commands/kvcache/kvserve_load.h"
#include "bench/commands/kvcache/kvserve_search.h"
#include "bench/commands/kvcache/kvserve_source.h"
#include "bench/runner/results_run.h"
#include "bench/runner/run_context.h"
#include "bench/runner/stragglers_run.h"
#include "collectives/kvcache/transfer.h"
#include "lib/results/results.h"

namespace railbench {

class KvCacheBench {
 public:
  KvCacheBench(Bootstrap& bootstrap, const CommonOptions& common, const KvCacheOptions& opt)
      : ctx_(bootstrap, common, "kvcache"), common_(common), opt_(opt) {}
  int run();

 private:
  void open();
  nlohmann::json config_json() const;
  void print_header() const;
  KvRecord run_mode(KvTransfer& transfer, const KvOptions& o, KvMode mode, double& contiguous_gbps);
  int run_serve();
  nlohmann::json serve_entry(const KvOptions& o, KvMode mode, double asked_rps, const KvRunResult& run,
                             const ServeTally& mine, ServeSummary& summary);
  void serve_header() const;
  nlohmann::json request_sizes(const KvOptions& o, double& mean_bytes) const;
  ServeSource serve_source(const KvOptions& o, double rate, uint64_t seed, size_t requests) const;
  KvRunResult serve_run(KvTransfer& transfer, const KvOptions& o, KvMode mode, ServeSource& source, bool check,
                        ServeWindow window, ServeTally& tally);
  nlohmann::json routing_entry(const KvOptions& o, const KvRunResult& run);
  nlohmann::json per_group_entry(const std::string& what, const char* key, const std::vector<int>& ids,
                                 const std::vector<ServeTally::Group>& groups, double window_s) const;
  void print_slowest(const std::string& what, const std::vector<int>& ids,
                     const std::vector<ServeTally::Group>& groups) const;
  nlohmann::json prefill_entry() const;
  nlohmann::json rail_entry(const KvOptions& o, const KvRunResult& run, double wall);
  void find_max_rate_run(ResultsRun& results, KvTransfer& transfer, const KvOptions& o, KvMode mode);
  double measure_capacity(KvTransfer& transfer, const KvOptions& o, KvMode mode, nlohmann::json& out);

  RunContext ctx_;
  const CommonOptions& common_;
  const KvCacheOptions& opt_;
  KvCachePlan plan_;
  std::vector<KvModel> presets_;  // for the what-if table
  std::vector<std::string> skipped_presets_;
  bool ordered_writes_ = false;
  ServeScheduleStats sched_;  // --serve: what the run's schedule holds (sizes, routes, prefill waits)
  uint64_t wrong_ = 0;
  // --stragglers: each (token count, mode) run is one op, collected to rank 0 after it.
  std::unique_ptr<StragglerRecording> stragglers_;
  StragglerThreshold straggler_threshold_;
  uint32_t straggler_op_ = 0;
  void setup_stragglers();
  void finish_stragglers(ResultsRun& results);
};

}  // namespace railbench
