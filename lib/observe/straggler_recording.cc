#include "lib/observe/straggler_recording.h"

#include <algorithm>

namespace railbench {

void StragglerRecording::collect(Progress& progress, Bootstrap& bootstrap, int clock_rounds) {
  const std::vector<ClockOffset> clocks = estimate_clock_offsets(progress, bootstrap, clock_rounds);
  const auto blobs = bootstrap.all_gather_v(serialize(rec_.take()));
  ++stretches_;
  if (bootstrap.rank() != 0) return;
  ranks_.resize(blobs.size());
  worst_.resize(blobs.size());
  for (size_t r = 0; r < blobs.size(); ++r) {
    append_in_rank0_time(ranks_[r], deserialize_rank_ops(blobs[r]), clocks[r]);
    worst_[r].uncertainty_ns = std::max(worst_[r].uncertainty_ns, clocks[r].uncertainty_ns);
    worst_[r].best_rtt_ns = std::max(worst_[r].best_rtt_ns, clocks[r].best_rtt_ns);
  }
}

StragglerReport StragglerRecording::analyse(const std::vector<std::string>& node_of_rank,
                                            const std::vector<std::string>& rail_names,
                                            const StragglerThreshold& threshold) const {
  // The records are on rank 0's clock already: offsets 0, uncertainties kept.
  return analyse_stragglers(StragglerInput{ranks_, worst_, node_of_rank, rail_names, threshold});
}

}  // namespace railbench
