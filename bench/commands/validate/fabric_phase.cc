#include "bench/commands/validate/fabric_phase.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "bench/commands/validate/arp_probe.h"
#include "bench/commands/validate/fabric/flow_probe.h"
#include "bench/commands/validate/fabric/localize.h"
#include "bench/commands/validate/fabric_ecmp.h"
#include "bench/commands/validate/fabric_flows.h"
#include "bench/commands/validate/fabric_io.h"
#include "bench/commands/validate/fabric_verdict.h"
#include "lib/core/errors.h"
#include "lib/core/stats.h"

namespace railbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Source ports of the fabric's flows start above Linux's default ephemeral range
// (32768-60999), so the kernel's own connections never hold one.
constexpr uint16_t kFirstSourcePort = 61000;

// What every rank knows alike once a discovery round's traces are gathered.
struct Discovery {
  std::vector<PlannedFlow> flows;  // by id
  std::vector<FlowTrace> traces;   // by id
  std::vector<FlowPath> paths;     // by id
  std::vector<bool> skipped;       // by id: the source could not open it (a port in use): not a fault
  int rounds = 0;
  FabricSearch search;             // source ports probed for a spine the flows missed
  std::vector<std::string> lines;  // what the search did, for the run to print
};

// The flows planned so far: per leaf, how many left (arrived) and over which spines.
struct Coverage {
  std::vector<int> out, in;
  std::vector<std::set<int>> up, down;
  std::vector<int> next_dest, next_source;  // round-robin partner leaves
  std::map<std::pair<int, int>, int> used;  // NIC pairs already given a flow
  std::vector<uint16_t> next_port;          // per NIC
  int next_id = 0;
};

// `count` flows from leaf a (to_leaf false) or into leaf a (true), their partner leaves
// in turn, so every leaf's uplinks are covered in both directions by flows that meet
// every other leaf.
std::vector<PlannedFlow> plan_for_leaf(const std::vector<FabricNic>& nics, int leaves, int a, bool into, int count,
                                       Coverage& c) {
  std::vector<PlannedFlow> out;
  if (leaves < 2) return out;
  for (int k = 0; k < count; ++k) {
    int& next = into ? c.next_source[a] : c.next_dest[a];
    int b = (a + 1 + next++ % (leaves - 1)) % leaves;
    auto one = into ? plan_leaf_pair(nics, b, a, 1, c.next_id, c.next_port, c.used)
                    : plan_leaf_pair(nics, a, b, 1, c.next_id, c.next_port, c.used);
    for (const auto& flow : one) {
      c.out[nics[flow.src].leaf] += 1;
      c.in[nics[flow.dst].leaf] += 1;
    }
    out.insert(out.end(), one.begin(), one.end());
  }
  return out;
}

// One discovery round: `batch` traced (each source its own), every rank's traces
// gathered, each flow's path mapped and the spines it crossed added to the coverage.
void trace_round(RunContext& ctx, const SuFabric& f, const std::vector<FabricNic>& nics, ProbePacer& pacer,
                 FlowSockets& sockets, const std::vector<PlannedFlow>& batch, Coverage& c, Discovery& d) {
  d.rounds += 1;
  const json mine = trace_mine(batch, nics, ctx.rank(), f.tests, pacer, sockets);
  d.flows.insert(d.flows.end(), batch.begin(), batch.end());
  d.traces.resize(d.flows.size());
  d.paths.resize(d.flows.size());
  d.skipped.resize(d.flows.size(), false);
  for (const auto& text : ctx.bootstrap().all_gather_strings(mine.dump()))
    for (const auto& j : json::parse(text)) d.traces.at(j.at("id").get<int>()) = trace_from_json(j);
  for (const auto& flow : batch) {
    const FlowTrace& tr = d.traces[flow.id];
    d.skipped[flow.id] = tr.hops.empty() && !tr.reached && !tr.error.empty();
    d.paths[flow.id] = map_path(f, nics[flow.src], nics[flow.dst], tr);
    const int spine = d.paths[flow.id].spine;
    if (spine < 0) continue;
    c.up[nics[flow.src].leaf].insert(spine);
    if (tr.reached) c.down[nics[flow.dst].leaf].insert(spine);
  }
}

