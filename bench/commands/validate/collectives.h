// validate's phase 5: all-reduce and all-to-all over every rank, busbw against the
// SU config's thresholds.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/validate/rank_layout.h"
#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/tenants.h"
#include "bench/commands/validate/verdict.h"
#include "bench/runner/run_context.h"

namespace railbench {

// Findings when busbw is below threshold or the collective failed (the error names the
// peer that stopped answering). Returns the JSON "collectives" section.
nlohmann::json run_collectives(RunContext& ctx, const SuConfig& c, const SuLayout& L, std::vector<Finding>& findings);

// With tenants, in place of run_collectives (a world collective would cross tenants):
// each tenant's all-reduce (rhd, over its own ranks) alone, busbw against the same
// threshold; then, with tests.interference, each tenant's again while every other
// tenant runs its own for longer (interference, tenants.h). Returns the JSON
// "tenant_collectives" section.
nlohmann::json run_tenant_collectives(RunContext& ctx, const SuConfig& c, const SuLayout& L, const TenantMap& tenants,
                                      std::vector<Finding>& findings);

}  // namespace railbench
