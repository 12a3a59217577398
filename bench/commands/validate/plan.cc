#include "bench/commands/validate/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "bench/commands/validate/verdict.h"
#include "lib/core/sizes.h"

namespace railbench {
namespace {

// One-way latency assumed for the estimate, the transport's own (microseconds on an
// RDMA NIC or EFA, tens of them through a kernel TCP stack).
double assumed_latency_s(const SuConfig& c) {
  return c.traits().one_way_latency_s;
}

std::string duration(double s) {
  if (s < 10) return fmt::format("{:.2f} s", s);
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

}  // namespace

ValidatePlan make_validate_plan(const SuConfig& c) {
  ValidatePlan p;
  p.nodes = static_cast<int>(c.nodes.size());
  p.rails = c.num_rails();
  p.ranks = p.nodes * c.gpus_per_node;
  p.rounds = circle_schedule(p.nodes);
  for (const auto& r : p.rounds) p.rail_pair_tests += r.size() * static_cast<size_t>(p.rails);
  if (c.tests.cross_rail && p.rails > 1) {
    for (int n = 0; n + 1 < p.nodes; n += 2) p.cross.push_back({n, n + 1});
  }
  double slowest = line_gbytes(c.rails.front()) * 1e9;
  for (const auto& r : c.rails) slowest = std::min(slowest, line_gbytes(r) * 1e9);
  const SuTests& t = c.tests;
  const double window_bytes = static_cast<double>(t.bw_bytes) * t.bw_window * (t.bw_iters + 1);
  // Two one-way streams and one bidirectional (each direction at line rate), plus the
  // ping-pongs and a few round trips of handshakes per test.
  p.pair_s = 3 * window_bytes / slowest + 2.0 * (t.lat_iters + 100) * assumed_latency_s(c) + 0.05;
  p.rail_s = static_cast<double>(p.rounds.size()) * p.pair_s;
  p.cross_s = p.cross.empty() ? 0 : p.pair_s;
  if (t.collectives && p.ranks > 1) {
    const double n = p.ranks;
    const double bytes = static_cast<double>(t.collective_bytes) * (t.collective_iters + 1);
    p.collectives_s = (2 * (n - 1) / n + (n - 1) / n) * bytes / slowest;
  }
  p.total_s = p.rail_s + p.cross_s + p.collectives_s;
  return p;
}

double validate_remaining_s(const ValidatePlan& p, size_t total, size_t done, double spent_s, bool cross_left,
                            bool collectives_left) {
  double per_round = p.pair_s;
  if (done > 0 && spent_s > 0) per_round = spent_s / static_cast<double>(done);
  // How far the model is off on this fabric (a shaped or slower link, a busy host).
  const double scale = p.pair_s > 0 && done > 0 && spent_s > 0 ? per_round / p.pair_s : 1.0;
  double left = static_cast<double>(total > done ? total - done : 0) * per_round;
  if (cross_left) left += p.cross_s * scale;
  if (collectives_left) left += p.collectives_s * scale;
  return left;
}

namespace {

// The fabric phase's lines of the plan (the config has a fabric): its flows, probes and
// time, and the ECMP sweep's when the config asks for one.
void fabric_plan_lines(const SuConfig& c, const ValidatePlan& p, std::vector<std::string>& out) {
  const SuFabric& f = c.fabric;
  double flow_gbps = f.uplink_gbps;
  for (const auto& r : c.rails) flow_gbps = std::min(flow_gbps, r.line_rate_gbps);
  const FabricPlan fp = plan_fabric(f, p.ranks, flow_gbps);
  out.push_back(fmt::format(
      "#          fabric: {} SUs, {} leaves, {} spines, {} leaf-spine links at {} Gb/s; {} TCP flows (up to {} until "
      "every leaf has crossed every spine both ways), each traced by its own TTL-limited SYNs ({} probes, {:.1f}/s "
      "per rank so no switch answers more than {}/s: ~{}), then measured alone on its path ({} of {}: {:.0f} "
      "rounds, ~{}); names the leaf-spine link that explains the bad flows",
      f.sus.size(), f.leaves.size(), f.spines.size(), f.links.size(), f.uplink_gbps, fp.flows, fp.max_flows, fp.probes,
      fp.per_rank_probe_rate, f.tests.probe_rate, duration(fp.discovery_s), format_size(f.tests.flow_bytes), fp.flows,
      fp.measure_rounds, duration(fp.measure_s)));
  if (!f.tests.ecmp_sweep.empty()) {
    std::string counts;
    for (int k : f.tests.ecmp_sweep) counts += fmt::format("{}{}", counts.empty() ? "" : ",", k);
    out.push_back(fmt::format(
        "#          ECMP sweep: a cross-SU all-to-all with {} flows per connection, each NIC to {} NICs of its rail "
        "in other SUs: {} flows traced ({} probes, ~{}), {} per connection moved each step (~{} for all steps at the "
        "line "
        "rate)",
        counts, fp.sweep_peers, fp.sweep_flows, fp.sweep_probes, duration(fp.sweep_trace_s),
        format_size(f.tests.ecmp_bytes ? f.tests.ecmp_bytes : f.tests.flow_bytes), duration(fp.sweep_move_s)));
  }
}

}  // namespace

std::vector<std::string> describe_plan(const SuConfig& c, const ValidatePlan& p) {
  std::vector<std::string> out;
  out.push_back(fmt::format("# railbench validate --plan: {} ({})", c.name, c.path));
  out.push_back(fmt::format("# {} nodes ({}) x {} GPUs = {} ranks, {} rails, transport {}", p.nodes, c.nodes_expr,
                            c.gpus_per_node, p.ranks, p.rails, c.transport));
  for (const auto& r : c.rails) {
    out.push_back(fmt::format(
        "#   rail{}: GPU {} -> {} on {}, {} Gb/s, MTU {}{}", r.gpu, r.gpu, r.nic, r.leaf, r.speed_gbps, r.mtu,
        r.line_rate_gbps != r.speed_gbps ? fmt::format(", carries {} Gb/s", r.line_rate_gbps) : std::string()));
  }
  out.push_back("#");
  out.push_back(
      "# phase 1  inventory: every rank reads its NIC (exists, port up, speed, MTU, GID, link-down counters); no "
      "traffic");
  out.push_back(
      "#          cabling: each Ethernet/RoCE port ARPs for every other node's NIC on every rail (300 ms), "
      "naming a NIC on the wrong leaf or two swapped");
  if (c.fabric.present()) fabric_plan_lines(c, p, out);
  out.push_back(fmt::format(
      "# phase 2  rail checks: {} rounds of {} disjoint node pairs, all {} rails at once = {} pair tests; each: "
      "{} x {} B ping-pongs, {} windows of {} x {} each way and both ways",
      p.rounds.size(), p.rounds.empty() ? 0 : p.rounds.front().size(), p.rails, p.rail_pair_tests, c.tests.lat_iters,
      c.tests.lat_bytes, c.tests.bw_iters, c.tests.bw_window, format_size(c.tests.bw_bytes)));
  const size_t show = std::min<size_t>(p.rounds.size(), 3);
  for (size_t k = 0; k < show; ++k) {
    std::string pairs;
    const size_t m = std::min<size_t>(p.rounds[k].size(), 6);
    for (size_t i = 0; i < m; ++i) {
      pairs += fmt::format("{}{}-{}", i ? "  " : "", c.nodes[p.rounds[k][i].a], c.nodes[p.rounds[k][i].b]);
    }
    if (p.rounds[k].size() > m) pairs += fmt::format("  ... ({} more)", p.rounds[k].size() - m);
    out.push_back(fmt::format("#     round {}: {}", k + 1, pairs));
  }
  if (p.rounds.size() > show) out.push_back(fmt::format("#     ... {} more rounds", p.rounds.size() - show));
  if (!p.cross.empty()) {
    out.push_back(
        fmt::format("# phase 3  cross-rail spot checks: 1 round, node 2m slot s <-> node 2m+1 slot s+1 "
                    "(through the spine): {} pair tests",
                    p.cross.size() * static_cast<size_t>(p.rails)));
  } else {
    out.push_back("# phase 3  cross-rail spot checks: off (one rail, or tests.cross_rail false)");
  }
  out.push_back(
      "# phase 4  re-tests: each suspect link (slow, or intermittent: went down, cut off, unsteady) against a good "
      "partner on its rail (one round per clash)");
  if (c.tests.collectives) {
    out.push_back(
        fmt::format("# phase 5  collectives over all {} ranks: all-reduce and all-to-all of {}, {} iterations", p.ranks,
                    format_size(c.tests.collective_bytes), c.tests.collective_iters));
  }
  out.push_back("#");
  out.push_back(fmt::format(
      "# estimate at line rate: rail checks {} ({} per round), cross-rail {}, collectives {}; "
      "total {} plus start-up and re-tests",
      duration(p.rail_s), duration(p.pair_s), duration(p.cross_s), duration(p.collectives_s), duration(p.total_s)));
  out.push_back(fmt::format("# launch: mpirun -np {} --map-by ppr:{}:node railbench validate --config {}", p.ranks,
                            c.gpus_per_node, c.path));
  return out;
}

}  // namespace railbench
