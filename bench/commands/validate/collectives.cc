#include "bench/commands/validate/collectives.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "bench/runner/timing.h"
#include "collectives/allreduce.h"
#include "collectives/alltoall.h"
#include "collectives/group_ops.h"
#include "lib/core/clock.h"
#include "lib/core/stats.h"

namespace railbench {

using nlohmann::json;

json run_collectives(RunContext& ctx, const SuConfig& c, const SuLayout& L, std::vector<Finding>& findings) {
  const int n = ctx.size();
  const uint64_t bytes = c.tests.collective_bytes / (4ULL * n) * 4 * n;  // whole f32 blocks per rank
  double slowest = line_gbytes(c.rails.front());
  for (const auto& r : c.rails) slowest = std::min(slowest, line_gbytes(r));
  std::vector<float> send(bytes / 4, 1.0f), recv(bytes / 4, 0.0f);
  auto send_mr = ctx.transport().register_memory(send.data(), bytes, MemoryKind::host);
  auto recv_mr = ctx.transport().register_memory(recv.data(), bytes, MemoryKind::host);
  CollectiveBuffers bufs{send_mr.get(), 0, recv_mr.get(), 0};
  // The allreduce command's own factory and timing (bench/runner/timing.h), so validate's
  // figure is the one `railbench allreduce` would print at this size.
  const AllReduceSetup setup{RingOptions{bytes, 16 << 20, 1, RingProtocol::send}, NodeLayout{L.node_of}};
  json out = json::array();
  struct Spec {
    const char* name;
    Pattern pattern;
    double need_fraction;
  };
  const std::vector<Spec> specs{{"allreduce", Pattern::all_reduce, c.thresholds.allreduce_busbw_min_fraction},
                                {"alltoall", Pattern::all_to_all, c.thresholds.alltoall_busbw_min_fraction}};
  for (const auto& spec : specs) {
    const std::string name = spec.name;
    std::string error;
    CollectiveSide side;
    std::string algo = "pairwise";
    ctx.counters_begin();
    try {
      std::vector<double> times;
      if (spec.pattern == Pattern::all_reduce) {
        auto ar = make_allreduce(AllReduceAlgo::automatic, ctx.progress(), setup);
        algo = ar->algo_for(bytes);
        times = time_iterations(ctx, 1, c.tests.collective_iters,
                                [&] { ar->run(bufs, bytes / 4, DataType::f32, ReduceOp::sum); });
      } else {
        AllToAll a2a(ctx.progress(), AllToAllOptions{bytes, 1, 4});
        times = time_iterations(ctx, 1, c.tests.collective_iters, [&] { a2a.run(bufs, bytes / 4 / n, DataType::f32); });
      }
      side = collective_side(times, bytes, spec.pattern, n);
    } catch (const Error& e) {
      error = e.what();
    }
    // A rank that failed has left the collective; the others time out on it. Agree on
    // the outcome, keeping the first failure's words.
    std::string first;
    for (const auto& e : ctx.bootstrap().all_gather_strings(error))
      if (first.empty() && !e.empty()) first = e;
    json counters = ctx.counters_end();  // every rank is here, whatever happened
    const double us = first.empty() ? side.time_us : 0;
    const double busbw = first.empty() ? side.busbw : 0;
    const double need = spec.need_fraction * slowest;
    json entry{{"collective", name}, {"algo", algo},       {"bytes", bytes},        {"ranks", n},
               {"time_us", us},      {"busbw_gbs", busbw}, {"need_busbw_gbs", need}};
    if (!counters.is_null()) entry["counters"] = std::move(counters);
    if (!first.empty()) {
      entry["error"] = first;
      findings.push_back(
          coded({Severity::fail, FindingKind::collective, name, "did not complete: " + first, 0, need, "GB/s"},
                reason::kCollectiveIncomplete));
      out.push_back(entry);
      break;  // the transport's state with the failed peer is gone: stop here
    }
    if (busbw < need) {
      const bool explained = std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
        return f.severity == Severity::fail && f.node >= 0 && f.rail >= 0;
      });
      findings.push_back(
          coded({Severity::fail, FindingKind::collective, fmt::format("{} ({})", name, algo),
                 fmt::format("busbw {:.3f} GB/s < {:.0f}% of the slowest rail's line rate {:.3f} GB/s{}", busbw,
                             spec.need_fraction * 100, slowest,
                             explained ? " (a collective runs at its slowest link: see the links above)" : ""),
                 busbw, need, "GB/s"},
                reason::kCollectiveBusbwLow));
    }
    ctx.print(fmt::format("#   {:<10} {:<9} {:>10} B  {:>10.1f} us  busbw {:>8.3f} GB/s (need {:.3f})  {}", name, algo,
                          bytes, us, busbw, need, busbw < need ? "FAIL" : "PASS"));
    out.push_back(entry);
  }
  return out;
}

