// railbench validate: the command line of the acceptance test. The test itself (rank
// layout, pair tests, phases, verdict, report) lives in bench/validate/.
#include <algorithm>

#include <fmt/format.h>

#include "bench/commands.h"
#include "bench/run_context.h"
#include "bench/validate/phases.h"
#include "bench/validate/plan.h"
#include "bench/validate/rank_layout.h"
#include "bench/validate/su_config.h"
#include "lib/results.h"

namespace railbench {

using nlohmann::json;

int run_validate_plan(const ValidateOptions& opt) {
  const SuConfig c = load_su_config(opt.config);
  for (const auto& line : describe_plan(c, make_validate_plan(c))) fmt::print("{}\n", line);
  return 0;
}

int run_validate(Bootstrap& bootstrap, CommonOptions common, const ValidateOptions& opt) {
  SuConfig c;
  // A config is read on every rank (they share a filesystem, as for the binary).
  {
    std::string error;
    try {
      c = load_su_config(opt.config);
    } catch (const Error& e) {
      error = e.what();
    }
    for (const auto& e : bootstrap.all_gather_strings(error))
      if (!e.empty()) throw AgreedError(ErrorCode::usage, e);
  }
  // The pair deadline drives every data-path wait; out-of-band waits must outlast a
  // round in which a pair used up its deadline more than once.
  common.timeout_s = opt.timeout_s > 0 ? opt.timeout_s : c.tests.pair_timeout_s;
  bootstrap.set_timeout(std::max(bootstrap.timeout(), 8 * common.timeout_s + 30));
  common.transport = opt.transport.empty() ? c.transport : opt.transport;
  common.gid_index = c.gid_index;
  common.qps_per_peer = c.qps_per_peer;
  RunContext ctx(bootstrap, common, "validate");
  SuLayout L;
  ctx.agree([&] { L = map_ranks(c, ctx.hosts()); });

  json cfg{{"su", c.name},
           {"file", c.path},
           {"nodes", c.nodes_expr},
           {"gpus_per_node", c.gpus_per_node},
           {"pair_timeout_s", common.timeout_s}};
  ResultsFile results(ctx.is_root() ? common.json_path : "", ctx.results_header(cfg));
  try {
    return validate_phases(ctx, c, L, ValidateRun{common.transport, common.json_path, opt.inventory_only}, results);
  } catch (const Error& e) {
    results.finish(false, e.what());  // what was measured stays in the file
    throw;
  }
}

}  // namespace railbench
