// railbench validate: acceptance test of a scalable unit against its config. Phases:
// inventory (no traffic), rail checks (every node pair on every rail, all rails at
// once), cross-rail spot checks, re-tests of suspects against a good partner,
// collectives over all ranks, then the verdict. Every phase's results go to the JSON
// file as soon as they exist, and a pair that stops answering is a finding, not a hang.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "bench/commands.h"
#include "bench/pair_test.h"
#include "bench/run_context.h"
#include "bench/validate_plan.h"
#include "bench/validate_report.h"
#include "bench/validate_verdict.h"
#include "collectives/allreduce.h"
#include "collectives/alltoall.h"
#include "lib/inventory.h"
#include "lib/results.h"
#include "lib/su_config.h"

namespace railbench {

using nlohmann::json;

namespace {

// Which rank is which GPU slot of which node: ranks sharing a host name are a node,
// in rank order their slots 0..gpus_per_node-1 (what --map-by ppr:G:node gives).
struct SuLayout {
  std::vector<std::string> node_names;    // the run's nodes, in config order
  std::vector<std::vector<int>> rank_of;  // [node][slot]
  std::vector<int> node_of, slot_of;      // per rank
  std::vector<std::string> missing;       // config nodes not in this run
};

std::string short_host(const std::string& h) {
  return h.substr(0, h.find('.'));
}

SuLayout map_ranks(const SuConfig& c, const std::vector<std::string>& hosts) {
  std::map<std::string, std::vector<int>> by_host;
  for (size_t r = 0; r < hosts.size(); ++r) {
    const std::string h = short_host(hosts[r]);
    if (std::find(c.nodes.begin(), c.nodes.end(), h) == c.nodes.end()) {
      throw UsageError(
          fmt::format("rank {} runs on host '{}', which is not among the config's nodes ({}): fix "
                      "\"nodes\" in {} or the hostfile",
                      r, h, c.nodes_expr, c.path));
    }
    by_host[h].push_back(static_cast<int>(r));
  }
  SuLayout L;
  L.node_of.resize(hosts.size());
  L.slot_of.resize(hosts.size());
  for (const auto& name : c.nodes) {
    auto it = by_host.find(name);
    if (it == by_host.end()) {
      L.missing.push_back(name);
      continue;
    }
    if (static_cast<int>(it->second.size()) != c.gpus_per_node) {
      throw UsageError(
          fmt::format("node {} has {} ranks but the config has {} GPUs per node: launch one rank per GPU, "
                      "e.g. mpirun -np {} --map-by ppr:{}:node",
                      name, it->second.size(), c.gpus_per_node, by_host.size() * c.gpus_per_node, c.gpus_per_node));
    }
    const int node = static_cast<int>(L.node_names.size());
    L.node_names.push_back(name);
    L.rank_of.push_back(it->second);
    for (int s = 0; s < c.gpus_per_node; ++s) {
      L.node_of[it->second[s]] = node;
      L.slot_of[it->second[s]] = s;
    }
  }
  if (L.node_names.size() < 2) {
    throw UsageError(
        fmt::format("validate needs ranks on at least 2 nodes of the SU to measure links, got {}: "
                    "launch across nodes with a hostfile",
                    L.node_names.size()));
  }
  return L;
}

// One pair test, this rank's side. The leader (side a) keeps the latency, a->b and both
// ways; side b keeps b->a. A pair that fails its deadline is abandoned, not retried.
class PairRunner {
 public:
  PairRunner(RunContext& ctx, PairTest& test, const SuConfig& c) : ctx_(ctx), test_(test), c_(c) {}

  // Every rank calls it once per round (`peer` < 0: this rank rests), since the
  // latency ping-pongs of all pairs finish before any bandwidth test starts: latency
  // is measured on quiet links, as perftest measures it, and the same in every round.
  std::optional<json> run(PairResult key, int peer, bool leader) {
    const SuTests& t = c_.tests;
    PairResult& r = key;
    const int a = leader ? ctx_.rank() : peer;
    const int b = leader ? peer : ctx_.rank();
    bool skip = peer < 0;
    if (!skip && broken_.count({std::min(a, b), std::max(a, b)})) {
      r.ok = false;
      r.error = "not run: this pair already failed";
      skip = true;
    }
    auto guarded = [&](auto&& step) {
      if (skip || !r.ok) return;
      try {
        step();
      } catch (const Error& e) {
        r.ok = false;
        r.error = e.what();
        ctx_.progress().abandon_peer(peer);
      }
    };
    guarded([&] {
      auto lat = test_.latency(peer, 0, t.lat_bytes, std::min(100, t.lat_iters), t.lat_iters, leader);
      if (leader) {
        const Summary s = summarize(lat);
        r.lat_p50 = s.p50, r.lat_p99 = s.p99, r.lat_p999 = s.p999;
      }
    });
    ctx_.bootstrap().barrier();
    guarded([&] {
      const uint32_t seed = static_cast<uint32_t>(key.node_a * 131 + key.node_b);
      auto ab = test_.stream(peer, 0, t.bw_bytes, t.bw_window, 1, t.bw_iters, a, seed, nullptr);
      if (!ab.empty()) r.bw_ab = summarize(ab).p50;
      auto ba = test_.stream(peer, 0, t.bw_bytes, t.bw_window, 1, t.bw_iters, b, seed + 1, nullptr);
      if (!ba.empty()) r.bw_ba = summarize(ba).p50;
      auto bi = test_.bidirectional(peer, 0, t.bw_bytes, t.bw_window, 1, t.bw_iters);
      if (leader) r.bidir = summarize(bi).p50;
    });
    if (peer < 0) return std::nullopt;
    return side_json(r, leader, peer);
  }