namespace {

// One tenant's all-reduce over its own ranks, on every rank of the run: the tenant's
// ranks run it (`iters` timed), the others do nothing or, with `aggressor_iters`, run
// their own tenant's that many times at once. All ranks meet at the bootstrap's barrier
// before, so the loads start together.
struct TenantRun {
  std::vector<double> iter_us;  // per timed iteration, the slowest of the tenant's ranks
  double end_s = 0;             // when the tenant's last rank finished, after the barrier
  double aggressors_end_s = 0;  // when the first aggressor rank finished (0: none ran)
  std::string error;
};

class TenantAllReduce {
 public:
  TenantAllReduce(RunContext& ctx, const SuConfig& c, const SuLayout& L, const TenantMap& tenants)
      : ctx_(ctx), mine_(tenants.of_node.at(L.node_of[ctx.rank()])) {
    for (int r = 0; r < ctx.size(); ++r) {
      const int t = tenants.of_node.at(L.node_of[r]);
      rank_tenant_.push_back(t);
      if (t == mine_) {
        if (r == ctx.rank()) group_.me = group_.size();
        group_.ranks.push_back(r);
      }
    }
    // Whole f32 blocks per rank of the largest tenant: every tenant moves the same bytes.
    int largest = 0;
    for (const auto& m : tenants.members) largest = std::max(largest, static_cast<int>(m.size()) * c.gpus_per_node);
    bytes_ = std::max<uint64_t>(c.tests.collective_bytes / (4ULL * largest) * 4 * largest, 4ULL * largest);
    send_.assign(bytes_ / 4, 1.0f);
    recv_.assign(bytes_ / 4, 0.0f);
    scratch_.assign(bytes_ / 4, 0.0f);
    send_mr_ = ctx.transport().register_memory(send_.data(), bytes_, MemoryKind::host);
    recv_mr_ = ctx.transport().register_memory(recv_.data(), bytes_, MemoryKind::host);
    scratch_mr_ = ctx.transport().register_memory(scratch_.data(), bytes_, MemoryKind::host);
  }

  uint64_t bytes() const { return bytes_; }
  int ranks_of(int tenant) const {
    return static_cast<int>(std::count(rank_tenant_.begin(), rank_tenant_.end(), tenant));
  }

  // Tenant `victim` runs 1 + iters; tenant u != victim runs aggressor_iters[u] (0: idle).
  TenantRun run(int victim, int iters, const std::vector<int>& aggressor_iters) {
    std::vector<double> local;
    std::string error;
    double end_s = 0;
    ctx_.bootstrap().barrier();
    const auto start = Clock::now();
    try {
      const int n = mine_ == victim ? 1 + iters : aggressor_iters.at(mine_);
      auto prev = Clock::now();
      for (int i = 0; i < n; ++i) {
        once();
        const auto now = Clock::now();
        if (mine_ == victim && i > 0) local.push_back(seconds_between(prev, now) * 1e6);
        prev = now;
      }
      end_s = seconds_between(start, Clock::now());
    } catch (const Error& e) {
      error = e.what();
    }
    // Every rank takes part: the figures of every tenant, and the first error anywhere.
    const auto times = ctx_.bootstrap().all_gather_vectors(local);
    const auto ends = ctx_.bootstrap().all_gather_value(end_s);
    TenantRun out;
    for (const auto& e : ctx_.bootstrap().all_gather_strings(error))
      if (out.error.empty() && !e.empty()) out.error = e;
    std::vector<std::vector<double>> victims;
    out.aggressors_end_s = 0;
    bool first_aggressor = true;
    for (int r = 0; r < ctx_.size(); ++r) {
      if (rank_tenant_[r] == victim) {
        victims.push_back(times[r]);
        out.end_s = std::max(out.end_s, ends[r]);
      } else if (aggressor_iters.at(rank_tenant_[r]) > 0) {
        out.aggressors_end_s = first_aggressor ? ends[r] : std::min(out.aggressors_end_s, ends[r]);
        first_aggressor = false;
      }
    }
    if (out.error.empty()) out.iter_us = max_over_ranks(victims);
    return out;
  }