// Source ports probed at the spine hop only (one probe each) for every direction of a
// leaf whose flows still miss a spine after the rounds.
constexpr int kSearchPorts = 64;

// A leaf whose flows still miss a spine after the rounds has a link down or a route
// withdrawn, or an unlucky hash: n flows over k spines miss a healthy one with chance
// ((k-1)/k)^n, 3 in 10,000 for 28 flows over 4. Before that is judged, up to
// kSearchPorts more source ports each way are probed at the spine hop only, and a port
// found crossing a missing spine becomes a flow, traced and measured as the others; a
// spine still missed is missed by those ports too (chance ((k-1)/k)^(n+64) for a healthy
// link), which the coverage findings count.
void search_missing_spines(RunContext& ctx, const SuFabric& f, const std::vector<FabricNic>& nics, ProbePacer& pacer,
                           FlowSockets& sockets, Coverage& c, Discovery& d) {
  const size_t spines = f.spines.size(), leaves = f.leaves.size();
  d.search.out.assign(leaves, 0);
  d.search.in.assign(leaves, 0);
  std::vector<PlannedFlow> candidates;
  std::vector<std::pair<int, bool>> purpose;              // per candidate: its leaf, and whether it searches into it
  const int first_id = static_cast<int>(d.flows.size());  // a flow's id is its place in d.flows
  for (size_t a = 0; a < leaves; ++a) {
    for (const bool into : {false, true}) {
      const auto& seen = into ? c.down[a] : c.up[a];
      if (seen.empty() || seen.size() >= spines) continue;  // nothing to search, or nothing missing
      for (const auto& x : plan_for_leaf(nics, static_cast<int>(leaves), static_cast<int>(a), into, kSearchPorts, c)) {
        candidates.push_back(x);
        purpose.emplace_back(static_cast<int>(a), into);
      }
    }
  }
  c.next_id = first_id;  // candidates are no flows: only the ones chosen get ids, after the flows
  if (candidates.empty()) return;
  std::map<int, std::string> answered;  // candidate id -> the address that answered at the spine hop
  const json mine = probe_spines_mine(candidates, nics, ctx.rank(), pacer);
  for (const auto& text : ctx.bootstrap().all_gather_strings(mine.dump()))
    for (const auto& j : json::parse(text)) answered[j.at("id").get<int>()] = j.at("address").get<std::string>();
  std::vector<PlannedFlow> chosen;
  std::set<std::tuple<int, bool, int>> found;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto [leaf, into] = purpose[i];
    const int spine = f.spine_index(f.switch_of(answered[candidates[i].id]));
    if (spine < 0) continue;
    (into ? d.search.in : d.search.out)[leaf] += 1;
    const auto& seen = into ? c.down[leaf] : c.up[leaf];
    if (seen.count(spine) || !found.insert({leaf, into, spine}).second) continue;
    chosen.push_back(candidates[i]);
    chosen.back().id = c.next_id++;
  }
  for (size_t a = 0; a < leaves; ++a) {
    for (const bool into : {false, true}) {
      const int probed = (into ? d.search.in : d.search.out)[a];
      if (probed == 0) continue;
      int hits = 0;
      for (const auto& [leaf, dir, spine] : found) hits += leaf == static_cast<int>(a) && dir == into;
      d.lines.push_back(fmt::format(
          "# fabric: {}'s flows {} missed {} of {} spines; {} more source ports probed at the spine hop found {}{}",
          f.leaves[a].name, into ? "into it" : "out of it", spines - (into ? c.down[a] : c.up[a]).size(), spines,
          probed, hits == 0 ? "none of them" : fmt::format("{} of them", hits), hits > 0 ? " (each now a flow)" : ""));
    }
  }
  if (!chosen.empty()) trace_round(ctx, f, nics, pacer, sockets, chosen, c, d);
}

