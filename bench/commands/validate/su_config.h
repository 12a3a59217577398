// The description of a scalable unit (SU) that `railbench validate` accepts or rejects:
// which nodes, how many GPU slots each, which NIC (rail) serves each slot with what
// speed and MTU, the transport, the thresholds and how hard to test. JSON with
// comments; see configs/ and "The config" in this folder's README.md for every field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/commands/validate/fabric_config.h"
#include "lib/transport/registry.h"

namespace railbench {

struct SuRail {
  int gpu = 0;                // the GPU slot this NIC serves; rail index == slot
  std::string nic;            // verbs device[:port] ("mlx5_0") or netdev ("eth2", "rail0")
  std::string leaf;           // the leaf switch the rail's cables go to (names findings)
  double speed_gbps = 0;      // expected port speed
  double line_rate_gbps = 0;  // rate the link is expected to carry; defaults to speed_gbps
  int mtu = 0;                // expected MTU: IB MTU (256..4096) for verbs, link MTU for a netdev
  // A rail spread over several leaves (rails[i].leaves: leaf -> hostlist): each node's
  // leaf; empty when one leaf takes the whole rail. `leaf` is then "first..last".
  std::map<std::string, std::string> node_leaf;
  std::vector<std::string> leaf_names;  // in the config's order
  const std::string& leaf_of(const std::string& node) const {
    const auto it = node_leaf.find(node);
    return it == node_leaf.end() ? leaf : it->second;
  }
};

struct SuThresholds {
  // absolute, against the rail's line rate (1 Gb/s = 0.125 GB/s)
  double bw_min_fraction = 0.85;     // each direction of a pair
  double bidir_min_fraction = 0.75;  // both directions at once, against 2 x line rate
  double lat_p50_max_us = 0;         // 0: no absolute latency limit
  double lat_p99_max_us = 0;
  // relative, against the other links of the same rail (robust: median and MAD)
  double rel_bw_below_median = 0.15;  // a link this far below its rail's median is suspect...
  double rel_lat_above_median = 0.5;  // ...or this far above it in p50 latency
  double rel_lat_min_us = 2;          // ...and by at least this many microseconds
  double mad_k = 3.5;                 // ...and more than k scaled MADs from the median
  // intermittent links: a link whose timed windows' spread (1 - slowest / median
  // window) is this much above its rail's median spread (and k MADs) is a suspect...
  double spread_above_median = 0.5;
  // ...and one whose NIC counted this many link downs during the run is FAIL (flapping)
  // even when it passes its re-test; fewer (one) make it a suspect that the re-test
  // decides.
  int link_downs_fail = 2;
  // fabric counters during a link's pair tests (its own NIC's, bench/runner/fabric_counters.h):
  // this many error-kind counts (symbol errors, link downed, retry exceeded, CRC) make
  // it FAIL even when its bandwidth passed; 0: not judged.
  int counter_errors_fail = 1;
  // ...this many drops, or retransmits, make it WARN when also more than
  // counter_rail_factor times its rail's median link (drops that every link shows are
  // the fabric's, not one cable's); 0: not judged.
  int counter_drops_warn = 100;
  int counter_retransmits_warn = 1000;
  double counter_rail_factor = 4;
  // validate --baseline: a link whose bandwidth (either direction) is this far below its
  // own accepted figure in the baseline run is a finding, even above the absolute limit.
  double baseline_bw_below = 0.1;
  // validate --db: a link is below its own history or the fleet's only when it is also
  // this far (a fraction of its rail's median) under the reference (fleet_history.h).
  double history_bw_below = 0.05;
  // burn-in (--duration / --cycles): a window in which a link's figure is below this
  // fraction of its rail's median is a low window; low in some windows = intermittent.
  double burn_in_below_median = 0.8;
  // collectives over every rank, busbw against the slowest rail's line rate
  double allreduce_busbw_min_fraction = 0.5;
  double alltoall_busbw_min_fraction = 0.4;
  // tenants: a tenant's all-reduce busbw while the other tenants run theirs, over its
  // busbw alone; below this the tenants are not isolated in performance.
  double tenant_busbw_min_ratio = 0.8;
  // bisection (tests.bisection): a cut's pairs together, both ways at once, over pairs x 2
  // x line rate; below this the fabric cannot carry every node at once.
  double bisection_min_fraction = 0.8;
};

// A tenant of a multi-tenant SU: its nodes may reach each other and no other tenant's.
struct SuTenant {
  std::string name;
  std::string nodes_expr;          // as the config writes it: "node[01-16]"
  std::vector<std::string> nodes;  // expanded
  // InfiniBand: the partition key the tenant's ports must hold (base, 15 bits), -1: not
  // checked; full membership (bit 15 set) unless the config says "limited".
  int pkey = -1;
  bool full_member = true;
};

struct SuTests {
  uint64_t bw_bytes = 8 << 20;  // message size of the bandwidth tests
  int bw_window = 16;           // messages in flight
  int bw_iters = 8;             // timed windows per direction
  uint64_t lat_bytes = 8;
  int lat_iters = 1000;
  uint64_t collective_bytes = 64 << 20;
  int collective_iters = 10;
  bool cross_rail = true;  // slot i -> slot j spot checks through the spine
  bool collectives = true;
  double pair_timeout_s = 30;  // a pair without progress for this long is a failed link
  // With tenants: cross-tenant reach must fail (a probe that gets an answer within
  // isolation_timeout_s is a breach), and each tenant's all-reduce is timed alone and
  // while the other tenants run theirs (interference).
  bool isolation = true;
  double isolation_timeout_s = 2;
  bool interference = true;
  // The bisection phase (bisection.h): off unless asked for; with 2+ rails it also runs
  // the cross-rail cut (through the spine) unless bisection_cross_rail is false.
  bool bisection = false;
  bool bisection_cross_rail = true;
};

// The most nodes one config may list (bench/cli/README.md, "Limits"): the plan's pair schedule grows
// with the square of the nodes, and a hostlist typo must not expand into millions.
inline constexpr size_t kMaxSuNodes = 4096;

struct SuConfig {
  std::string path;  // where it was read from (error messages)
  std::string name;
  std::string nodes_expr;
  std::vector<std::string> nodes;
  int gpus_per_node = 0;
  std::string transport = "verbs";
  int gid_index = -1;
  int qps_per_peer = 1;
  std::vector<SuRail> rails;  // rails[i].gpu == i
  SuThresholds thresholds;
  SuTests tests;
  std::vector<SuTenant> tenants;  // empty: one tenant, every node may reach every other
  SuFabric fabric;                // empty (!present()): the config says nothing above the leaves

  // The tenant (index into tenants) of each name in `node_names`; -1 for a node the
  // config gives none (never, once parsed: every node must be in one). Empty when the
  // SU has no tenants.
  std::vector<int> tenant_of(const std::vector<std::string>& node_names) const;

  int num_rails() const { return static_cast<int>(rails.size()); }
  // What the transport is over these rails' NICs, as its registry entry says
  // (lib/transport/registry.h): RDMA NICs or network interfaces, its latency, whether
  // a connection leaves from the rail's address.
  TransportTraits traits() const { return traits_over(transport); }
  // The same for another -t form over these rails (validate -t overriding the config's).
  TransportTraits traits_over(const std::string& form) const;
  bool rdma_nics() const { return traits().rdma_nics; }
};

// Parses and checks a config. Throws UsageError naming the file, the field (as a JSON
// path such as rails[3].speed_gbps) and what was expected; unknown fields are errors
// too, so a typo does not silently fall back to a default.
SuConfig parse_su_config(const std::string& text, const std::string& path = "<config>");
SuConfig load_su_config(const std::string& path);

}  // namespace railbench
