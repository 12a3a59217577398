#include "bench/validate/phases.h"

#include <algorithm>

#include <fmt/format.h>

#include "bench/pair_test.h"
#include "bench/validate/collectives.h"
#include "bench/validate/inventory.h"
#include "bench/validate/pair_runner.h"
#include "bench/validate/plan.h"
#include "bench/validate/report.h"
#include "bench/validate/verdict.h"

namespace railbench {

using nlohmann::json;

namespace {

std::vector<std::vector<NicReport>> gather_inventory(RunContext& ctx, const SuConfig& c, const SuLayout& L,
                                                     const NicReport& mine) {
  std::vector<std::vector<NicReport>> out(L.node_names.size(), std::vector<NicReport>(c.gpus_per_node));
  const auto all = ctx.bootstrap().all_gather_strings(json(mine).dump());
  for (int r = 0; r < ctx.size(); ++r) out[L.node_of[r]][L.slot_of[r]] = json::parse(all[r]).get<NicReport>();
  return out;
}

}  // namespace

int validate_phases(RunContext& ctx, const SuConfig& c, const SuLayout& L, const ValidateRun& run,
                    ResultsFile& results) {
  const int my_node = L.node_of[ctx.rank()], my_slot = L.slot_of[ctx.rank()];
  const int N = static_cast<int>(L.node_names.size()), R = c.num_rails();
  std::vector<Finding> findings;
  for (const auto& m : L.missing) {
    findings.push_back({Severity::fail, FindingKind::inventory, m,
                        "in the config but not part of this run (no rank ran there)", 0, 1, ""});
  }
  ctx.print(fmt::format("# railbench validate: {} ({}), {} of {} nodes x {} GPUs, {} rails, transport {}", c.name,
                        c.path, N, c.nodes.size(), c.gpus_per_node, R, run.transport));

  // ---- phase 1: inventory ----
  const NicReport my_nic =
      c.rdma_nics() ? probe_rdma_nic(c.rails[my_slot].nic, c.gid_index) : probe_netdev_nic(c.rails[my_slot].nic);
  const auto nics = gather_inventory(ctx, c, L, my_nic);
  bool blocking = false;
  auto inv = judge_inventory(c, L.node_names, nics, blocking);
  findings.insert(findings.end(), inv.begin(), inv.end());
  json inv_json = json::array();
  for (int n = 0; n < N; ++n)
    for (int s = 0; s < c.gpus_per_node; ++s)
      inv_json.push_back(json{{"node", L.node_names[n]}, {"slot", s}, {"rank", L.rank_of[n][s]}, {"nic", nics[n][s]}});
  results.set("inventory", inv_json);
  ctx.print(fmt::format("# phase 1 inventory: {} NICs read, {} finding(s){}", N * c.gpus_per_node, inv.size(),
                        blocking ? ": a NIC is missing or down, no traffic will run" : ""));

  std::vector<PairResult> rail_results, cross_results, retest_results;
  std::vector<std::vector<LinkStats>> stats(R, std::vector<LinkStats>(N));
  auto finish = [&](bool complete, const std::string& error) {
    sort_findings(findings);
    for (const auto& line : summary_lines(c, L.node_names, findings, stats)) ctx.print(line);
    results.set("findings", findings);
    const bool pass =
        std::none_of(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::fail; });
    results.set("verdict", pass ? "PASS" : "FAIL");
    results.finish(complete, error);
    if (!run.json_path.empty()) ctx.print(fmt::format("# results: {}", run.json_path));
    return pass ? 0 : 1;
  };
  if (blocking || run.inventory_only) return finish(true, "");

  // ---- traffic: one rail per rank, its slot's NIC ----
  ctx.set_rails(c.rails[my_slot].nic);
  ctx.open_transport();
  // The header was written before the transport existed; now it does.
  results.set("transport", ctx.results_header(json::object()).at("transport"));
  Transport& t = ctx.transport();
  const size_t buf = c.tests.bw_bytes;
  std::vector<std::byte> src(buf), dst(buf), tokens(64);
  auto src_mr = t.register_memory(src.data(), src.size(), MemoryKind::host);
  auto dst_mr = t.register_memory(dst.data(), dst.size(), MemoryKind::host);
  auto tok_mr = t.register_memory(tokens.data(), tokens.size(), MemoryKind::host);
  PairBuffers buffers{src_mr.get(), dst_mr.get(), tok_mr.get(), {}, {}};
  for (const auto& blob : ctx.bootstrap().all_gather_v(src_mr->remote_key().serialize()))
    buffers.peer_src.push_back(RemoteKey::deserialize(blob));
  for (const auto& blob : ctx.bootstrap().all_gather_v(dst_mr->remote_key().serialize()))
    buffers.peer_dst.push_back(RemoteKey::deserialize(blob));
  PairTest test(ctx.progress(), buffers, Verb::send, false);
  PairRunner runner(ctx, test, c);