  // Every rank's side of a round, merged into one result per pair; every rank gets
  // all of them (the verdict is computed everywhere alike).
  std::vector<PairResult> exchange(const std::optional<json>& mine) {
    std::map<std::tuple<std::string, int, int, int, int>, PairResult> merged;
    for (const auto& text : ctx_.bootstrap().all_gather_strings(mine ? mine->dump() : "null")) {
      const json j = json::parse(text);
      if (j.is_null()) continue;
      PairResult side = j.at("result").get<PairResult>();
      auto [it, fresh] = merged.try_emplace({side.phase, side.node_a, side.node_b, side.rail_a, side.rail_b}, side);
      PairResult& m = it->second;
      if (!fresh) {
        if (j.at("leader")) {
          m.lat_p50 = side.lat_p50, m.lat_p99 = side.lat_p99, m.lat_p999 = side.lat_p999;
          m.bw_ab = side.bw_ab, m.bidir = side.bidir;
        } else {
          m.bw_ba = side.bw_ba;
        }
        if (!side.ok && m.ok) m.ok = false, m.error = side.error;
      }
      if (!m.ok)
        broken_.insert({std::min(j.at("rank_a").get<int>(), j.at("rank_b").get<int>()),
                        std::max(j.at("rank_a").get<int>(), j.at("rank_b").get<int>())});
    }
    std::vector<PairResult> out;
    for (auto& [k, v] : merged) out.push_back(v);
    return out;
  }

  bool any_broken() const { return !broken_.empty(); }

 private:
  json side_json(const PairResult& r, bool leader, int peer) const {
    return json{{"result", r}, {"leader", leader}, {"rank_a", ctx_.rank()}, {"rank_b", peer}};
  }

  RunContext& ctx_;
  PairTest& test_;
  const SuConfig& c_;
  std::set<std::pair<int, int>> broken_;  // rank pairs that failed: never tested again
};

// Iteration times (max over ranks) of a collective; throws on a failure anywhere.
template <class Fn>
double median_iteration_us(RunContext& ctx, int iters, Fn&& once) {
  once();  // warm-up
  std::vector<double> mine;
  for (int i = 0; i < iters; ++i) {
    ctx.bootstrap().barrier();
    const auto t0 = Clock::now();
    once();
    mine.push_back(seconds_between(t0, Clock::now()) * 1e6);
  }
  std::vector<std::vector<double>> all;
  for (const auto& s : ctx.bootstrap().all_gather_strings(json(mine).dump()))
    all.push_back(json::parse(s).get<std::vector<double>>());
  auto times = max_over_ranks(all);
  return summarize(times).p50;
}

// All-reduce and all-to-all over every rank; findings when busbw is below threshold
// or the collective failed (the error names the peer that stopped answering).
json run_collectives(RunContext& ctx, const SuConfig& c, const SuLayout& L, std::vector<Finding>& findings) {
  const int n = ctx.size();
  const uint64_t bytes = c.tests.collective_bytes / (4ULL * n) * 4 * n;  // whole f32 blocks per rank
  double slowest = line_gbytes(c.rails.front());
  for (const auto& r : c.rails) slowest = std::min(slowest, line_gbytes(r));
  std::vector<float> send(bytes / 4, 1.0f), recv(bytes / 4, 0.0f);
  auto send_mr = ctx.transport().register_memory(send.data(), bytes, MemoryKind::host);
  auto recv_mr = ctx.transport().register_memory(recv.data(), bytes, MemoryKind::host);
  CollectiveBuffers bufs{send_mr.get(), 0, recv_mr.get(), 0};
  NodeLayout layout{L.node_of};
  json out = json::array();
  struct Spec {
    const char* name;
    double factor;
    double need_fraction;
  };
  const std::vector<Spec> specs{{"allreduce", 2.0 * (n - 1) / n, c.thresholds.allreduce_busbw_min_fraction},
                                {"alltoall", 1.0 * (n - 1) / n, c.thresholds.alltoall_busbw_min_fraction}};
  for (const auto& spec : specs) {
    const std::string name = spec.name;
    std::string error;
    double us = 0;
    std::string algo =
        name == "alltoall" ? "pairwise" : choose_allreduce(bytes, n, static_cast<int>(L.node_names.size()), true);
    try {
      if (name == "allreduce") {
        std::unique_ptr<AllReduce> ar;
        if (algo == "hier")
          ar = make_hier_allreduce(ctx.progress(), bytes, 1, layout);
        else if (algo == "rhd")
          ar = make_rhd_allreduce(ctx.progress(), bytes, 1);
        else
          ar = make_ring_allreduce(ctx.progress(), RingOptions{bytes, 16 << 20, 1, RingProtocol::send});
        us = median_iteration_us(ctx, c.tests.collective_iters,
                                 [&] { ar->run(bufs, bytes / 4, DataType::f32, ReduceOp::sum); });
      } else {
        AllToAll a2a(ctx.progress(), AllToAllOptions{bytes, 1, 4});
        us = median_iteration_us(ctx, c.tests.collective_iters, [&] { a2a.run(bufs, bytes / 4 / n, DataType::f32); });
      }
    } catch (const Error& e) {
      error = e.what();
    }
    // A rank that failed has left the collective; the others time out on it. Agree on
    // the outcome, keeping the first failure's words.
    std::string first;
    for (const auto& e : ctx.bootstrap().all_gather_strings(error))
      if (first.empty() && !e.empty()) first = e;
    const double busbw = first.empty() && us > 0 ? bytes / (us * 1e-6) / 1e9 * spec.factor : 0;
    const double need = spec.need_fraction * slowest;
    json entry{{"collective", name}, {"algo", algo},       {"bytes", bytes},        {"ranks", n},
               {"time_us", us},      {"busbw_gbs", busbw}, {"need_busbw_gbs", need}};
    if (!first.empty()) {
      entry["error"] = first;
      findings.push_back({"FAIL", "collective", name, "did not complete: " + first, 0, need, "GB/s"});
      out.push_back(entry);
      break;  // the transport's state with the failed peer is gone: stop here
    }
    if (busbw < need) {
      const bool explained = std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
        return f.severity == "FAIL" && f.node >= 0 && f.rail >= 0;
      });
      findings.push_back({"FAIL", "collective", fmt::format("{} ({})", name, algo),
                          fmt::format("busbw {:.3f} GB/s < {:.0f}% of the slowest rail's line rate {:.3f} GB/s{}",
                                      busbw, spec.need_fraction * 100, slowest,
                                      explained ? " (a collective runs at its slowest link: see the links above)" : ""),
                          busbw, need, "GB/s"});
    }
    ctx.print(fmt::format("#   {:<10} {:<9} {:>10} B  {:>10.1f} us  busbw {:>8.3f} GB/s (need {:.3f})  {}", name, algo,
                          bytes, us, busbw, need, busbw < need ? "FAIL" : "PASS"));
    out.push_back(entry);
  }
  return out;
}

