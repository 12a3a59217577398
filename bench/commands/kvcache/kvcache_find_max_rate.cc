// kvcache --serve --find-max-rate over the ranks: the saturating capacity probe, then the
// probes of the search (kvserve_search.h), each an open-loop run judged by the serving rules.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/commands/kvcache/kvcache_bench.h"
#include "collectives/kvcache/routing.h"
#include "lib/core/sizes.h"

namespace railbench {

using nlohmann::json;

namespace {

// The search's curve as the results' "curve": a row per probe, in the order measured.
json curve_json(const std::vector<RatePoint>& curve) {
  json out = json::array();
  for (const RatePoint& p : curve)
    out.push_back(json{{"rate", p.rate},
                       {"arrival_rps", p.arrival},
                       {"carried_rps", p.carried},
                       {"p50_us", p.p50_us},
                       {"slo_us", p.slo_us},
                       {"requests", p.requests},
                       {"overload", p.overload},
                       {"met", p.met},
                       {"why", p.why}});
  return out;
}

// The wire's bound: the pool links in parallel (the smaller pool's ranks x rails) at the
// line rate, divided by one request's bytes. Written into `out`; returns the words the
// max-rate line ends with.
std::string analytical_capacity(const KvOptions& o, double line_rate_gbps, double max_rate, json& out) {
  const double links = static_cast<double>(std::min(o.prefill.size(), o.decode.size()) * static_cast<size_t>(o.rails));
  const double cap = links * line_rate_gbps * 1.25e8 / static_cast<double>(o.shape.request_bytes());
  out["analytical_capacity_rps"] = cap;
  out["fraction_of_capacity"] = max_rate / cap;
  return fmt::format("; analytical capacity {:.1f} req/s ({:.0f} link(s) x {} Gb/s / {} B), {:.2f} of it", cap, links,
                     line_rate_gbps, o.shape.request_bytes(), max_rate / cap);
}

}  // namespace

// --find-max-rate: the capacity first (a saturating closed-loop probe), then a bisection
// below it (kvserve_search.h); every probe is a results entry, so the curve is in the JSON
// and the CSV as it is measured. Every rank computes the same summaries from the gathered
// tallies, so all follow the same sequence of rates without another exchange.
void KvCacheBench::find_max_rate_run(ResultsRun& results, KvTransfer& transfer, const KvOptions& o, KvMode mode) {
  const size_t pairs = kv_pairs(o).size();
  const ProbePlan& plan = plan_.probe;
  json out{{"slo", plan_.slo.text},
           {"probe_warmup_s", plan.warmup_s},
           {"probe_duration_s", plan.duration_s},
           {"probe_requests", plan.requests}};
  if (plan.lengthened)
    ctx_.print(fmt::format("# find-max-rate: --probe-requests {} is fewer than {} needs: each probe judges {} or more",
                           opt_.probe_requests, plan_.slo.text, plan.requests));
  const double capacity = measure_capacity(transfer, o, mode, out);
  const int most = max_search_probes();
  ctx_.print(fmt::format(
      "# find-max-rate plan: {} probes at most, bisecting {:.1f}-{:.1f} req/s (capacity / 16 to capacity); each a "
      "{:.1f} s warm-up (not judged) and a judged window of at least {:.1f} s and {} requests: {:.1f} s at {:.1f} "
      "req/s, {:.1f} s at {:.1f} req/s, about {:.0f} s of arrivals in all",
      most, capacity / 16, capacity, plan.warmup_s, plan.duration_s, plan.requests, probe_seconds(capacity / 2, plan),
      capacity / 2, probe_seconds(capacity / 16, plan), capacity / 16, most * probe_seconds(capacity / 2, plan)));
  int probe = 0;
  const auto measure = [&](double rate) {
    const uint64_t seed = opt_.seed + static_cast<uint64_t>(probe);
    const size_t n = probe_arrivals(rate, opt_.burstiness, seed, plan, pairs);
    ServeSource source = serve_source(o, rate, seed, n);
    ctx_.print(fmt::format("# probe {}: {:.1f} req/s offered, {} requests ({:.1f} s warm-up, then judged)", ++probe,
                           rate, n, plan.warmup_s));
    serve_header();
    ServeTally tally(0, 0, 0);
    const KvRunResult run = serve_run(transfer, o, mode, source, false, ServeWindow{plan.warmup_s, -1}, tally);
    ServeSummary sum;
    json entry = serve_entry(o, mode, rate, run, tally, sum);
    const RunVerdict v = judge_run(sum, plan_.slo);
    entry["probe"] = probe;
    results.add(std::move(entry));
    RatePoint p{
        rate, sum.arrival_rps, sum.carried_rps, sum.total_us.p50, sum.slo_us, sum.requests, sum.overload, v.met, false,
        v.why};
    p.hopeless = !v.met && !sum.overload && sum.slo_judged && sum.slo_xfer_us > plan_.slo.limit_us;
    return p;
  };
  const MaxRateResult r = find_max_rate(capacity, measure);
  ctx_.print(fmt::format(
      "# find-max-rate {}: curve (offered req/s -> arrived / carried req/s, total p50 / p{} us, judged requests)",
      plan_.slo.text, plan_.slo.percentile));
  for (const RatePoint& p : r.curve)
    ctx_.print(fmt::format("#   {:>10.1f} -> {:>10.1f} / {:>10.1f}, {:>10.1f} / {:>10.1f}, {:>7} {}", p.rate, p.arrival,
                           p.carried, p.p50_us, p.slo_us, p.requests, p.met ? "met" : "missed: " + p.why));
  const double share = capacity > 0 ? r.max_rate / capacity : 0;
  out["max_rate"] = r.max_rate;
  out["capacity_share"] = share;
  out["curve"] = curve_json(r.curve);
  const std::string analytical =
      opt_.line_rate_gbps > 0 ? analytical_capacity(o, opt_.line_rate_gbps, r.max_rate, out) : "";
  results.set("max_rate", out);
  if (r.max_rate == 0 && !r.curve.empty() && r.curve.back().hopeless)
    ctx_.print(fmt::format("# the transfer alone takes longer than {} at {:.1f} req/s: lower rates are not searched",
                           plan_.slo.text, r.curve.back().rate));
  else if (r.max_rate == 0 && !r.curve.empty())
    ctx_.print(fmt::format("# no rate from {:.1f} req/s (capacity / 16) up meets {}: lower rates are not searched",
                           r.floor_rate, plan_.slo.text));
  ctx_.print(fmt::format("# max rate meeting {}: {:.1f} req/s, {:.2f} of the measured capacity {:.1f} req/s{}",
                         plan_.slo.text, r.max_rate, share, capacity, analytical));
}

// The saturating probe: open loop, as the probes run, with every request arriving at once,
// so every slot of every pair stays busy: the acks after the warm-up per second are the
// most the system carries (at saturation the queue never empties, as at any rate above
// it). Not a closed loop: that never waits for an arrival (nor for prefill compute), and
// on a host whose cores are busy it carries several times what the open loop does. Sized
// by shorter runs of the same kind, each scaled up until one outlasts the warm-up and the
// window; the requests are held as they arrive, so a run is capped at 250,000 a pair.
double KvCacheBench::measure_capacity(KvTransfer& transfer, const KvOptions& o, KvMode mode, json& out) {
  Bootstrap& b = ctx_.bootstrap();
  const size_t pairs = kv_pairs(o).size(), most = 250000 * pairs;
  const ProbePlan& plan = plan_.probe;
  const double need_s = plan.warmup_s + plan.duration_s;
  size_t n = static_cast<size_t>(std::max(16, 4 * o.concurrency)) * pairs;
  double capacity = 0, wall = 0;
  int runs = 0;
  for (;; ++runs) {
    ServeSource source = serve_source(o, 1e9, opt_.seed, n);
    ServeTally tally(0, 0, 0);
    const KvRunResult run = serve_run(transfer, o, mode, source, false, ServeWindow{plan.warmup_s, 1e300}, tally);
    uint64_t acked = 0;
    for (uint64_t a : b.all_gather_value<uint64_t>(tally.all.acked_in_window)) acked += a;
    const auto walls = b.all_gather_value<double>(run.wall_s);
    wall = *std::max_element(walls.begin(), walls.end());
    if (wall >= need_s) {
      capacity = static_cast<double>(acked) / (wall - plan.warmup_s);
      break;
    }
    if (n >= most) {  // all it may hold drained before the window's end: judged over the whole run
      capacity = wall > 0 ? static_cast<double>(n) / wall : 0;
      break;
    }
    const double grow = std::clamp(1.2 * need_s / std::max(wall, 1e-4), 2.0, 64.0);
    n = std::min(most, (static_cast<size_t>(static_cast<double>(n) * grow) + pairs - 1) / pairs * pairs);
  }
  ctx_.print(fmt::format(
      "# capacity (open loop at saturation: {} requests arriving at once, {} in flight per pair; acks after the "
      "{:.1f} s warm-up): {:.1f} req/s ({:.3f} GB/s) over {:.3f} s, after {} shorter run(s) to size it",
      n, o.concurrency, plan.warmup_s, capacity, capacity * static_cast<double>(o.shape.request_bytes()) / 1e9,
      wall - plan.warmup_s, runs));
  out["capacity_rps"] = capacity;
  out["capacity_probe"] =
      json{{"requests", n}, {"wall_s", wall}, {"window_s", wall - plan.warmup_s}, {"concurrency", o.concurrency}};
  return capacity;
}

}  // namespace railbench
