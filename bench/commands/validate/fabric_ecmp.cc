#include "bench/commands/validate/fabric_ecmp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bench/commands/validate/fabric/ecmp_model.h"
#include "bench/commands/validate/fabric/flow_probe.h"
#include "bench/commands/validate/fabric_io.h"
#include "bench/commands/validate/reason_codes.h"
#include "bench/runner/run_context.h"
#include "lib/core/sizes.h"

namespace railbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The sweep's source ports start above discovery's (61000 up, a few per NIC) and each
// step takes new ones: a step's connections end with a reset, but a port is not used
// twice in one run.
constexpr uint16_t kFirstSweepPort = 62000;
constexpr int kFirstSweepId = 1 << 20;  // apart from discovery's flow ids

bool traced(const FlowPath& p) {
  return p.reached && p.spine >= 0 && p.links.size() == 2;
}

}  // namespace

std::vector<PlannedFlow> plan_cross_su(const SuFabric& f, const std::vector<FabricNic>& nics, int peers,
                                       int per_connection, int& next_id, std::vector<uint16_t>& next_port) {
  // Per rail, its NICs per SU (SUs without one on that rail left out).
  std::map<int, std::vector<std::vector<int>>> groups;
  for (size_t i = 0; i < nics.size(); ++i) {
    const FabricNic& n = nics[i];
    if (n.ip.empty() || n.leaf < 0) continue;
    const int su = f.su_named(f.leaves[n.leaf].su);
    auto& per_su = groups[n.rail];
    if (per_su.size() < f.sus.size()) per_su.resize(f.sus.size());
    if (su >= 0) per_su[su].push_back(static_cast<int>(i));
  }
  std::vector<PlannedFlow> out;
  for (auto& [rail, per_su] : groups) {
    std::erase_if(per_su, [](const std::vector<int>& g) { return g.empty(); });
    const int sus = static_cast<int>(per_su.size());
    if (sus < 2) continue;
    for (int a = 0; a < sus; ++a) {
      int others = 0;
      for (int b = 0; b < sus; ++b) others += b == a ? 0 : static_cast<int>(per_su[b].size());
      for (size_t p = 0; p < per_su[a].size(); ++p) {
        const int src = per_su[a][p];
        // Other SUs in turn, and in each the NICs from this one's own position on.
        for (int t = 0; t < std::min(peers, others); ++t) {
          const int b = (a + 1 + t % (sus - 1)) % sus;
          const auto& g = per_su[b];
          const int dst = g[(p + static_cast<size_t>(t / (sus - 1))) % g.size()];
          for (int k = 0; k < per_connection; ++k) out.push_back({next_id++, src, dst, next_port[src]++});
        }
      }
    }
  }
  return out;
}

