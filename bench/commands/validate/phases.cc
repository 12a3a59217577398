#include "bench/commands/validate/phases.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/commands/validate/arp_probe.h"
#include "bench/commands/validate/bisection.h"
#include "bench/commands/validate/burn_in_links.h"
#include "bench/commands/validate/cabling.h"
#include "bench/commands/validate/collectives.h"
#include "bench/commands/validate/counter_findings.h"
#include "bench/commands/validate/drain_list.h"
#include "bench/commands/validate/fabric_phase.h"
#include "bench/commands/validate/inventory.h"
#include "bench/commands/validate/pair_runner.h"
#include "bench/commands/validate/plan.h"
#include "bench/commands/validate/report.h"
#include "bench/commands/validate/tenants.h"
#include "bench/commands/validate/verdict.h"
#include "bench/runner/pair_test.h"
#include "lib/core/errors.h"
#include "lib/core/stats.h"

namespace railbench {

using nlohmann::json;

namespace {

// What the phases share: the run's inputs, this rank's place in the SU, and what has
// been found and measured so far. Each phase adds to it and writes its part of the
// results file as soon as it has it.
struct ValidateState {
  RunContext& ctx;
  const SuConfig& c;
  const SuLayout& L;
  const ValidateRun& run;
  ResultsRun& results;
  DrainListFile& drain;
  int my_node = 0, my_slot = 0;  // this rank's node and GPU slot (= its rail)
  int nodes = 0, rails = 0;
  std::vector<Finding> findings;
  std::vector<int> fabric_at_fault;  // phase 1c's leaf-spine links with a FAIL finding (c.fabric.links)
  std::vector<PairResult> rail_results, cross_results, retest_results;
  // The spot checks as judged: a pair measured again alone (retest_cross_alone) with its
  // figure alone; cross_results keeps the first.
  std::vector<PairResult> cross_judged;
  std::vector<std::vector<LinkStats>> stats;  // per rail, per node; unmeasured until phase 2
  std::vector<std::vector<NicReport>> nics;   // per node, per slot: the inventory
  // Every link's down counters, per node and slot: at the inventory, before and after
  // the re-tests; the verdict reads the differences.
  std::vector<std::vector<LinkCounters>> at_start, before_retests, after_retests;
  bool traffic = false;  // the traffic phases ran
  // The progress line's estimate: --plan's model, corrected by the rounds run so far.
  ValidatePlan plan;
  size_t rounds_total = 0, rounds_done = 0;
  double rail_spent_s = 0;  // seconds the rail-check rounds done so far took
  BurnInLog burn_in;        // --duration / --cycles: each link's figure per window of phase 2
  TenantMap tenants;        // one tenant of every node unless the config has tenants
};

// "validate: phase 2 rail checks, round 7/31, 00:42 elapsed, ~01:15 left" as a step.
void note_phase(ValidateState& s, const std::string& where, bool cross_left, bool collectives_left) {
  StatusLine& line = s.ctx.status();
  if (line.mode() == StatusLine::Mode::off) return;
  const bool cross = cross_left && s.c.tests.cross_rail && s.rails > 1;
  const bool colls = collectives_left && s.c.tests.collectives;
  const double left = validate_remaining_s(s.plan, s.rounds_total, s.rounds_done, s.rail_spent_s, cross, colls);
  line.step(
      fmt::format("validate: {}, {} elapsed, ~{} left", where, format_clock(line.elapsed_s()), format_clock(left)));
}

// The pair tests' buffers on this rank's rail, their keys from every rank, and the
// runner that uses them: one set for every pair test of the run, so the registrations
// outlive phases 2 to 5.
class PairTraffic {
 public:
  explicit PairTraffic(ValidateState& s)
      : src_(s.c.tests.bw_bytes),
        dst_(s.c.tests.bw_bytes),
        tokens_(64),
        src_mr_(s.ctx.transport().register_memory(src_.data(), src_.size(), MemoryKind::host)),
        dst_mr_(s.ctx.transport().register_memory(dst_.data(), dst_.size(), MemoryKind::host)),
        tok_mr_(s.ctx.transport().register_memory(tokens_.data(), tokens_.size(), MemoryKind::host)),
        buffers_{src_mr_.get(), dst_mr_.get(), tok_mr_.get(), peer_keys(s.ctx, *src_mr_), peer_keys(s.ctx, *dst_mr_)},
        test_(s.ctx.progress(), buffers_, Verb::send, false),
        runner_(s.ctx, test_, s.c) {}

  PairRunner& runner() { return runner_; }
  PairTest& test() { return test_; }

 private:
  static std::vector<RemoteKey> peer_keys(RunContext& ctx, const MemoryRegion& mr) {
    std::vector<RemoteKey> out;
    for (const auto& blob : ctx.bootstrap().all_gather_v(mr.remote_key().serialize()))
      out.push_back(RemoteKey::deserialize(blob));
    return out;
  }

