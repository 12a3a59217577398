#include "bench/validate/collectives.h"

#include <algorithm>

#include <fmt/format.h>

#include "bench/timing.h"
#include "collectives/allreduce.h"
#include "collectives/alltoall.h"

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
  // The allreduce command's own factory and timing (bench/timing.h), so validate's
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