  // ---- phase 2: rail checks ----
  const auto rounds = circle_schedule(N);
  for (size_t k = 0; k < rounds.size(); ++k) {
    ctx.progress_note(fmt::format("validate: rail checks, round {}/{}", k + 1, rounds.size()));
    const int partner = peer_in_round(rounds[k], my_node);
    const bool leader = my_node < partner;
    PairResult key{PairPhase::rail, std::min(my_node, partner), std::max(my_node, partner), my_slot, my_slot};
    auto got = runner.exchange(runner.run(key, partner >= 0 ? L.rank_of[partner][my_slot] : -1, leader));
    rail_results.insert(rail_results.end(), got.begin(), got.end());
    results.set("rail_pairs", rail_results);
  }
  stats = link_stats(c, N, rail_results);
  results.set("rails", rail_matrices(c, L.node_names, rail_results, stats));
  ctx.print(fmt::format("# phase 2 rail checks: {} rounds, {} pair tests, {} failed to complete", rounds.size(),
                        rail_results.size(),
                        std::count_if(rail_results.begin(), rail_results.end(), [](const auto& p) { return !p.ok; })));

  // ---- phase 3: cross-rail spot checks (through the spine) ----
  if (c.tests.cross_rail && R > 1) {
    const bool first = my_node % 2 == 0;
    const int partner = first ? my_node + 1 : my_node - 1;
    const int pslot = cross_partner_slot(my_slot, R, first);
    PairResult key = first ? PairResult{PairPhase::cross, my_node, partner, my_slot, pslot}
                           : PairResult{PairPhase::cross, partner, my_node, pslot, my_slot};
    cross_results = runner.exchange(runner.run(key, partner < N ? L.rank_of[partner][pslot] : -1, first));
    results.set("cross_rail_pairs", cross_results);
    ctx.print(fmt::format("# phase 3 cross-rail spot checks: {} pair tests", cross_results.size()));
  }

  // ---- phase 4: re-test suspects against a good partner ----
  const auto suspects = find_suspects(c, stats);
  const auto retests = plan_retests(suspects, stats);
  for (const auto& round : retests) {
    PairResult key;
    int peer = -1;
    bool leader = false;
    for (const auto& rt : round) {
      if (my_slot != rt.suspect.rail) continue;
      if (my_node == rt.suspect.node || my_node == rt.partner) {
        key = PairResult{PairPhase::retest, rt.suspect.node, rt.partner, my_slot, my_slot};
        leader = my_node == rt.suspect.node;
        peer = L.rank_of[leader ? rt.partner : rt.suspect.node][my_slot];
      }
    }
    auto got = runner.exchange(runner.run(key, peer, leader));
    retest_results.insert(retest_results.end(), got.begin(), got.end());
    results.set("retest_pairs", retest_results);
  }
  ctx.print(
      fmt::format("# phase 4 re-tests: {} suspect link(s), {} re-tested", suspects.size(), retest_results.size()));
  auto links = judge_links(c, L.node_names, stats, suspects, retest_results, cross_results);
  findings.insert(findings.end(), links.begin(), links.end());

  // ---- phase 5: collectives ----
  if (!c.tests.collectives) {
    ctx.print("# phase 5 collectives: off (tests.collectives false)");
  } else if (runner.any_broken()) {
    ctx.print("# phase 5 collectives: skipped, some pairs could not talk (they would only time out)");
    results.set("collectives", "skipped: unreachable pairs");
  } else {
    ctx.print(fmt::format("# phase 5 collectives over {} ranks:", ctx.size()));
    results.set("collectives", run_collectives(ctx, c, L, findings));
  }
  return finish(true, "");
}

}  // namespace railbench