// Discovery: spines x flows_per_spine flows out of every leaf, traced; then more out of
// (into) a leaf whose flows have not crossed every spine, until they have or the bound;
// then a search for the spines still missed (search_missing_spines).
Discovery discover(RunContext& ctx, const SuFabric& f, const std::vector<FabricNic>& nics, ProbePacer& pacer,
                   FlowSockets& sockets) {
  const int spines = static_cast<int>(f.spines.size());
  const int leaves = static_cast<int>(f.leaves.size());
  const FabricTests& t = f.tests;
  Discovery d;
  Coverage c{std::vector<int>(leaves),
             std::vector<int>(leaves),
             std::vector<std::set<int>>(leaves),
             std::vector<std::set<int>>(leaves),
             std::vector<int>(leaves),
             std::vector<int>(leaves),
             {},
             std::vector<uint16_t>(nics.size(), kFirstSourcePort),
             0};
  std::vector<PlannedFlow> batch;
  for (int a = 0; a < leaves; ++a) {
    auto more = plan_for_leaf(nics, leaves, a, false, spines * t.flows_per_spine, c);
    batch.insert(batch.end(), more.begin(), more.end());
  }
  // The first round, then at most 3 more: a leaf that still misses a spine after them
  // has a link that nothing crosses (down, withdrawn) or a dead one, both findings.
  while (!batch.empty()) {
    trace_round(ctx, f, nics, pacer, sockets, batch, c, d);
    batch.clear();
    if (d.rounds >= 4) break;  // planned flows get ids: none planned that will not run
    const int bound = spines * t.max_flows_per_spine;
    for (int a = 0; a < leaves; ++a) {
      if (static_cast<int>(c.up[a].size()) < spines && c.out[a] < bound) {
        auto more = plan_for_leaf(nics, leaves, a, false, spines, c);
        batch.insert(batch.end(), more.begin(), more.end());
      }
      if (static_cast<int>(c.down[a].size()) < spines && c.in[a] < bound) {
        auto more = plan_for_leaf(nics, leaves, a, true, spines, c);
        batch.insert(batch.end(), more.begin(), more.end());
      }
    }
  }
  search_missing_spines(ctx, f, nics, pacer, sockets, c, d);
  return d;
}

// The connections of the flows this rank receives: accepted, each known by its id.
void accept_mine(FlowListener& listener, const Discovery& d, const std::vector<FabricNic>& nics, int me,
                 FlowSockets& sockets) {
  std::set<int> expected;
  for (const auto& flow : d.flows)
    if (nics[flow.dst].rank == me && d.traces[flow.id].reached) expected.insert(flow.id);
  accept_ids(listener, expected, Clock::now() + kFlowAcceptDeadline, sockets);
}

// Each flow's figures, merged from both ends.
struct FlowResult {
  bool measured = false;  // both ends ran it
  FlowFigures sent, received;
};

