// Tenants in `validate` (config `tenants`): a multi-tenant SU must carry each tenant's
// traffic and nothing between tenants. The pair tests, spot checks and re-tests stay
// inside a tenant (a cross-tenant pair is supposed to fail); the isolation phase then
// probes every cross-tenant pair on every rail and calls an answer a breach; each
// tenant's all-reduce is timed alone and while the others run theirs; and on
// InfiniBand each port's P_Key table must hold its tenant's key and no other's. The
// judgements are here, apart from the traffic, so they are tested on their inputs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/commands/validate/inventory.h"
#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"
#include "lib/core/schedule.h"

namespace railbench {

// The run's nodes by tenant. Without tenants: one unnamed tenant of every node.
struct TenantMap {
  std::vector<int> of_node;               // tenant index per node of the run
  std::vector<std::vector<int>> members;  // per tenant: its nodes in the run, in run order
  std::vector<std::string> names;

  bool on() const { return names.size() > 1; }
  bool same(int a, int b) const { return of_node.at(a) == of_node.at(b); }
  // "node02 (tenant a)"; the plain node name without tenants.
  std::string who(const std::vector<std::string>& node_names, int node) const;
};
TenantMap make_tenant_map(const SuConfig& config, const std::vector<std::string>& node_names);

// Phase 3's partner of `node`: the next node of its tenant when it is at an even
// position there (`first`), the previous one at an odd position; -1 for the last node
// of a tenant with an odd count. Without tenants: node 2m with 2m+1, as always.
struct CrossPartner {
  int node = -1;
  bool first = false;
};
CrossPartner cross_rail_partner(const TenantMap& tenants, int node);

// The rounds of the circle schedule over `nodes` with only the cross-tenant pairs kept
// (same-tenant pairs rest), rounds left empty dropped: every cross-tenant node pair once,
// no node twice in a round.
std::vector<Round> isolation_rounds(const TenantMap& tenants, int nodes);

// One cross-tenant probe as both ends saw it: a == lower node. `reached_*`: that end's
// receive completed (the other end's message got through) within the deadline.
struct IsolationProbe {
  int node_a = 0, node_b = 0, rail_a = 0, rail_b = 0;
  bool reached_a = false, reached_b = false;
  double seconds = 0;  // how long the slower end waited
};
// A probe that got through either way is a FAIL "isolation breached"; both ends are
// named (`ends`), since either port (or the switch between) may be the one in the
// wrong partition. Probes that timed out are the expected case and say nothing.
std::vector<Finding> judge_isolation(const SuConfig& config, const std::vector<std::string>& node_names,
                                     const TenantMap& tenants, const std::vector<IsolationProbe>& probes);

// InfiniBand ports against their tenant's partition (config tenants.X.pkey): the key
// must be in the port's P_Key table with the configured membership, and no other
// tenant's key may be (a port in two partitions reaches both). Ports without a table
// (RoCE, netdev, a probe that found no port) are not judged.
std::vector<Finding> judge_pkeys(const SuConfig& config, const std::vector<std::string>& node_names,
                                 const TenantMap& tenants, const std::vector<std::vector<NicReport>>& nics);

// One tenant's all-reduce: busbw (GB/s) alone and while every other tenant ran its own.
struct TenantInterference {
  int tenant = 0;
  double alone_gbps = 0, loaded_gbps = 0;
  bool aggressors_outlasted = true;  // the others were still running when it finished
};
// loaded / alone below thresholds.tenant_busbw_min_ratio is a FAIL "interference".
std::vector<Finding> judge_interference(const SuConfig& config, const TenantMap& tenants,
                                        const std::vector<TenantInterference>& runs);

}  // namespace railbench
