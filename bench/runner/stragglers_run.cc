#include "bench/runner/stragglers_run.h"

#include <fmt/format.h>

namespace railbench {

void write_stragglers(RunContext& ctx, ResultsRun& results, const StragglerRecording& recording,
                      const std::vector<std::string>& node_of_rank, const StragglerThreshold& threshold) {
  if (!ctx.is_root()) return;
  std::vector<std::string> rails;
  for (int i = 0; i < ctx.transport().num_rails(); ++i) rails.push_back(ctx.transport().rail_info(i).name);
  try {
    const StragglerReport report = recording.analyse(node_of_rank, rails, threshold);
    for (const auto& line : straggler_table(report)) ctx.print(line);
    results.set("stragglers", to_json(report));
  } catch (const std::exception& e) {
    ctx.print(fmt::format("# stragglers: not analysed: {}", e.what()));
    results.set("stragglers", nlohmann::json{{"error", e.what()}});
  }
}

}  // namespace railbench
