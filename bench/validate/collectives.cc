#include "bench/validate/collectives.h"

#include <algorithm>

#include <fmt/format.h>

#include "collectives/allreduce.h"
#include "collectives/alltoall.h"
#include "lib/clock.h"
#include "lib/stats.h"

namespace railbench {

using nlohmann::json;

namespace {

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

}  // namespace

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
      findings.push_back(
          {Severity::fail, FindingKind::collective, name, "did not complete: " + first, 0, need, "GB/s"});
      out.push_back(entry);
      break;  // the transport's state with the failed peer is gone: stop here
    }
    if (busbw < need) {
      const bool explained = std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
        return f.severity == Severity::fail && f.node >= 0 && f.rail >= 0;
      });
      findings.push_back({Severity::fail, FindingKind::collective, fmt::format("{} ({})", name, algo),
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

}  // namespace railbench