EcmpStep judge_ecmp_step(const SuFabric& f, const std::vector<FabricNic>& nics, const std::vector<double>& nic_gbps,
                         int per_connection, const std::vector<PlannedFlow>& flows, const std::vector<FlowPath>& paths,
                         double bytes_per_flow, double measured_s) {
  EcmpStep s;
  s.per_connection = per_connection;
  s.flows = static_cast<int>(flows.size());
  s.bytes_per_flow = bytes_per_flow;
  s.measured_s = measured_s;
  std::set<std::pair<int, int>> connections;
  const size_t n = nics.size(), links = f.links.size(), leaves = f.leaves.size();
  // Resources: each NIC's send side, its receive side, each link up (leaf to spine), down.
  std::vector<double> capacity(2 * n + 2 * links, 0);
  for (size_t i = 0; i < n; ++i) capacity[i] = capacity[n + i] = nic_gbps.at(i) * 1e9 / 8;
  for (size_t l = 0; l < links; ++l) capacity[2 * n + l] = capacity[2 * n + links + l] = f.uplink_gbps * 1e9 / 8;
  std::vector<double> nic_out(n, 0), nic_in(n, 0), leaf_up(leaves, 0), leaf_down(leaves, 0);
  std::vector<int> leaf_links(leaves, 0), per_uplink(links, 0);
  for (const auto& l : f.links)
    if (const int x = f.leaf_named(l.leaf); x >= 0) leaf_links[x] += 1;
  std::set<int> sending_leaves;
  std::vector<FluidFlow> fluid;
  for (size_t i = 0; i < flows.size(); ++i) {
    const PlannedFlow& p = flows[i];
    connections.insert({p.src, p.dst});
    if (!paths.at(i).reached) continue;
    const FabricNic &a = nics[p.src], &b = nics[p.dst];
    s.total_bytes += bytes_per_flow;
    nic_out[p.src] += bytes_per_flow;
    nic_in[p.dst] += bytes_per_flow;
    FluidFlow x{{p.src, static_cast<int>(n) + p.dst}, bytes_per_flow};
    if (a.leaf != b.leaf) {
      leaf_up[a.leaf] += bytes_per_flow;
      leaf_down[b.leaf] += bytes_per_flow;
      sending_leaves.insert(a.leaf);
    }
    if (traced(paths[i])) {
      ++s.traced;
      ++per_uplink[paths[i].links[0]];
      x.resources.push_back(static_cast<int>(2 * n) + paths[i].links[0]);
      x.resources.push_back(static_cast<int>(2 * n + links) + paths[i].links[1]);
    }
    fluid.push_back(std::move(x));
  }
  s.connections = static_cast<int>(connections.size());
  const double nic_rate = [&] {
    double r = 0;
    for (double g : nic_gbps) r = std::max(r, g);
    return r;
  }();
  for (size_t i = 0; i < n; ++i) {
    const double rate = nic_gbps[i] > 0 ? nic_gbps[i] : nic_rate;
    if (rate > 0) s.ideal_s = std::max({s.ideal_s, nic_out[i] * 8 / (rate * 1e9), nic_in[i] * 8 / (rate * 1e9)});
  }
  for (size_t x = 0; x < leaves; ++x) {
    const double pool = leaf_links[x] * f.uplink_gbps * 1e9 / 8;
    if (pool > 0) s.ideal_s = std::max({s.ideal_s, leaf_up[x] / pool, leaf_down[x] / pool});
  }
  s.predicted_s = fluid_completion_s(fluid, capacity);
  int used = 0, most = 0, traced_up = 0;
  for (size_t l = 0; l < links; ++l) {
    const int leaf = f.leaf_named(f.links[l].leaf);
    if (!sending_leaves.count(leaf)) continue;
    ++s.uplinks;
    used += per_uplink[l] > 0;
    most = std::max(most, per_uplink[l]);
    traced_up += per_uplink[l];
  }
  s.uplinks_used = used;
  if (traced_up > 0) s.max_over_mean = most / (static_cast<double>(traced_up) / s.uplinks);
  return s;
}

std::vector<Finding> ports_ignored(const SuFabric& f, const std::vector<FabricNic>& nics,
                                   const std::vector<PlannedFlow>& flows, const std::vector<FlowPath>& paths) {
  // Per source leaf: its connections' spines (a connection: one source and one
  // destination NIC; its flows, in every step, differ only in the source port).
  std::map<int, std::map<std::pair<int, int>, std::vector<int>>> by_leaf;
  for (size_t i = 0; i < flows.size(); ++i) {
    if (!traced(paths[i])) continue;
    const PlannedFlow& p = flows[i];
    by_leaf[nics[p.src].leaf][{p.src, p.dst}].push_back(paths[i].spine);
  }
  std::vector<Finding> out;
  for (const auto& [leaf, conns] : by_leaf) {
    std::set<int> seen;
    int pinned = 0, judged = 0, flows_judged = 0;
    double log_p = 0;
    for (const auto& [pair, spines] : conns) {
      seen.insert(spines.begin(), spines.end());
      if (spines.size() < 2) continue;
      ++judged;
      flows_judged += static_cast<int>(spines.size());
      pinned += std::all_of(spines.begin(), spines.end(), [&](int s) { return s == spines.front(); });
    }
    const double k = static_cast<double>(seen.size());
    if (k < 2 || judged == 0 || pinned < judged) continue;
    for (const auto& [pair, spines] : conns)
      if (spines.size() >= 2) log_p += static_cast<double>(spines.size() - 1) * std::log(1 / k);
    if (log_p > std::log(1e-3)) continue;
    Finding x;
    x.severity = Severity::warn;
    x.kind = FindingKind::fabric;
    x.code = reason::kFabricEcmpPortsIgnored;
    x.subject = f.leaves.at(leaf).name;
    x.reason = fmt::format(
        "ECMP ignores the L4 ports: each of its {} connections kept all its flows on one spine ({} flows with "
        "distinct source ports; under an L4 hash over its {} spines, chance {:.1g}), while its connections use {} "
        "spines between them: it hashes on addresses only, so more QPs per peer cannot spread RoCE traffic; set its "
        "ECMP hash to the 5-tuple (source and destination port)",
        judged, flows_judged, seen.size(), std::exp(log_p), seen.size());
    out.push_back(std::move(x));
  }
  return out;
}