  std::vector<std::byte> src_, dst_, tokens_;
  std::unique_ptr<MemoryRegion> src_mr_, dst_mr_, tok_mr_;
  PairBuffers buffers_;
  PairTest test_;
  PairRunner runner_;
};

std::vector<std::vector<NicReport>> gather_inventory(RunContext& ctx, const SuConfig& c, const SuLayout& L,
                                                     const NicReport& mine) {
  std::vector<std::vector<NicReport>> out(L.node_names.size(), std::vector<NicReport>(c.gpus_per_node));
  const auto all = ctx.bootstrap().all_gather_strings(json(mine).dump());
  for (int r = 0; r < ctx.size(); ++r) out[L.node_of[r]][L.slot_of[r]] = json::parse(all[r]).get<NicReport>();
  return out;
}

// Every rank's link counters now, [node][slot]: each rank reads its slot's NIC.
std::vector<std::vector<LinkCounters>> gather_counters(ValidateState& s) {
  const LinkCounters mine = read_link_counters(s.nics[s.my_node][s.my_slot]);
  const json j{{"carrier_changes", mine.carrier_changes}, {"link_downed", mine.link_downed}};
  std::vector<std::vector<LinkCounters>> out(s.nodes, std::vector<LinkCounters>(s.c.gpus_per_node));
  const auto all = s.ctx.bootstrap().all_gather_strings(j.dump());
  for (int r = 0; r < s.ctx.size(); ++r) {
    const json x = json::parse(all[r]);
    out[s.L.node_of[r]][s.L.slot_of[r]] = {x.at("carrier_changes").get<long long>(),
                                           x.at("link_downed").get<long long>()};
  }
  return out;
}

// The counters' link downs between two readings, into each link's figures.
template <class Field>
int count_downs(ValidateState& s, const std::vector<std::vector<LinkCounters>>& from,
                const std::vector<std::vector<LinkCounters>>& to, Field field) {
  int links = 0;
  for (int r = 0; r < s.rails; ++r) {
    for (int n = 0; n < s.nodes; ++n) {
      const int downs = link_downs(from[n][r], to[n][r]);
      s.stats[r][n].*field = downs;
      links += downs > 0;
    }
  }
  return links;
}

// The bad nodes of the findings so far, into the results file and the drain list:
// after every phase that adds findings, so a run that ends early keeps what it found.
// Returns them for the verdict's lines.
BadNodes publish_bad_nodes(ValidateState& s, bool final) {
  BadNodes bad = find_bad_nodes(s.findings, s.L.node_names);
  s.results.set("bad_nodes", bad);
  s.drain.write(bad, final);
  return bad;
}

// The verdict's lines about the drain list: what to drain, and what not and why, each
// ending with its reason codes in brackets.
void print_bad_nodes(ValidateState& s, const BadNodes& bad) {
  if (!bad.hosts.empty()) {
    std::vector<std::string> codes;  // every drained node's, once each
    for (const auto& [host, mine] : bad.codes)
      for (const auto& c : mine)
        if (std::find(codes.begin(), codes.end(), c) == codes.end()) codes.push_back(c);
    s.ctx.print(fmt::format("# bad nodes (drain): {} ({} node(s)) [{}]", bad.hostlist, bad.hosts.size(),
                            fmt::join(codes, ", ")));
  }
  for (const auto& l : bad.suspect_links) {
    std::string ends;
    for (const auto& e : l.ends) ends += (ends.empty() ? "" : ", ") + e;
    s.ctx.print(
        fmt::format("# suspect link, not drained: {}: the fault may lie with any of {} [{}]", l.subject, ends, l.code));
  }
  for (size_t i = 0; i < bad.switch_ports.size(); ++i)
    s.ctx.print(
        fmt::format("# switch port, no host drained: {} [{}]", bad.switch_ports[i], bad.switch_port_codes.at(i)));
  if (!s.run.drain_path.empty()) {
    s.ctx.print(fmt::format("# drain list: {} ({})", s.run.drain_path,
                            bad.hosts.empty() ? "empty: no node to drain" : bad.hostlist));
  }
}

// Phase 1, before any traffic. Returns true when a NIC is missing or down: no traffic
// can run then.
// This rank's port, read the way the inventory reads it.
NicReport probe_my_nic(const ValidateState& s) {
  const SuConfig& c = s.c;
  return c.rdma_nics() ? probe_rdma_nic(c.rails[s.my_slot].nic, c.gid_index) : probe_netdev_nic(c.rails[s.my_slot].nic);
}

bool phase_inventory(ValidateState& s) {
  note_phase(s, "phase 1 inventory", true, true);
  const SuConfig& c = s.c;
  const auto nics = gather_inventory(s.ctx, c, s.L, probe_my_nic(s));
  s.nics = nics;
  for (const auto& node : nics) {
    s.at_start.emplace_back();
    for (const auto& nic : node) s.at_start.back().push_back(nic.counters);
  }
  bool blocking = false;
  auto inv = judge_inventory(c, s.L.node_names, nics, blocking);
  const auto pkeys = judge_pkeys(c, s.L.node_names, s.tenants, nics);
  inv.insert(inv.end(), pkeys.begin(), pkeys.end());
  s.findings.insert(s.findings.end(), inv.begin(), inv.end());
  json inv_json = json::array();
  for (int n = 0; n < s.nodes; ++n)
    for (int slot = 0; slot < c.gpus_per_node; ++slot)
      inv_json.push_back(
          json{{"node", s.L.node_names[n]}, {"slot", slot}, {"rank", s.L.rank_of[n][slot]}, {"nic", nics[n][slot]}});
  s.results.set("inventory", inv_json);
  s.ctx.print(fmt::format("# phase 1 inventory: {} NICs read, {} finding(s){}", s.nodes * c.gpus_per_node, inv.size(),
                          blocking ? ": a NIC is missing or down, no traffic will run" : ""));
  publish_bad_nodes(s, false);
  return blocking;
}

// The Ethernet interface a rank's NIC sends on (the netdev under a RoCE port), or why
// the cabling check cannot probe it.
std::string cabling_port(const NicReport& nic, std::string& why) {
  if (nic.kind == "netdev") return nic.nic;
  if (nic.link_layer == "Ethernet" && !nic.netdev.empty()) return nic.netdev;
  why = fmt::format("{} is not an Ethernet port (InfiniBand has no ARP; its cabling is not checked)", nic.nic);
  return "";
}

// Phase 1b, before any traffic: does each NIC reach its own rail's leaf (cabling.h)?
// Every rank probes from its port for every other node's address on every rail; the
// reach matrix is gathered and judged on every rank, as the inventory is. Returns true
// when a NIC is cabled to the wrong leaf: no traffic runs then, as for a down port. Its
// pair tests would only name the crossed links unreachable (or, where a host answers
// ARP for all its addresses on any port, measure paths that go away once the cables
// are put right), and the other links are better judged after the re-cabling anyway.
bool phase_cabling(ValidateState& s) {
  constexpr auto kDeadline = std::chrono::milliseconds(300);
  std::string why;
  const std::string port = cabling_port(s.nics[s.my_node][s.my_slot], why);
  const PortAddress mine = port.empty() ? PortAddress{} : read_port_address(port);
  if (!port.empty() && mine.ipv4.empty()) why = fmt::format("{} has no IPv4 address to be asked for", port);
  const auto all = s.ctx.bootstrap().all_gather_strings(json{{"ipv4", mine.ipv4}, {"mac", mine.mac}}.dump());
  std::vector<ArpTarget> targets;
  std::vector<std::pair<int, int>> target_port;  // (node, rail) of each target
  for (int r = 0; r < s.ctx.size(); ++r) {
    const json x = json::parse(all[r]);
    if (s.L.node_of[r] == s.my_node || x.at("ipv4").get<std::string>().empty()) continue;
    targets.push_back({x.at("ipv4").get<std::string>(), x.at("mac").get<std::string>()});
    target_port.emplace_back(s.L.node_of[r], s.L.slot_of[r]);
  }
  std::vector<bool> answered;
  if (why.empty()) why = arp_probe(port, targets, kDeadline, answered);
  json heard = json::array();
  for (size_t i = 0; i < answered.size(); ++i)
    if (answered[i]) heard.push_back(json{target_port[i].first, target_port[i].second});
  const auto reports = s.ctx.bootstrap().all_gather_strings(json{{"skipped", why}, {"heard", heard}}.dump());

  ReachMatrix reach(s.nodes, std::vector<PortReach>(s.rails));
  std::string skipped;
  int probed = 0;
  json out = json::array();
  for (int r = 0; r < s.ctx.size(); ++r) {
    const json x = json::parse(reports[r]);
    PortReach& p = reach[s.L.node_of[r]][s.L.slot_of[r]];
    p.answered.assign(s.rails, 0);
    p.probed = x.at("skipped").get<std::string>().empty();
    probed += p.probed;
    if (!p.probed && skipped.empty()) skipped = x.at("skipped").get<std::string>();
    for (const auto& h : x.at("heard")) p.answered.at(h.at(1).get<int>()) += 1;
    out.push_back(json{{"node", s.L.node_names[s.L.node_of[r]]},
                       {"rail", s.L.slot_of[r]},
                       {"probed", p.probed},
                       {"answered_per_rail", p.answered}});
  }
  auto found = judge_cabling(s.c, s.L.node_names, reach);
  s.results.set("cabling", out);
  if (probed < s.ctx.size()) {
    s.ctx.print(
        fmt::format("# cabling check: skipped on {} of {} port(s): {}", s.ctx.size() - probed, s.ctx.size(), skipped));
  }
  if (probed == 0) return false;
  for (const auto& f : found) s.ctx.print(fmt::format("# cabling: {}: {}", f.subject, f.reason));
  s.ctx.print(fmt::format("# phase 1 cabling check: {} port(s) probed (ARP, {} ms), {} finding(s){}", probed,
                          kDeadline.count(), found.size(),
                          found.empty() ? "" : ": a NIC reaches the wrong leaf, no traffic will run"));
  s.findings.insert(s.findings.end(), found.begin(), found.end());
  publish_bad_nodes(s, false);
  return !found.empty();
}

// Phase 1c (fabric_phase.h), when the config describes the fabric above the leaves.
void phase_fabric(ValidateState& s) {
  if (!s.c.fabric.present() || !s.c.fabric.tests.enabled) return;
  std::string why;
  const std::string port = cabling_port(s.nics[s.my_node][s.my_slot], why);
  auto found = run_fabric_phase(s.ctx, s.c, s.L, port, why, s.results, s.fabric_at_fault);
  s.findings.insert(s.findings.end(), found.begin(), found.end());
  publish_bad_nodes(s, false);
}

// After a transport refused to open: what each rank's port did since the inventory.
enum class PortSince : int { steady, back_up, down };

// Waits (until `deadline`) for this rank's port to come back if it is down, and says
// whether it went down since the inventory at all.
PortSince wait_for_my_port(const ValidateState& s, Clock::time_point deadline) {
  NicReport now = probe_my_nic(s);
  const bool went_down = !now.up || link_downs(s.at_start[s.my_node][s.my_slot], now.counters) > 0;
  while (!now.up && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    now = probe_my_nic(s);
  }
  if (!went_down) return PortSince::steady;
  return now.up ? PortSince::back_up : PortSince::down;
}

// One rail per rank: its slot's NIC. A port that goes down between the inventory and
// here (a loose cable, a flapping link) makes its transport refuse to open (libfabric
// lists no domain for an interface that is down), on every rank since the open is
// agreed. Such a port gets the pair deadline to come back, as a pair test would give
// it, and the open is tried again; one still down then, or one that kept the transport
// from opening until then, is a FAIL finding like a port down at the inventory and no
// traffic runs (false). A refusal with every port steady is not a port's doing: thrown.
bool open_rail(ValidateState& s) {
  s.ctx.set_rails(s.c.rails[s.my_slot].nic);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(5.0, s.ctx.options().timeout_s)));
  for (;;) {
    try {
      s.ctx.open_transport();
      break;
    } catch (const AgreedError& e) {
      const auto ports = s.ctx.bootstrap().all_gather_value(wait_for_my_port(s, deadline));
      if (std::all_of(ports.begin(), ports.end(), [](PortSince p) { return p == PortSince::steady; })) throw;
      const bool gave_up = Clock::now() >= deadline;
      if (!gave_up && std::count(ports.begin(), ports.end(), PortSince::down) == 0) {
        std::string back;
        for (int r = 0; r < s.ctx.size(); ++r)
          if (ports[r] != PortSince::steady)
            back += (back.empty() ? "" : ", ") + link_name(s.c, s.L.node_names, {s.L.node_of[r], s.L.slot_of[r]});
        s.ctx.print(
            fmt::format("# transport refused to open while {} went down after the inventory; back up, "
                        "opening again (the pair tests will judge the link)",
                        back));
        continue;
      }
      for (int r = 0; r < s.ctx.size(); ++r) {
        if (ports[r] == PortSince::steady) continue;
        const int node = s.L.node_of[r], slot = s.L.slot_of[r];
        const std::string why =
            ports[r] == PortSince::down
                ? fmt::format("port {} went down after the inventory and stayed down", s.c.rails[slot].nic)
                : fmt::format("port {} went down after the inventory and kept the transport from opening",
                              s.c.rails[slot].nic);
        s.findings.push_back(
            coded({Severity::fail, FindingKind::inventory, link_name(s.c, s.L.node_names, {node, slot}),
                   fmt::format("{} (transport: {}): check the cable and the switch port", why, e.what()), 0, 1, "",
                   node, slot},
                  reason::kInventoryPortDown));
        s.ctx.print(fmt::format("# {}: {}", s.findings.back().subject, s.findings.back().reason));
      }
      publish_bad_nodes(s, false);
      return false;
    }
  }
  s.traffic = true;
  // The header was written before the transport existed; now it does.
  s.results.set("transport", s.ctx.results_header(json::object()).at("transport"));
  return true;
}