// Measures the flows in `which` (by id), alone on their paths.
std::vector<FlowResult> measure(RunContext& ctx, const SuFabric& f, const Discovery& d,
                                const std::vector<FabricNic>& nics, FlowSockets& sockets, double expected_gbps,
                                double pair_timeout_s, const std::vector<bool>& which, size_t& round_count) {
  std::vector<bool> connected(d.flows.size());
  for (const auto& flow : d.flows) connected[flow.id] = d.traces[flow.id].reached && which[flow.id];
  const auto rounds = measurement_rounds(d.flows, d.paths, connected, f.tests.max_flows_per_round);
  round_count = rounds.size();
  // A healthy flow takes bytes / rate; a slow one gets 20 times that, within the pair timeout.
  const double full_s = static_cast<double>(f.tests.flow_bytes) * 8 / (expected_gbps * 1e9);
  const auto budget = std::chrono::duration<double>(std::clamp(20 * full_s, 1.0, pair_timeout_s));
  json mine = json::object();
  for (const auto& round : rounds) {
    for (int i : round) {
      const PlannedFlow& flow = d.flows[i];
      const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(budget);
      const bool src = nics[flow.src].rank == ctx.rank(), dst = nics[flow.dst].rank == ctx.rank();
      if (!src && !dst) continue;
      const auto& fds = src ? sockets.out : sockets.in;
      const auto it = fds.find(flow.id);
      FlowFigures fig;
      if (it == fds.end()) {
        fig.error = "no connection";
      } else {
        fig = src ? send_flow(it->second, f.tests.flow_bytes, deadline)
                  : receive_flow(it->second, f.tests.flow_bytes, deadline);
      }
      mine[std::to_string(flow.id)][src ? "sent" : "received"] =
          json{{"completed", fig.completed},     {"bytes", fig.bytes},   {"seconds", fig.seconds}, {"gbps", fig.gbps},
               {"retransmits", fig.retransmits}, {"rtt_us", fig.rtt_us}, {"error", fig.error}};
    }
    ctx.bootstrap().barrier();
  }
  std::vector<FlowResult> out(d.flows.size());
  auto figures = [](const json& j) {
    FlowFigures x;
    x.completed = j.at("completed").get<bool>();
    x.bytes = j.at("bytes").get<uint64_t>();
    x.seconds = j.at("seconds").get<double>();
    x.gbps = j.at("gbps").get<double>();
    x.retransmits = j.at("retransmits").get<uint32_t>();
    x.rtt_us = j.at("rtt_us").get<double>();
    x.error = j.at("error").get<std::string>();
    return x;
  };
  for (const auto& text : ctx.bootstrap().all_gather_strings(mine.dump())) {
    const json rank_flows = json::parse(text);  // kept: items() refers into it
    for (const auto& [key, sides] : rank_flows.items()) {
      FlowResult& r = out.at(std::stoi(key));
      if (sides.contains("sent")) r.sent = figures(sides.at("sent"));
      if (sides.contains("received")) r.received = figures(sides.at("received"));
      r.measured = sides.contains("sent") || r.measured;
    }
  }
  return out;
}

}  // namespace

