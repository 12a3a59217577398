#include "bench/runner/results_run.h"

#include <fmt/format.h>

namespace railbench {

using nlohmann::json;

ResultsRun::ResultsRun(RunContext& ctx, json config, ResultsEpilogue epilogue)
    : ctx_(ctx),
      epilogue_(epilogue),
      file_(ctx.is_root() ? ctx.options().json_path : "", ctx.results_header(std::move(config))) {
  ctx_.add_csv(file_);
}

void ResultsRun::measure(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    file_.finish(false, e.what());
    throw;
  }
}

void ResultsRun::add_counters(json& entry) {
  json counters = ctx_.counters_end();
  if (!counters.is_null()) entry["counters"] = std::move(counters);
}

void ResultsRun::burn_in(const BurnInPlan& plan, BurnInLog& log, const std::function<void(const BurnInClock&)>& pass,
                         const std::function<void(const BurnInClock&, bool)>& window_done) {
  BurnInClock clock(ctx_.bootstrap(), plan);
  while (clock.next_window()) {
    log.begin_window(clock.elapsed_s());
    pass(clock);
    log.end_window(clock.elapsed_s());
    // A line and a rewrite at most every few seconds: small sizes make many windows a second.
    const bool due = clock.rewrite_due();
    if (window_done) window_done(clock, due);
    if (due) set("burn_in", log.to_json(plan));
  }
  if (plan.on()) set("burn_in", log.to_json(plan));
}

void ResultsRun::finish() {
  measure([&] {
    if (epilogue_.channels) set("channels", ctx_.gather_channels());
    ctx_.finish_timeline(file_);
  });
  file_.finish(true);
  const std::string& path = ctx_.options().json_path;
  if (!path.empty()) ctx_.print(fmt::format("# results: {}", path));
}

}  // namespace railbench