std::vector<std::vector<NicReport>> gather_inventory(RunContext& ctx, const SuConfig& c, const SuLayout& L,
                                                     const NicReport& mine) {
  std::vector<std::vector<NicReport>> out(L.node_names.size(), std::vector<NicReport>(c.gpus_per_node));
  const auto all = ctx.bootstrap().all_gather_strings(json(mine).dump());
  for (int r = 0; r < ctx.size(); ++r) out[L.node_of[r]][L.slot_of[r]] = json::parse(all[r]).get<NicReport>();
  return out;
}

int validate_phases(RunContext& ctx, const SuConfig& c, const SuLayout& L, const CommonOptions& common,
                    const ValidateOptions& opt, ResultsFile& results);

}  // namespace

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
    const auto errors = bootstrap.all_gather_strings(error);
    for (const auto& e : errors)
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
    return validate_phases(ctx, c, L, common, opt, results);
  } catch (const Error& e) {
    results.finish(false, e.what());  // what was measured stays in the file
    throw;
  }
}

namespace {

int validate_phases(RunContext& ctx, const SuConfig& c, const SuLayout& L, const CommonOptions& common,
                    const ValidateOptions& opt, ResultsFile& results) {
  const int my_node = L.node_of[ctx.rank()], my_slot = L.slot_of[ctx.rank()];
  const int N = static_cast<int>(L.node_names.size()), R = c.num_rails();
  std::vector<Finding> findings;
  for (const auto& m : L.missing) {
    findings.push_back(
        {"FAIL", "inventory", m, "in the config but not part of this run (no rank ran there)", 0, 1, ""});
  }
  ctx.print(fmt::format("# railbench validate: {} ({}), {} of {} nodes x {} GPUs, {} rails, transport {}", c.name,
                        c.path, N, c.nodes.size(), c.gpus_per_node, R, common.transport));

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
        std::none_of(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == "FAIL"; });
    results.set("verdict", pass ? "PASS" : "FAIL");
    results.finish(complete, error);
    if (!common.json_path.empty()) ctx.print(fmt::format("# results: {}", common.json_path));
    return pass ? 0 : 1;
  };
  if (blocking || opt.inventory_only) return finish(true, "");

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
    PairResult key{"rail", std::min(my_node, partner), std::max(my_node, partner), my_slot, my_slot};
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
    PairResult key = first ? PairResult{"cross", my_node, partner, my_slot, pslot}
                           : PairResult{"cross", partner, my_node, pslot, my_slot};
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
        key = PairResult{"retest", rt.suspect.node, rt.partner, my_slot, my_slot};
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

}  // namespace
}  // namespace railbench