namespace {

json flow_json(const SuFabric& f, const std::vector<FabricNic>& nics, const FabricFlow& x, const FlowObservation* o) {
  json hops = json::array();
  for (size_t i = 0; i < x.trace.hops.size(); ++i)
    hops.push_back(json{{"ttl", x.trace.hops[i].ttl},
                        {"address", x.trace.hops[i].address},
                        {"switch", i < x.path.switches.size() ? x.path.switches[i] : ""}});
  json links = json::array();
  for (int l : x.path.links) links.push_back(f.links.at(l).name);
  const char* health = "skipped";
  if (o) {
    constexpr const char* kWords[] = {"good", "slow", "lossy", "dead"};
    health = kWords[static_cast<int>(o->health)];
  }
  return json{{"id", x.plan.id},
              {"src", nics[x.plan.src].label},
              {"dst", nics[x.plan.dst].label},
              {"src_port", x.plan.src_port},
              {"dst_port", nics[x.plan.dst].port},
              {"hops", hops},
              {"reached", x.trace.reached},
              {"error", x.trace.error},
              {"spine", x.path.spine >= 0 ? f.spines[x.path.spine].name : ""},
              {"links", links},
              {"gbps", x.gbps},
              {"retransmits", x.retransmits},
              {"rtt_us", x.rtt_us},
              {"health", health}};
}

double expected_flow_gbps(const SuConfig& c) {
  double rate = c.fabric.uplink_gbps;
  for (const auto& r : c.rails) rate = std::min(rate, r.line_rate_gbps);
  return rate;
}

// What a healthy flow carries here (healthy_flow_gbps), from the completed flows.
double carried_reference(const std::vector<FlowResult>& measured, double expected) {
  std::vector<double> carried;
  for (const auto& r : measured)
    if (r.received.completed && r.sent.completed) carried.push_back(r.received.gbps);
  return healthy_flow_gbps(std::move(carried), expected);
}

// Every flow measured, and the ones that looked bad measured once more; `reference` is
// set from the first measurement (carried_reference).
std::vector<FlowResult> measure_twice(RunContext& ctx, const SuConfig& c, const Discovery& d,
                                      const std::vector<FabricNic>& nics, FlowSockets& sockets, double expected,
                                      double& reference, size_t& rounds, size_t& retest_rounds) {
  const SuFabric& f = c.fabric;
  auto measured = measure(ctx, f, d, nics, sockets, expected, c.tests.pair_timeout_s,
                          std::vector<bool>(d.flows.size(), true), rounds);
  reference = carried_reference(measured, expected);  // every rank gathered the same figures
  // A flow that looked bad is measured once more before it counts, as a suspect pair
  // is re-tested: one slow sample on a shared host (or a burst of other traffic) is not
  // a link. Only flows that completed can go again (their two ends are in step).
  std::vector<bool> again(d.flows.size(), false);
  int retested = 0;
  for (const auto& p : d.flows) {
    const FlowResult& r = measured[p.id];
    const bool done = r.received.completed && r.sent.completed;
    const bool suspect = r.received.gbps < f.tests.flow_min_fraction * reference ||
                         r.sent.retransmits >= static_cast<unsigned>(f.tests.retransmits_lossy);
    again[p.id] = done && suspect;
    retested += again[p.id];
  }
  if (ctx.bootstrap().all_reduce_max(std::vector<double>{static_cast<double>(retested)})[0] > 0) {
    const auto second = measure(ctx, f, d, nics, sockets, expected, c.tests.pair_timeout_s, again, retest_rounds);
    for (const auto& p : d.flows) {
      if (!again[p.id]) continue;
      FlowResult& r = measured[p.id];
      const FlowResult& s2 = second[p.id];
      const bool done2 = s2.received.completed && s2.sent.completed;
      if (done2 && s2.received.gbps > r.received.gbps) r.received = s2.received;  // the better of the two
      if (done2) r.sent.retransmits = std::min(r.sent.retransmits, s2.sent.retransmits);
    }
  }
  return measured;
}

// Each flow's plan, trace, path and figures in one.
std::vector<FabricFlow> merge_flows(const Discovery& d, const std::vector<FlowResult>& measured) {
  std::vector<FabricFlow> flows;
  for (const auto& p : d.flows) {
    FabricFlow x{p, d.traces[p.id], d.paths[p.id], d.skipped[p.id]};
    const FlowResult& r = measured[p.id];
    x.completed = r.received.completed && r.sent.completed;
    x.gbps = r.received.gbps;
    x.retransmits = r.sent.retransmits;
    x.rtt_us = r.sent.rtt_us;
    flows.push_back(std::move(x));
  }
  return flows;
}

std::string reference_line(double reference, double expected) {
  return fmt::format(
      "# fabric: a healthy flow carries {:.3g} Gb/s here (the median flow), {:.0f}% of the {:.3g} Gb/s line rate: "
      "one TCP flow does not fill a path on these hosts, so each flow is judged against the median flow; the "
      "pair tests judge the rate itself",
      reference, 100 * reference / expected, expected);
}

// The ECMP sweep after the phase's own flows: printed, added to the results' "fabric"
// section and its findings to the phase's.
void ecmp_sweep_after(RunContext& ctx, const SuConfig& c, const std::vector<FabricNic>& nics, FlowListener* listener,
                      ProbePacer& pacer, json& fabric, ResultsRun& results, std::vector<Finding>& findings) {
  std::vector<std::string> lines;
  std::vector<Finding> found;
  fabric["ecmp_sweep"] = run_ecmp_sweep(ctx, c, nics, listener, pacer, lines, found);
  results.set("fabric", fabric);
  for (const auto& line : lines) ctx.print(line);
  for (const auto& x : found)
    ctx.print(fmt::format("# fabric {} {}: {}: {}", to_string(x.severity), code_of(x), x.subject, x.reason));
  findings.insert(findings.end(), found.begin(), found.end());
}

}  // namespace

