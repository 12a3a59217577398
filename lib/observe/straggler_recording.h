// --stragglers around any run of collective ops, in one object a command holds: the op
// recorder and the transport wrapper that feeds it (op_recorder.h), the collection of
// every rank's records to rank 0 after each stretch of ops (clock offsets measured
// afresh each time, records moved onto rank 0's clock), and the analysis of all of them
// (stragglers.h). A command brackets each op with recorder().begin_op / end_op.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "lib/observe/stragglers.h"
#include "lib/runtime/bootstrap.h"
#include "lib/transport/progress.h"

namespace railbench {

class StragglerRecording {
 public:
  // Each stretch keeps its last `max_ops` ops and `max_msgs` messages per rank.
  StragglerRecording(size_t max_ops, size_t max_msgs) : rec_(max_ops, max_msgs) {}

  OpRecorder& recorder() { return rec_; }
  // The transport wrapped so that its sends, receives and polls reach recorder().
  std::unique_ptr<Transport> wrap(std::unique_ptr<Transport> inner) {
    return std::make_unique<RecordingTransport>(std::move(inner), rec_);
  }

  // Collective over every rank, with no op open and nothing in flight: measures the
  // clock offsets (`clock_rounds` ping-pongs per rank over `progress`), gathers every
  // rank's records of the stretch since the last collect to rank 0 and keeps them there
  // on rank 0's clock. Other ranks keep nothing. Waits have the run's deadlines.
  void collect(Progress& progress, Bootstrap& bootstrap, int clock_rounds = 8);

  // Rank 0: the analysis of everything collected. Clock uncertainty is the largest any
  // stretch measured for each rank.
  StragglerReport analyse(const std::vector<std::string>& node_of_rank, const std::vector<std::string>& rail_names,
                          const StragglerThreshold& threshold) const;

  size_t stretches() const { return stretches_; }

 private:
  OpRecorder rec_;
  std::vector<RankOps> ranks_;      // rank 0: every rank's records, rank-0 time
  std::vector<ClockOffset> worst_;  // rank 0: per rank, the largest uncertainty seen
  size_t stretches_ = 0;
};

}  // namespace railbench