// The rails' matrices into the results, made row by row as the file is written from a copy
// of the pair results the file keeps (4 M at 1,024 x 8; as JSON values GBs).
void set_rail_matrices(ValidateState& s) {
  auto rails = rail_matrices_streamed(s.c, s.L.node_names,
                                      std::make_shared<const std::vector<PairResult>>(s.rail_results), s.stats);
  s.results.set_with_arrays("rails", std::move(rails.rails), std::move(rails.matrices));
}

// One pass of phase 2: every node pair on every rail, all rails at once. `first`: the
// run's own pass, whose results the later phases and the verdict read and which go to
// the file round by round; a burn-in's later passes only feed its windows.
std::vector<PairResult> rail_pass(ValidateState& s, PairRunner& runner, bool first, const std::string& window) {
  const auto rounds = circle_schedule(s.nodes);
  // Shared with the results file, which makes each record's JSON only as it writes it:
  // 4 M records at 1,024 x 8 would take GBs as JSON values.
  auto out = std::make_shared<std::vector<PairResult>>();
  const Clock::time_point start = Clock::now();
  for (size_t k = 0; k < rounds.size(); ++k) {
    if (first) {
      s.rounds_total = rounds.size();
      s.rounds_done = k;
      s.rail_spent_s = std::chrono::duration<double>(Clock::now() - start).count();
    }
    note_phase(s, fmt::format("phase 2 rail checks{}, round {}/{}", window, k + 1, rounds.size()), true, true);
    // With tenants, a pair of two tenants rests: it is supposed to fail (the isolation
    // phase probes it).
    int partner = peer_in_round(rounds[k], s.my_node);
    if (partner >= 0 && !s.tenants.same(partner, s.my_node)) partner = -1;
    const bool leader = s.my_node < partner;
    PairResult key{PairPhase::rail, std::min(s.my_node, partner), std::max(s.my_node, partner), s.my_slot, s.my_slot};
    auto got = runner.exchange(runner.run(key, partner >= 0 ? s.L.rank_of[partner][s.my_slot] : -1, leader));
    out->insert(out->end(), got.begin(), got.end());
    if (first) s.results.set_array("rail_pairs", out->size(), [out](size_t i) { return json((*out)[i]); });
  }
  if (first) {
    s.rounds_done = rounds.size();
    s.rail_spent_s = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return *out;
}

// Phase 2, once or (burn-in) in windows until rank 0's clock or count says stop.
void phase_rail_checks(ValidateState& s, PairRunner& runner) {
  const BurnInPlan& plan = s.run.burn_in;
  // The NICs' link-down counters around each window: a link that went down in a window
  // has a low window, whatever its figure (a flap between two pair tests slows none).
  auto counters = plan.on() ? gather_counters(s) : std::vector<std::vector<LinkCounters>>{};
  std::vector<PairResult> got;
  s.results.burn_in(
      plan, s.burn_in,
      [&](const BurnInClock& clock) {
        const bool first = clock.windows_started() == 1;
        got = rail_pass(s, runner, first, plan.on() ? ", burn-in " + window_label(clock) : "");
        if (first) s.rail_results = got;
      },
      [&](const BurnInClock& clock, bool) {
        if (!plan.on()) return;
        const std::string line = log_rail_window(s.burn_in, s.c, s.L.node_names, got);
        auto now = gather_counters(s);
        flag_link_downs(s.burn_in, s.L.node_names, counters, now);
        counters = std::move(now);
        const WindowTime& t = s.burn_in.times().back();
        s.ctx.print(fmt::format("# burn-in pass {} at +{:.1f} s ({}), {:.1f} s: {}", clock.windows_started(), t.start_s,
                                t.wall, t.end_s - t.start_s, line));
      });
  const auto rounds = circle_schedule(s.nodes);
  s.stats = link_stats(s.c, s.nodes, s.rail_results);
  set_rail_matrices(s);
  s.ctx.print(fmt::format(
      "# phase 2 rail checks: {} rounds, {} pair tests, {} failed to complete", rounds.size(), s.rail_results.size(),
      std::count_if(s.rail_results.begin(), s.rail_results.end(), [](const auto& p) { return !p.ok; })));
}

// On a multi-spine fabric the spot checks all run at once, and the spines' ECMP puts
// some of them on one uplink: a healthy pair then gets half a link or less. A pair below
// the threshold (bw_min_fraction of its line rate) is measured once more with only the
// other such pairs running; the figure alone is the one judged, and both are kept
// (cross_rail_pairs, cross_rail_alone). A pair slow alone too is judged as before.
void retest_cross_alone(ValidateState& s, PairRunner& runner, const PairResult& key, int peer, bool first) {
  s.cross_judged = s.cross_results;
  if (!s.c.fabric.present()) return;
  auto slow = [&](const PairResult& p) { return p.ok && std::min(p.bw_ab, p.bw_ba) < cross_rail_need(s.c, p); };
  auto same = [](const PairResult& a, const PairResult& b) {
    return a.node_a == b.node_a && a.node_b == b.node_b && a.rail_a == b.rail_a && a.rail_b == b.rail_b;
  };
  std::vector<PairResult> again;
  for (const auto& p : s.cross_results)
    if (slow(p)) again.push_back(p);
  if (again.empty()) return;
  const bool mine = std::any_of(again.begin(), again.end(), [&](const PairResult& p) { return same(p, key); });
  const auto alone = runner.exchange(runner.run(key, mine ? peer : -1, first));
  s.results.set("cross_rail_alone", alone);
  int passed = 0;
  for (const auto& p : alone) {
    auto it =
        std::find_if(s.cross_judged.begin(), s.cross_judged.end(), [&](const PairResult& x) { return same(x, p); });
    if (it == s.cross_judged.end() || !p.ok || slow(p)) continue;
    ++passed;
    s.ctx.print(fmt::format(
        "# phase 3: {} rail{} -> {} rail{}: {:.3g} GB/s beside the other spot checks, {:.3g} GB/s with only the slow "
        "ones running: the spot checks shared a spine uplink (ECMP), not a fault",
        s.L.node_names.at(p.node_a), p.rail_a, s.L.node_names.at(p.node_b), p.rail_b, std::min(it->bw_ab, it->bw_ba),
        std::min(p.bw_ab, p.bw_ba)));
    *it = p;
  }
  s.ctx.print(
      fmt::format("# phase 3: {} slow spot check(s) measured again with only the slow ones running, {} "
                  "passed",
                  again.size(), passed));
}

// Phase 3: node 2m slot s with node 2m+1 slot s+1, through the spine.
void phase_cross_rail(ValidateState& s, PairRunner& runner) {
  if (!s.c.tests.cross_rail || s.rails <= 1) return;
  note_phase(s, "phase 3 cross-rail spot checks", true, true);
  // Node 2m with 2m+1, within the tenant when there are tenants.
  const CrossPartner cp = cross_rail_partner(s.tenants, s.my_node);
  const bool first = cp.first;
  const int partner = cp.node;
  const int pslot = cross_partner_slot(s.my_slot, s.rails, first);
  PairResult key = first ? PairResult{PairPhase::cross, s.my_node, partner, s.my_slot, pslot}
                         : PairResult{PairPhase::cross, partner, s.my_node, pslot, s.my_slot};
  const int peer = partner >= 0 ? s.L.rank_of[partner][pslot] : -1;
  s.cross_results = runner.exchange(runner.run(key, peer, first));
  s.results.set("cross_rail_pairs", s.cross_results);
  s.ctx.print(fmt::format("# phase 3 cross-rail spot checks: {} pair tests", s.cross_results.size()));
  retest_cross_alone(s, runner, key, peer, first);
}

// Phase 4: each suspect link against a good partner on its rail, then the links' findings.
void phase_retests(ValidateState& s, PairRunner& runner) {
  s.before_retests = gather_counters(s);
  const int went_down = count_downs(s, s.at_start, s.before_retests, &LinkStats::downs);
  const auto suspects = find_suspects(s.c, s.stats);
  std::vector<int> su_of;  // per node, its fabric SU (-1: none): a re-test stays on the suspect's leaf
  for (const auto& name : s.L.node_names) su_of.push_back(s.c.fabric.su_of(name));
  const auto retest_rounds =
      plan_retests(suspects, s.stats, s.tenants.on() ? s.tenants.of_node : std::vector<int>{}, su_of);
  size_t retest_round = 0;
  for (const auto& round : retest_rounds) {
    note_phase(s, fmt::format("phase 4 re-tests, round {}/{}", ++retest_round, retest_rounds.size()), false, true);
    PairResult key;
    int peer = -1;
    bool leader = false;
    for (const auto& rt : round) {
      if (s.my_slot != rt.suspect.rail) continue;
      if (s.my_node == rt.suspect.node || s.my_node == rt.partner) {
        key = PairResult{PairPhase::retest, rt.suspect.node, rt.partner, s.my_slot, s.my_slot};
        leader = s.my_node == rt.suspect.node;
        peer = s.L.rank_of[leader ? rt.partner : rt.suspect.node][s.my_slot];
      }
    }
    auto got = runner.exchange(runner.run(key, peer, leader));
    s.retest_results.insert(s.retest_results.end(), got.begin(), got.end());
    s.results.set("retest_pairs", s.retest_results);
  }
  s.after_retests = gather_counters(s);
  count_downs(s, s.before_retests, s.after_retests, &LinkStats::retest_downs);
  s.ctx.print(fmt::format("# phase 4 re-tests: {} suspect link(s) ({} went down during the pair tests), {} re-tested",
                          suspects.size(), went_down, s.retest_results.size()));
  auto links = judge_links(s.c, s.L.node_names, s.stats, suspects, s.retest_results, s.cross_judged, s.fabric_at_fault);
  s.findings.insert(s.findings.end(), links.begin(), links.end());
  publish_bad_nodes(s, false);
}

// Phase 4b (tests.bisection): the cuts of bisection.h, each rail at once, every pair of
// a cut streaming both ways at once. Skipped when a pair could not talk (its streams
// would only wait out the deadline) and with tenants (a cut would cross them). Returns
// false when a stream failed: the transport's state with that peer is gone, and the
// later traffic phases must not run.
// One cut of phase 4b: every pair of `split` at once, both ways; the first half's figure
// of each pair, by rail, in `per_rail`. Returns the first rank's error, "" when none.
std::string measure_cut(ValidateState& s, PairTest& test, const BisectionSplit& split, BisectionCut cut,
                        std::vector<std::vector<BisectionPair>>& per_rail) {
  const SuTests& t = s.c.tests;
  // This rank's pair: node i of the first half (slot s) with node i of the second
  // (slot s, or s+1 for the cross-rail cut; the second half's slot s meets the first
  // half's slot s-1 then).
  int peer = -1, peer_slot = s.my_slot;
  bool first = false;
  for (const auto& [a, b] : split.pairs) {
    if (s.my_node != a && s.my_node != b) continue;
    first = s.my_node == a;
    if (cut == BisectionCut::cross_rail) peer_slot = cross_partner_slot(s.my_slot, s.rails, first);
    peer = s.L.rank_of[first ? b : a][peer_slot];
  }
  std::string error;
  double gbps = 0;
  s.ctx.bootstrap().barrier();  // every pair starts together: the cut is loaded all at once
  try {
    if (peer >= 0) {
      const auto windows = test.bidirectional(peer, 0, t.bw_bytes, t.bw_window, 1, t.bw_iters);
      gbps = windows.empty() ? 0 : summarize(windows).p50;
    }
  } catch (const Error& e) {
    error = e.what();
  }
  const json mine{{"node", s.my_node}, {"slot", s.my_slot}, {"first", first}, {"peer_slot", peer_slot},
                  {"peer", peer},      {"gbps", gbps},      {"error", error}};
  per_rail.assign(s.rails, {});
  std::string first_error;
  for (const auto& text : s.ctx.bootstrap().all_gather_strings(mine.dump())) {
    const json x = json::parse(text);
    if (first_error.empty() && !x.at("error").get<std::string>().empty()) first_error = x.at("error");
    if (!x.at("first").get<bool>() || x.at("peer").get<int>() < 0) continue;  // the first half keeps the figure
    const int node = x.at("node").get<int>(), slot = x.at("slot").get<int>();
    int other = -1;
    for (const auto& [a, b] : split.pairs)
      if (a == node) other = b;
    per_rail[slot].push_back({node, other, slot, x.at("peer_slot").get<int>(), x.at("gbps").get<double>()});
  }
  return first_error;
}

// Phase 4b's table: each cut and rail against the ideal and the threshold.
void print_bisection(ValidateState& s, const BisectionSplit& split, const std::vector<BisectionRail>& measured) {
  s.ctx.print(fmt::format(
      "# phase 4b bisection: nodes 1-{} against {}-{}{}, every pair both ways at once, per rail:", split.pairs.size(),
      split.pairs.size() + 1, 2 * split.pairs.size(),
      split.rests >= 0 ? fmt::format(" ({} sits out: odd count)", s.L.node_names[split.rests]) : ""));
  const double need = s.c.thresholds.bisection_min_fraction;
  for (const auto& c : measured) {
    const std::string path = c.cut == BisectionCut::rail
                                 ? fmt::format("rail{}", c.rail)
                                 : fmt::format("rail{} -> rail{}", c.rail, cross_partner_slot(c.rail, s.rails, true));
    s.ctx.print(fmt::format("#   {:<10} {:<16} {:>3} pairs  {:>8.3f} of {:>8.3f} GB/s = {:>5.1f}% (need {:.0f}%)  {}",
                            to_string(c.cut), path, c.pairs.size(), c.achieved, c.ideal, 100 * c.fraction(), 100 * need,
                            c.fraction() < need ? "FAIL" : "PASS"));
  }
}

bool phase_bisection(ValidateState& s, const PairRunner& runner, PairTest& test) {
  if (!s.c.tests.bisection) return true;
  if (s.tenants.on()) {
    s.ctx.print(
        "# phase 4b bisection: not run with tenants (a cut would cross them; each tenant's all-reduce runs in "
        "phase 5)");
    return true;
  }
  if (runner.any_broken()) {
    s.ctx.print("# phase 4b bisection: skipped, some pairs could not talk (they would only time out)");
    s.results.set("bisection", "skipped: unreachable pairs");
    return true;
  }
  const BisectionSplit split = bisection_split(s.nodes);
  std::vector<BisectionCut> cuts{BisectionCut::rail};
  if (s.rails > 1 && s.c.tests.bisection_cross_rail) cuts.push_back(BisectionCut::cross_rail);
  json out = json::array();
  std::vector<BisectionRail> measured;
  for (const BisectionCut cut : cuts) {
    note_phase(s, fmt::format("phase 4b bisection, {} cut", to_string(cut)), false, true);
    std::vector<std::vector<BisectionPair>> per_rail;
    const std::string first_error = measure_cut(s, test, split, cut, per_rail);
    if (!first_error.empty()) {
      s.findings.push_back(coded({Severity::fail, FindingKind::bisection, fmt::format("{} cut", to_string(cut)),
                                  "did not complete: " + first_error, 0, 1, ""},
                                 reason::kBisectionIncomplete));
      s.ctx.print(fmt::format("# phase 4b bisection: the {} cut did not complete: {}", to_string(cut), first_error));
      s.results.set("bisection", out);
      return false;
    }
    for (int r = 0; r < s.rails; ++r) {
      BisectionRail c = summarize_cut(s.c, cut, r, std::move(per_rail[r]));
      out.push_back(to_json(s.c, s.L.node_names, c));
      measured.push_back(std::move(c));
    }
  }
  s.results.set("bisection", out);
  print_bisection(s, split, measured);
  auto found = judge_bisection(s.c, s.L.node_names, measured);
  s.findings.insert(s.findings.end(), found.begin(), found.end());
  return true;
}

// Phase 4c, with tenants: every cross-tenant node pair, on every rail and (2+ rails)
// one rail over through the spine, must NOT get a message through within
// tests.isolation_timeout_s. Each rank posts a receive from and a send to each of its
// probe peers at once and waits out the deadline; a peer that did not answer is
// abandoned (its operations stay posted until the transport closes), which is the
// expected case. Probe rounds follow the circle schedule, so no node probes two nodes
// at once; rounds with no cross-tenant pair are skipped.
class IsolationTokens {
 public:
  explicit IsolationTokens(Transport& t)
      : buf_(64), mr_(t.register_memory(buf_.data(), buf_.size(), MemoryKind::host)) {}
  LocalSpan recv_slot(int i) const { return LocalSpan{mr_.get(), 8 * static_cast<size_t>(i), 8}; }
  LocalSpan send_slot() const { return LocalSpan{mr_.get(), 32, 8}; }

 private:
  std::vector<std::byte> buf_;
  std::unique_ptr<MemoryRegion> mr_;
};

// One round of phase 4c for this rank: its probes to its round partner, each a receive
// and a send posted until the deadline; each probe's outcome appended to `mine`.
void probe_round(ValidateState& s, const IsolationTokens& tokens, int partner, double deadline, json& mine) {
  Progress& p = s.ctx.progress();
  const bool lower = s.my_node < partner;
  // Same rail, and (2+ rails) the lower node's slot s with the higher's slot s+1.
  std::vector<int> peer_slots{s.my_slot};
  if (s.rails > 1) peer_slots.push_back(cross_partner_slot(s.my_slot, s.rails, lower));
  // Receives and sends are tried again and again until they post (rxm answers retry
  // while it cannot connect) or the deadline passes: a send that never posted, like
  // one that never arrived, is a peer this rank could not reach.
  struct Probe {
    int peer_slot, peer;
    std::optional<uint64_t> recv, send;
  };
  std::vector<Probe> probes;
  for (int slot : peer_slots) probes.push_back({slot, s.L.rank_of[partner][slot], std::nullopt, std::nullopt});
  const auto start = Clock::now();
  auto finished = [&](const Probe& q) { return q.recv && q.send && p.done(*q.recv) && p.done(*q.send); };
  while (seconds_between(start, Clock::now()) < deadline && !std::all_of(probes.begin(), probes.end(), finished)) {
    for (size_t i = 0; i < probes.size(); ++i) {
      Probe& q = probes[i];
      if (!q.recv) q.recv = p.try_recv(q.peer, 0, tokens.recv_slot(static_cast<int>(i)));
      if (!q.send) q.send = p.try_send(q.peer, 0, tokens.send_slot());
    }
    if (p.poll_once() == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const double waited = seconds_between(start, Clock::now());
  for (const Probe& q : probes) {
    const bool reached = q.recv && p.done(*q.recv);
    if (!finished(q)) p.abandon_peer(q.peer);
    mine.push_back(json{{"node", s.my_node},
                        {"rail", s.my_slot},
                        {"peer_node", partner},
                        {"peer_rail", q.peer_slot},
                        {"reached", reached},
                        {"seconds", waited}});
  }
}

// Every rank's probes, merged per pair as the lower node's (a) and the higher's (b), in
// the order of their nodes and rails; the results' "isolation" rows in `out`.
std::vector<IsolationProbe> merge_isolation(ValidateState& s, const json& mine, json& out) {
  std::map<std::tuple<int, int, int, int>, IsolationProbe> merged;
  for (const auto& text : s.ctx.bootstrap().all_gather_strings(mine.dump())) {
    for (const auto& x : json::parse(text)) {
      const int n = x.at("node").get<int>(), r = x.at("rail").get<int>();
      const int pn = x.at("peer_node").get<int>(), pr = x.at("peer_rail").get<int>();
      const bool a_side = n < pn;
      const auto key = a_side ? std::tuple{n, r, pn, pr} : std::tuple{pn, pr, n, r};
      IsolationProbe& probe = merged[key];
      std::tie(probe.node_a, probe.rail_a, probe.node_b, probe.rail_b) = key;
      (a_side ? probe.reached_a : probe.reached_b) = x.at("reached").get<bool>();
      probe.seconds = std::max(probe.seconds, x.at("seconds").get<double>());
    }
  }
  std::vector<IsolationProbe> probes;
  out = json::array();
  for (const auto& [key, probe] : merged) {
    probes.push_back(probe);
    out.push_back(json{{"node_a", s.L.node_names[probe.node_a]},
                       {"tenant_a", s.tenants.names[s.tenants.of_node[probe.node_a]]},
                       {"rail_a", probe.rail_a},
                       {"node_b", s.L.node_names[probe.node_b]},
                       {"tenant_b", s.tenants.names[s.tenants.of_node[probe.node_b]]},
                       {"rail_b", probe.rail_b},
                       {"reached_a", probe.reached_a},
                       {"reached_b", probe.reached_b},
                       {"isolated", !probe.reached_a && !probe.reached_b}});
  }
  return probes;
}

void phase_isolation(ValidateState& s, const IsolationTokens& tokens) {
  if (!s.tenants.on()) return;
  if (!s.c.tests.isolation) {
    s.ctx.print("# phase 4c isolation: off (tests.isolation false)");
    return;
  }
  const auto rounds = isolation_rounds(s.tenants, s.nodes);
  const double deadline = s.c.tests.isolation_timeout_s;
  json mine = json::array();
  size_t k = 0;
  for (const Round& round : rounds) {
    note_phase(s, fmt::format("phase 4c isolation, round {}/{}", ++k, rounds.size()), false, true);
    s.ctx.bootstrap().barrier();  // every probe of a round starts together, none overlaps the last round's
    const int partner = peer_in_round(round, s.my_node);
    if (partner >= 0) probe_round(s, tokens, partner, deadline, mine);
  }
  json out;
  const std::vector<IsolationProbe> probes = merge_isolation(s, mine, out);
  s.results.set("isolation", out);
  auto found = judge_isolation(s.c, s.L.node_names, s.tenants, probes);
  const auto through =
      std::count_if(probes.begin(), probes.end(), [](const IsolationProbe& q) { return q.reached_a || q.reached_b; });
  s.ctx.print(
      fmt::format("# phase 4c isolation: {} cross-tenant probe(s) in {} round(s) ({:.1f} s deadline), {} got "
                  "through{}",
                  probes.size(), rounds.size(), deadline, through, through ? ": isolation breached" : ""));
  s.findings.insert(s.findings.end(), found.begin(), found.end());
  publish_bad_nodes(s, false);
}

// Phase 5: all-reduce and all-to-all over every rank, unless a pair could not talk.
void phase_collectives(ValidateState& s, const PairRunner& runner) {
  if (!s.c.tests.collectives) {
    s.ctx.print("# phase 5 collectives: off (tests.collectives false)");
  } else if (s.tenants.on() && runner.any_broken()) {
    s.ctx.print("# phase 5 collectives per tenant: skipped, some pairs could not talk (they would only time out)");
    s.results.set("tenant_collectives", "skipped: unreachable pairs");
  } else if (s.tenants.on()) {
    note_phase(s, "phase 5 collectives per tenant", false, true);
    s.results.set("tenant_collectives", run_tenant_collectives(s.ctx, s.c, s.L, s.tenants, s.findings));
  } else if (runner.any_broken()) {
    s.ctx.print("# phase 5 collectives: skipped, some pairs could not talk (they would only time out)");
    s.results.set("collectives", "skipped: unreachable pairs");
  } else {
    note_phase(s, "phase 5 collectives", false, true);
    s.ctx.print(fmt::format("# phase 5 collectives over {} ranks:", s.ctx.size()));
    s.results.set("collectives", run_collectives(s.ctx, s.c, s.L, s.findings));
  }
}

// The verdict: the table, the findings worst first, the results file closed. Returns
// the exit code.
int finish(ValidateState& s) {
  if (s.traffic) {
    // The last reading: a link that went down after its pair tests is named too, and
    // every link's counts over the whole run go into its figures.
    const auto at_end = gather_counters(s);
    count_downs(s, s.after_retests, at_end, &LinkStats::late_downs);
    for (int r = 0; r < s.rails; ++r) {
      for (int n = 0; n < s.nodes; ++n) {
        auto delta = [](long long a, long long b) { return a >= 0 && b >= a ? b - a : -1; };
        s.stats[r][n].carrier_changes = delta(s.at_start[n][r].carrier_changes, at_end[n][r].carrier_changes);
        s.stats[r][n].link_downed = delta(s.at_start[n][r].link_downed, at_end[n][r].link_downed);
      }
    }
    judge_link_downs(s.c, s.L.node_names, s.stats, s.findings);
    if (s.run.baseline) {
      const size_t before = s.findings.size();
      const int judged = judge_against_baseline(s.c, s.L.node_names, s.stats, *s.run.baseline, s.findings);
      s.ctx.print(fmt::format("# baseline {}: {} link(s) judged against their accepted figures, {} new finding(s)",
                              s.run.baseline->path, judged, s.findings.size() - before));
    }
    if (s.run.history) {
      const size_t before = s.findings.size();
      const int judged = judge_against_history(s.c, s.L.node_names, s.stats, *s.run.history, s.findings);
      s.ctx.print(
          judged > 0
              ? fmt::format("# history {}: {} link(s) judged against their own last runs and the SU's links over {} "
                            "run(s), {} new finding(s)",
                            s.run.history->store, judged, s.run.history->runs, s.findings.size() - before)
              : fmt::format("# history {}: {} earlier run(s) of {}, fewer than the {} a judgement needs",
                            s.run.history->store, s.run.history->runs, s.run.history->su, kHistoryMinRuns));
    }
    // Last: what the NICs counted is said on every link finding, the baseline's too.
    std::vector<PairResult> tested = s.rail_results;
    tested.insert(tested.end(), s.cross_results.begin(), s.cross_results.end());
    tested.insert(tested.end(), s.retest_results.begin(), s.retest_results.end());
    judge_counters(s.c, s.L.node_names, link_counters(s.rails, s.nodes, tested), s.findings);
    set_rail_matrices(s);
  }
  s.ctx.status().clear();
  if (s.run.burn_in.on() && s.burn_in.windows() > 0) {
    for (const auto& line : s.burn_in.table("validate, each link's pair-test rate per window of phase 2"))
      s.ctx.print(line);
    auto flaky = burn_in_findings(s.burn_in, s.c, s.L.node_names);
    s.findings.insert(s.findings.end(), flaky.begin(), flaky.end());
  }
  sort_findings(s.findings);
  for (const auto& line : summary_lines(s.c, s.L.node_names, s.findings, s.stats)) s.ctx.print(line);
  s.results.set("findings", s.findings);
  print_bad_nodes(s, publish_bad_nodes(s, true));
  const bool pass =
      std::none_of(s.findings.begin(), s.findings.end(), [](const Finding& f) { return f.severity == Severity::fail; });
  s.results.set("verdict", pass ? "PASS" : "FAIL");
  s.results.finish();
  return pass ? 0 : 1;
}

}  // namespace

int validate_phases(RunContext& ctx, const SuConfig& c, const SuLayout& L, const ValidateRun& run,
                    ResultsRun& results) {
  const int nodes = static_cast<int>(L.node_names.size());
  DrainListFile drain(ctx.is_root() ? run.drain_path : "");
  ValidateState s{.ctx = ctx,
                  .c = c,
                  .L = L,
                  .run = run,
                  .results = results,
                  .drain = drain,
                  .my_node = L.node_of[ctx.rank()],
                  .my_slot = L.slot_of[ctx.rank()],
                  .nodes = nodes,
                  .rails = c.num_rails(),
                  .stats = std::vector<std::vector<LinkStats>>(c.num_rails(), std::vector<LinkStats>(nodes)),
                  .plan = make_validate_plan(c),
                  .burn_in = BurnInLog(c.thresholds.burn_in_below_median),
                  .tenants = make_tenant_map(c, L.node_names)};
  s.rounds_total = s.plan.rounds.size();
  for (const auto& m : L.missing) {
    s.findings.push_back(coded({Severity::fail, FindingKind::inventory, m,
                                "in the config but not part of this run (no rank ran there)", 0, 1, ""},
                               reason::kInventoryNodeAbsent));
  }
  ctx.print(fmt::format("# railbench validate: {} ({}), {} of {} nodes x {} GPUs, {} rails, transport {}", c.name,
                        c.path, s.nodes, c.nodes.size(), c.gpus_per_node, s.rails, run.transport));
  if (!run.note.empty()) ctx.print("# " + run.note);
  try {
    const bool blocking = phase_inventory(s);
    if (blocking || run.inventory_only) return finish(s);
    if (phase_cabling(s)) return finish(s);
    phase_fabric(s);
    if (run.fabric_only) return finish(s);

    if (!open_rail(s)) return finish(s);
    PairTraffic traffic(s);
    IsolationTokens isolation_tokens(s.ctx.transport());
    phase_rail_checks(s, traffic.runner());
    phase_cross_rail(s, traffic.runner());
    phase_retests(s, traffic.runner());
    if (!phase_bisection(s, traffic.runner(), traffic.test())) return finish(s);
    phase_isolation(s, isolation_tokens);
    phase_collectives(s, traffic.runner());
    return finish(s);
  } catch (const Error&) {
    // A partial run: the nodes found bad so far are what the operator needs now. A
    // failure to write them must not hide the error that ended the run.
    try {
      publish_bad_nodes(s, true);
    } catch (const Error&) {
    }
    throw;
  }
}

}  // namespace railbench