std::vector<Finding> run_fabric_phase(RunContext& ctx, const SuConfig& c, const SuLayout& L, const std::string& port,
                                      const std::string& why, ResultsRun& results, std::vector<int>& links_at_fault) {
  const SuFabric& f = c.fabric;
  const auto t0 = Clock::now();
  std::string ip = port.empty() ? "" : read_port_address(port).ipv4;
  std::string mine_why = port.empty() ? why : (ip.empty() ? fmt::format("{} has no IPv4 address", port) : "");
  std::unique_ptr<FlowListener> listener;
  if (!ip.empty()) {
    try {
      listener = std::make_unique<FlowListener>(ip);
    } catch (const Error& e) {
      mine_why = e.what();
      ip.clear();
    }
  }
  const auto all = ctx.bootstrap().all_gather_strings(
      json{{"ip", ip}, {"port", listener ? listener->port() : 0}, {"why", mine_why}}.dump());
  std::vector<std::string> ips;
  std::vector<uint16_t> ports;
  std::string skipped;
  for (const auto& text : all) {
    const json j = json::parse(text);
    ips.push_back(j.at("ip").get<std::string>());
    ports.push_back(j.at("port").get<uint16_t>());
    if (skipped.empty()) skipped = j.at("why").get<std::string>();
  }
  const auto nics = fabric_nics(f, L, ips, ports);
  ProbePacer pacer(probe_rate_per_rank(f, static_cast<int>(nics.size())));
  FlowSockets sockets;
  const Discovery d = discover(ctx, f, nics, pacer, sockets);
  const double discover_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (listener) accept_mine(*listener, d, nics, ctx.rank(), sockets);
  ctx.bootstrap().barrier();
  const auto t1 = Clock::now();
  const double expected = expected_flow_gbps(c);
  double reference = expected;
  size_t rounds = 0, retest_rounds = 0;
  const auto measured = measure_twice(ctx, c, d, nics, sockets, expected, reference, rounds, retest_rounds);
  const double measure_s = std::chrono::duration<double>(Clock::now() - t1).count();

  const std::vector<FabricFlow> flows = merge_flows(d, measured);
  const auto observed = observe_flows(f, flows, reference);
  FabricJudgment j = judge_fabric(f, nics, flows, observed, reference, d.search);

  json flow_list = json::array();
  size_t k = 0;
  for (const auto& x : flows) flow_list.push_back(flow_json(f, nics, x, x.skipped ? nullptr : &observed.at(k++)));
  json fabric{{"flows", flow_list},
              {"links", j.links},
              {"ecmp", j.ecmp},
              {"host_side", j.host_side},
              {"expected_flow_gbps", expected},
              {"reference_flow_gbps", reference},
              {"discovery_rounds", d.rounds},
              {"discovery_s", discover_s},
              {"measure_rounds", rounds},
              {"retest_rounds", retest_rounds},
              {"measure_s", measure_s},
              {"skipped", skipped}};
  results.set("fabric", fabric);  // measured: kept whatever the sweep does
  int reached = 0, opened = 0;
  for (const auto& x : flows) {
    opened += !x.skipped;
    reached += x.trace.reached;
  }
  if (!skipped.empty()) ctx.print(fmt::format("# fabric: some NICs open no flows: {}", skipped));
  ctx.print(fmt::format(
      "# phase 1c fabric: {} flows over {} leaf-spine links ({} reached their destination), paths "
      "traced in {:.1f} s ({} round(s)), measured in {} rounds and {} of re-tests ({:.1f} s), {} finding(s)",
      opened, f.links.size(), reached, discover_s, d.rounds, rounds, retest_rounds, measure_s, j.findings.size()));
  if (reference < 0.9 * expected) ctx.print(reference_line(reference, expected));
  for (const auto& line : d.lines) ctx.print(line);
  for (const auto& line : j.lines) ctx.print(line);
  for (const auto& x : j.findings)
    ctx.print(fmt::format("# fabric {} {}: {}: {}", to_string(x.severity), code_of(x), x.subject, x.reason));
  if (!f.tests.ecmp_sweep.empty()) ecmp_sweep_after(ctx, c, nics, listener.get(), pacer, fabric, results, j.findings);
  links_at_fault = j.links_at_fault;
  return j.findings;
}

}  // namespace railbench