int smallest_reaching(const std::vector<EcmpStep>& steps, bool predicted, double fraction) {
  int best = -1;
  for (const auto& s : steps) {
    const double got = s.fraction(predicted ? s.predicted_s : s.measured_s);
    if (got >= fraction && (best < 0 || s.per_connection < best)) best = s.per_connection;
  }
  return best;
}

namespace {

// What one step moved, gathered from every rank.
struct StepFigures {
  double measured_s = 0;  // the last flow's last byte, 0 when a flow did not complete
  int incomplete = 0;
  long long retransmits = 0;
};

// Every rank's part of one step: trace its flows, accept its incoming ones, then all at
// once. `paths` (by position in `flows`) is filled from every rank's traces.
StepFigures run_step(RunContext& ctx, const SuFabric& f, const std::vector<FabricNic>& nics,
                     const std::vector<PlannedFlow>& flows, FlowListener* listener, ProbePacer& pacer,
                     uint64_t bytes_per_flow, double budget_s, std::vector<FlowPath>& paths) {
  FlowSockets sockets;
  sockets.abort = true;  // a step's ports are not used again, but its connections end at once
  const json mine = trace_mine(flows, nics, ctx.rank(), f.tests, pacer, sockets);
  std::map<int, size_t> at;
  for (size_t i = 0; i < flows.size(); ++i) at[flows[i].id] = i;
  paths.assign(flows.size(), FlowPath{});
  std::set<int> expected;
  for (const auto& text : ctx.bootstrap().all_gather_strings(mine.dump())) {
    for (const auto& j : json::parse(text)) {
      const size_t i = at.at(j.at("id").get<int>());
      const FlowTrace t = trace_from_json(j);
      paths[i] = map_path(f, nics[flows[i].src], nics[flows[i].dst], t);
      if (t.reached && nics[flows[i].dst].rank == ctx.rank()) expected.insert(flows[i].id);
    }
  }
  if (listener) accept_ids(*listener, expected, Clock::now() + kFlowAcceptDeadline, sockets);
  ctx.bootstrap().barrier();
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget_s));
  const ConcurrentFlows moved = move_flows_at_once(sockets.out, sockets.in, bytes_per_flow, deadline);
  json figures = json::object();
  for (const auto& [id, r] : moved.received) figures["r"][std::to_string(id)] = {r.figures.completed, r.done_s};
  for (const auto& [id, s] : moved.sent) figures["s"][std::to_string(id)] = s.figures.retransmits;
  StepFigures out;
  std::set<int> done;
  for (const auto& text : ctx.bootstrap().all_gather_strings(figures.dump())) {
    const json j = json::parse(text);
    if (j.contains("r")) {
      for (const auto& [id, r] : j.at("r").items()) {
        if (!r.at(0).get<bool>()) continue;
        done.insert(std::stoi(id));
        out.measured_s = std::max(out.measured_s, r.at(1).get<double>());
      }
    }
    if (j.contains("s"))
      for (const auto& [id, n] : j.at("s").items()) out.retransmits += n.get<long long>();
  }
  for (size_t i = 0; i < flows.size(); ++i) out.incomplete += paths[i].reached && !done.count(flows[i].id);
  if (out.incomplete > 0) out.measured_s = 0;
  return out;
}

