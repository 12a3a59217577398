// --timeline around one command's run: wraps the transport so completions fill this
// rank's 1 ms buckets, samples the rails' interfaces (one rank per host), and at the end
// gathers every rank's timeline, writes the file (rank 0), records it in the results
// and prints what the busiest links' graphs would have shown.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/observe/timeline.h"
#include "lib/observe/timeline_transport.h"
#include "lib/runtime/bootstrap.h"

namespace railbench {

class ResultsFile;

class RunTimeline {
 public:
  // `sample_interfaces`: this rank reads the rails' interface counters (the first
  // rank on each host, so a host's interfaces are counted once).
  RunTimeline(std::string path, int ranks, std::unique_ptr<Transport>& transport, bool sample_interfaces);
  ~RunTimeline();
  RunTimeline(const RunTimeline&) = delete;
  RunTimeline& operator=(const RunTimeline&) = delete;

  TimelineRecorder& recorder() { return *recorder_; }
  // Collective over ranks. Rank 0 writes the file, sets the results' "timeline" field
  // and returns the summary lines to print; the others return nothing.
  std::vector<std::string> finish(Bootstrap& bootstrap, ResultsFile& results);

 private:
  std::string path_;
  std::unique_ptr<TimelineRecorder> recorder_;
  std::unique_ptr<InterfaceSampler> sampler_;
};

// The results' "timeline" field for a written file: where it is, its shape, and per
// (rank, rail) what the 1 ms, 1 s and 5 min views show of what it sent.
nlohmann::json timeline_summary_json(const TimelineData& data, const std::string& path);
// The lines a run prints: per rail, its busiest link by 1 ms peak.
std::vector<std::string> timeline_summary_lines(const TimelineData& data, const std::string& path);

}  // namespace railbench