 private:
  void once() {
    std::memcpy(recv_.data(), send_.data(), bytes_);
    rhd_allreduce(ctx_.progress(), group_, 1, Vec{recv_mr_.get(), 0, bytes_ / 4}, DataType::f32, ReduceOp::sum,
                  scratch_mr_.get());
  }

  RunContext& ctx_;
  int mine_;
  std::vector<int> rank_tenant_;
  Group group_;
  uint64_t bytes_ = 0;
  std::vector<float> send_, recv_, scratch_;
  std::unique_ptr<MemoryRegion> send_mr_, recv_mr_, scratch_mr_;
};

// What the two rounds of phase 5 share: the all-reduce, its threshold and the tenants.
struct TenantRounds {
  RunContext& ctx;
  const SuConfig& c;
  const TenantMap& tenants;
  TenantAllReduce& ar;
  double need = 0;     // GB/s of busbw a tenant's all-reduce alone must reach
  double slowest = 0;  // GB/s: the slowest rail's line rate
};

// Each tenant's all-reduce alone; its time alone in `alone_us`. False when one did not
// complete: the transport's state with the failed peer is gone, so nothing more runs.
bool tenants_alone(const TenantRounds& k, std::vector<double>& alone_us, std::vector<Finding>& findings, json& out) {
  const int T = static_cast<int>(k.tenants.names.size());
  const std::vector<int> idle(T, 0);
  for (int t = 0; t < T; ++t) {
    const int n = k.ar.ranks_of(t);
    const TenantRun run = k.ar.run(t, k.c.tests.collective_iters, idle);
    json entry{{"tenant", k.tenants.names[t]},
               {"collective", "allreduce"},
               {"algo", "rhd"},
               {"bytes", k.ar.bytes()},
               {"ranks", n},
               {"need_busbw_gbs", k.need}};
    if (!run.error.empty()) {
      entry["error"] = run.error;
      findings.push_back(
          coded({Severity::fail, FindingKind::collective, fmt::format("allreduce (tenant {})", k.tenants.names[t]),
                 "did not complete: " + run.error, 0, k.need, "GB/s"},
                reason::kCollectiveIncomplete));
      out.push_back(entry);
      k.ctx.print(fmt::format("#   tenant {:<8} did not complete: {}", k.tenants.names[t], run.error));
      return false;
    }
    const CollectiveSide side = collective_side(run.iter_us, k.ar.bytes(), Pattern::all_reduce, n);
    alone_us[t] = side.time_us;
    entry["time_us"] = side.time_us;
    entry["busbw_gbs"] = side.busbw;
    if (side.busbw < k.need) {
      findings.push_back(
          coded({Severity::fail, FindingKind::collective, fmt::format("allreduce (tenant {})", k.tenants.names[t]),
                 fmt::format("busbw {:.3f} GB/s < {:.0f}% of the slowest rail's line rate {:.3f} GB/s", side.busbw,
                             k.c.thresholds.allreduce_busbw_min_fraction * 100, k.slowest),
                 side.busbw, k.need, "GB/s"},
                reason::kCollectiveBusbwLow));
    }
    k.ctx.print(fmt::format("#   tenant {:<8} {:>3} ranks alone    {:>10.1f} us  busbw {:>8.3f} GB/s (need {:.3f})  {}",
                            k.tenants.names[t], n, side.time_us, side.busbw, k.need,
                            side.busbw < k.need ? "FAIL" : "PASS"));
    out.push_back(entry);
  }
  return true;
}

// Each tenant's all-reduce again while the others run theirs; its busbw against its own
// alone. False when one did not complete (as tenants_alone).
bool tenants_loaded(const TenantRounds& k, const std::vector<double>& alone_us,
                    std::vector<TenantInterference>& interference, std::vector<Finding>& findings, json& out) {
  const int T = static_cast<int>(k.tenants.names.size());
  const int iters = k.c.tests.collective_iters;
  for (int t = 0; t < T; ++t) {
    // The others run theirs for about 3x the victim's time alone plus 0.5 s, in whole
    // iterations each tenant counts for itself from its own time alone.
    const double span_us = 3 * alone_us[t] * (1 + iters) + 5e5;
    std::vector<int> aggressors(T, 0);
    for (int u = 0; u < T; ++u)
      if (u != t) aggressors[u] = static_cast<int>(std::clamp(std::ceil(span_us / alone_us[u]), 1.0, 100000.0));
    const TenantRun run = k.ar.run(t, iters, aggressors);
    const int n = k.ar.ranks_of(t);
    if (!run.error.empty()) {
      findings.push_back(coded({Severity::fail, FindingKind::collective,
                                fmt::format("allreduce (tenant {}, others loaded)", k.tenants.names[t]),
                                "did not complete: " + run.error, 0, k.need, "GB/s"},
                               reason::kCollectiveIncomplete));
      k.ctx.print(
          fmt::format("#   tenant {:<8} under the others' load did not complete: {}", k.tenants.names[t], run.error));
      out.push_back(json{{"tenant", k.tenants.names[t]}, {"loaded", true}, {"error", run.error}});
      return false;
    }
    const CollectiveSide side = collective_side(run.iter_us, k.ar.bytes(), Pattern::all_reduce, n);
    const double alone =
        gbps(static_cast<double>(k.ar.bytes()), alone_us[t] * 1e-6) * bus_factor(Pattern::all_reduce, n);
    TenantInterference ti{t, alone, side.busbw, run.aggressors_end_s >= run.end_s};
    interference.push_back(ti);
    const double ratio = alone > 0 ? side.busbw / alone : 0;
    const double need_ratio = k.c.thresholds.tenant_busbw_min_ratio;
    k.ctx.print(fmt::format(
        "#   tenant {:<8} {:>3} ranks loaded   {:>10.1f} us  busbw {:>8.3f} GB/s = {:.2f}x alone "
        "(need {:.2f}x){}  {}",
        k.tenants.names[t], n, side.time_us, side.busbw, ratio, need_ratio,
        ti.aggressors_outlasted ? "" : " (the others finished first)", ratio < need_ratio ? "FAIL" : "PASS"));
    out.push_back(json{{"tenant", k.tenants.names[t]},
                       {"loaded", true},
                       {"collective", "allreduce"},
                       {"algo", "rhd"},
                       {"bytes", k.ar.bytes()},
                       {"ranks", n},
                       {"time_us", side.time_us},
                       {"busbw_gbs", side.busbw},
                       {"alone_busbw_gbs", alone},
                       {"ratio", ratio},
                       {"need_ratio", need_ratio},
                       {"aggressor_iters", aggressors},
                       {"aggressors_outlasted", ti.aggressors_outlasted}});
  }
  return true;
}

}  // namespace

json run_tenant_collectives(RunContext& ctx, const SuConfig& c, const SuLayout& L, const TenantMap& tenants,
                            std::vector<Finding>& findings) {
  double slowest = line_gbytes(c.rails.front());
  for (const auto& r : c.rails) slowest = std::min(slowest, line_gbytes(r));
  TenantAllReduce ar(ctx, c, L, tenants);
  const TenantRounds k{ctx, c, tenants, ar, c.thresholds.allreduce_busbw_min_fraction * slowest, slowest};
  ctx.print(fmt::format("# phase 5 collectives per tenant: all-reduce (rhd) of {} B over each tenant's own ranks{}",
                        ar.bytes(), c.tests.interference ? ", alone, then while the other tenants run theirs" : ""));
  json out = json::array();
  std::vector<double> alone_us(tenants.names.size(), 0);
  if (!tenants_alone(k, alone_us, findings, out) || !c.tests.interference) return out;
  std::vector<TenantInterference> interference;
  if (!tenants_loaded(k, alone_us, interference, findings, out)) return out;
  auto found = judge_interference(c, tenants, interference);
  findings.insert(findings.end(), found.begin(), found.end());
  return out;
}

}  // namespace railbench