std::string percent(double fraction) {
  return fraction > 0 ? fmt::format("{:.0f}%", 100 * fraction) : "-";
}

json step_json(const SuFabric& f, const EcmpStep& s, const StepFigures& m, const std::vector<FlowPath>& paths) {
  json per = json::object();
  for (const auto& p : paths)
    if (traced(p)) per[f.links.at(p.links[0]).name] = per.value(f.links.at(p.links[0]).name, 0) + 1;
  auto gbps = [&](double secs) { return secs > 0 ? s.total_bytes * 8 / secs / 1e9 : 0.0; };
  return json{{"flows_per_connection", s.per_connection},
              {"connections", s.connections},
              {"flows", s.flows},
              {"traced", s.traced},
              {"bytes_per_flow", s.bytes_per_flow},
              {"flows_per_uplink", per},
              {"max_over_mean", s.max_over_mean},
              {"uplinks_used", s.uplinks_used},
              {"uplinks", s.uplinks},
              {"ideal_gbps", gbps(s.ideal_s)},
              {"predicted_gbps", gbps(s.predicted_s)},
              {"measured_gbps", gbps(s.measured_s)},
              {"predicted_fraction", s.fraction(s.predicted_s)},
              {"measured_fraction", s.fraction(s.measured_s)},
              {"incomplete", m.incomplete},
              {"retransmits", m.retransmits}};
}

std::string smallest_text(int k) {
  return k > 0 ? fmt::format("{} flow(s) per connection", k) : "no count swept";
}

// The sweep's table and its conclusions, as the run prints them.
void sweep_lines(const std::vector<EcmpStep>& steps, const json& step_list, int peers, uint64_t per_connection_bytes,
                 std::vector<std::string>& lines) {
  lines.push_back(
      fmt::format("# fabric ECMP sweep: a cross-SU all-to-all, each NIC to {} NIC(s) of its rail in other SUs, {} per "
                  "connection split over its flows, all flows of a step at once",
                  peers, format_size(per_connection_bytes)));
  lines.push_back(
      "#   flows/conn  flows  traced  uplink max/mean  uplinks used      Gb/s  ideal Gb/s  measured  paths allow");
  for (size_t i = 0; i < steps.size(); ++i) {
    const EcmpStep& s = steps[i];
    const json& j = step_list[i];
    lines.push_back(fmt::format(
        "#   {:>10}  {:>5}  {:>6}  {:>15.2f}  {:>12}  {:>8.3g}  {:>10.3g}  {:>8}  {:>11}", s.per_connection, s.flows,
        s.traced, s.max_over_mean, fmt::format("{}/{}", s.uplinks_used, s.uplinks), j.at("measured_gbps").get<double>(),
        j.at("ideal_gbps").get<double>(),
        s.measured_s > 0 ? percent(s.fraction(s.measured_s)) : fmt::format("{} late", j.at("incomplete").get<int>()),
        percent(s.fraction(s.predicted_s))));
  }
  const int by_paths = smallest_reaching(steps, true), by_measure = smallest_reaching(steps, false);
  lines.push_back(fmt::format("# fabric ECMP: 90% of the ideal: {} by the traced paths (max-min fair), {} measured{}",
                              smallest_text(by_paths), smallest_text(by_measure),
                              by_measure < 0 && by_paths > 0
                                  ? " (the paths allow it: what falls short is the hosts or the links' state)"
                                  : ""));
  // Where every step's measured rate stays well under what its paths allow, the hosts
  // (or TCP over these switches' queues) are what limits, and the sweep says so.
  double best_share = 0;
  bool host_bound = !steps.empty();
  for (const auto& s : steps) {
    const double allowed = s.fraction(s.predicted_s), got = s.fraction(s.measured_s);
    if (allowed <= 0) continue;
    best_share = std::max(best_share, got / allowed);
    host_bound = host_bound && got < 0.75 * allowed;
  }
  if (host_bound)
    lines.push_back(fmt::format(
        "# fabric ECMP: every step measured {} or less of what its paths allow: the hosts (or TCP over these "
        "switches' queues: {} retransmits in the last step) limit the all-to-all here, not the hash; read the "
        "\"paths allow\" column for the fabric",
        percent(best_share), step_list.back().at("retransmits").get<long long>()));
}

}  // namespace

json run_ecmp_sweep(RunContext& ctx, const SuConfig& c, const std::vector<FabricNic>& nics, FlowListener* listener,
                    ProbePacer& pacer, std::vector<std::string>& lines, std::vector<Finding>& findings) {
  const SuFabric& f = c.fabric;
  const FabricTests& t = f.tests;
  const uint64_t per_connection_bytes = t.ecmp_bytes ? t.ecmp_bytes : t.flow_bytes;
  std::vector<double> nic_gbps(nics.size(), 0);
  for (size_t i = 0; i < nics.size(); ++i)
    if (nics[i].rail >= 0 && nics[i].rail < static_cast<int>(c.rails.size()))
      nic_gbps[i] = c.rails[nics[i].rail].line_rate_gbps;
  int next_id = kFirstSweepId;
  std::vector<uint16_t> next_port(nics.size(), kFirstSweepPort);
  std::vector<EcmpStep> steps;
  json step_list = json::array();
  std::vector<PlannedFlow> all_flows;
  std::vector<FlowPath> all_paths;
  int peers = 0;
  for (int k : t.ecmp_sweep) {
    const auto flows = plan_cross_su(f, nics, t.ecmp_peers, k, next_id, next_port);
    if (flows.empty()) {
      lines.push_back("# fabric ECMP sweep: no NIC has a peer of its rail in another SU: nothing to sweep");
      return json::object();
    }
    std::set<std::pair<int, int>> conns;
    for (const auto& p : flows) conns.insert({p.src, p.dst});
    std::set<int> sources;
    for (const auto& p : flows) sources.insert(p.src);
    peers = static_cast<int>(conns.size() / std::max<size_t>(1, sources.size()));
    const uint64_t bytes = std::max<uint64_t>(per_connection_bytes / static_cast<uint64_t>(k), 4096);
    std::vector<FlowPath> paths;
    // Budget: 20 times the ideal at the line rate, at least 5 s: many flows on shallow
    // switch queues lose packets, and a flow that waits out a retransmit timeout or two
    // is late, not lost.
    const EcmpStep plan = judge_ecmp_step(f, nics, nic_gbps, k, flows,
                                          std::vector<FlowPath>(flows.size(), FlowPath{{}, -1, {}, {}, true, ""}),
                                          static_cast<double>(bytes), 0);
    const double budget = std::max(20 * plan.ideal_s, 5.0);
    const StepFigures m = run_step(ctx, f, nics, flows, listener, pacer, bytes, budget, paths);
    const EcmpStep s = judge_ecmp_step(f, nics, nic_gbps, k, flows, paths, static_cast<double>(bytes), m.measured_s);
    steps.push_back(s);
    step_list.push_back(step_json(f, s, m, paths));
    all_flows.insert(all_flows.end(), flows.begin(), flows.end());
    all_paths.insert(all_paths.end(), paths.begin(), paths.end());
  }
  sweep_lines(steps, step_list, peers, per_connection_bytes, lines);
  const int by_paths = smallest_reaching(steps, true), by_measure = smallest_reaching(steps, false);
  for (auto& x : ports_ignored(f, nics, all_flows, all_paths)) findings.push_back(std::move(x));
  return json{{"peers", peers},
              {"bytes_per_connection", per_connection_bytes},
              {"steps", step_list},
              {"smallest_flows_for_90_predicted", by_paths},
              {"smallest_flows_for_90_measured", by_measure}};
}

}  // namespace railbench
