// kvcache --serve: one open-loop run (requests on their own clock), its summary and
// verdicts, per decode rank, per rail and the routing, as lines and a results entry.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/commands/kvcache/kvcache_bench.h"
#include "collectives/kvcache/routing.h"
#include "lib/core/sizes.h"

namespace railbench {

using nlohmann::json;

// --serve: one open-loop run in the first --mode after a closed-loop warm-up; every
// prefill rank's tally (fixed-size histograms, not records) is gathered and merged, so
// what the ranks exchange does not grow with the requests.
json KvCacheBench::serve_entry(const KvOptions& o, KvMode mode, double asked_rps, const KvRunResult& run,
                               const ServeTally& mine, ServeSummary& summary) {
  Bootstrap& b = ctx_.bootstrap();
  ServeTally tally(mine.per_decode.size(), mine.per_rail.size(), mine.slo_limit_us, mine.window);
  for (const auto& words : b.all_gather_vectors(mine.words())) tally.merge_words(words);
  const auto walls = b.all_gather_value<double>(run.wall_s);
  const double wall = *std::max_element(walls.begin(), walls.end());
  double mean_bytes = static_cast<double>(o.shape.request_bytes());
  const json sizes = request_sizes(o, mean_bytes);
  const auto bytes = static_cast<uint64_t>(std::llround(mean_bytes));
  const ServeSummary s = summarize_serve(tally, asked_rps, bytes, plan_.has_slo ? &plan_.slo : nullptr);
  json entry{{"tokens", o.shape.tokens},
             {"mode", to_string(mode)},
             {"bytes", bytes},
             {"blocks", o.shape.blocks()},
             {"ops", run.ops_per_request},
             {"requests", s.requests},
             {"request_us", to_json(s.transfer_us)},
             {"queue_us", to_json(s.queue_us)},
             {"total_us", to_json(s.total_us)},
             {"offered_rps", s.offered_rps},
             {"arrival_rps", s.arrival_rps},
             {"carried_rps", s.carried_rps},
             {"offered_gbps", s.offered_gbps},
             {"carried_gbps", s.carried_gbps},
             {"wall_s", wall},
             {"window_s", s.window_s},
             {"warmup_requests", s.warmup_requests},
             {"load_judged", s.load_judged},
             {"overload", s.overload}};
  if (!sizes.is_null()) entry["request_sizes"] = sizes;
  if (plan_.has_slo)
    entry["slo"] = json{{"slo", plan_.slo.text}, {"goodput", s.goodput}, {"met", s.slo_met}, {"judged", s.slo_judged}};
  summary = s;
  ctx_.print(
      fmt::format("  {:>9.1f} {:>9.1f} {:>9.3f} {:>9.3f} {:>10.1f} {:>10.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}",
                  s.offered_rps, s.carried_rps, s.offered_gbps, s.carried_gbps, s.queue_us.p50, s.queue_us.p99,
                  s.transfer_us.p50, s.transfer_us.p99, s.total_us.p50, s.total_us.p99));
  const double completed = wall > 0 ? static_cast<double>(s.requests + s.warmup_requests) / wall : 0;
  ctx_.print(fmt::format(
      "# total p99.9 {:.1f} us, {} requests judged over a {:.3f} s window ({} warm-up before it not judged); offered "
      "{:.1f} req/s, arrived {:.1f}, carried {:.1f} ({:.0f}% of arrived); {:.1f} req/s from the first arrival to the "
      "last ack ({:.3f} s)",
      s.total_us.p999, s.requests, s.window_s, s.warmup_requests, s.offered_rps, s.arrival_rps, s.carried_rps,
      s.arrival_rps > 0 ? 100 * s.carried_rps / s.arrival_rps : 0, completed, wall));
  entry["completed_rps"] = completed;
  entry["rails"] = rail_entry(o, run, wall);
  entry["per_decode"] = per_group_entry("decode rank", "decode", o.decode, tally.per_decode, s.window_s);
  if (o.pin_rails) {
    std::vector<int> rail_ids(tally.per_rail.size());
    for (size_t r = 0; r < rail_ids.size(); ++r) rail_ids[r] = static_cast<int>(r);
    entry["per_rail"] = per_group_entry("rail", "rail", rail_ids, tally.per_rail, s.window_s);
  }
  if (!s.load_judged)
    ctx_.print(fmt::format("# load not judged: {} requests in the window, fewer than the {} a carried rate needs",
                           s.requests, kMinLoadRequests));
  if (s.overload)
    ctx_.print(fmt::format(
        "# OVERLOAD: carried {:.1f} req/s is below {:.0f}% of the {:.1f} that arrived (offered {:.1f}); queueing "
        "grew (p99 {:.1f} us): lower --rate or add rails or decode ranks{}",
        s.carried_rps, 100 * kCarriedShare, s.arrival_rps, s.offered_rps, s.queue_us.p99,
        opt_.prefill_us_per_token > 0 ? " (or prefill ranks: see the prefill line)" : ""));
  if (plan_.has_slo)
    ctx_.print(fmt::format("# SLO {}: goodput {:.2f}% of requests within {:.0f} us; p{} of total {}", plan_.slo.text,
                           100 * s.goodput, plan_.slo.limit_us, plan_.slo.percentile,
                           s.slo_judged ? (s.slo_met ? "met" : "MISSED")
                                        : fmt::format("not judged ({} requests, p{} needs {})", s.requests,
                                                      plan_.slo.percentile, min_samples(plan_.slo.percentile))));
  if (plan_.has_slo) {
    // One verdict from every rule: a run that did not carry its load fails whatever its
    // percentile says (a queue that grows for the whole run needs time to show in it).
    const RunVerdict v = judge_run(s, plan_.slo);
    entry["verdict"] = v.met ? "met" : v.why;
    ctx_.print(fmt::format("# verdict at {:.1f} req/s offered: {}", s.offered_rps, v.met ? "met" : "missed: " + v.why));
  }
  return entry;
}

// Per-request sizes: the blocks (per layer and plane) and bytes of every request, as
// summaries, and their mean (what the GB/s figures use); null with one size for all.
json KvCacheBench::request_sizes(const KvOptions& o, double& mean_bytes) const {
  if (plan_.token_dist.kind == TokenDist::Kind::fixed) return nullptr;
  const double unit = static_cast<double>(o.shape.layers) * o.shape.planes * static_cast<double>(o.shape.block_bytes());
  const Summary sb = summarize_counts(sched_.request_blocks, 1), sy = summarize_counts(sched_.request_blocks, unit);
  mean_bytes = sy.mean;
  return json{{"tokens", plan_.token_dist.text}, {"blocks", to_json(sb)}, {"bytes", to_json(sy)}};
}

void KvCacheBench::serve_header() const {
  ctx_.print(fmt::format("# {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}", "offered", "carried",
                         "offered", "carried", "queue p50", "queue p99", "xfer p50", "xfer p99", "total p50",
                         "total p99"));
  ctx_.print(fmt::format("# {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}", "(req/s)", "(req/s)",
                         "(GB/s)", "(GB/s)", "(us)", "(us)", "(us)", "(us)", "(us)", "(us)"));
}

// Every rank generates the same schedule from the same seed, trace and options, so the
// routes need no exchange: the decision is a function of the arrival sequence. The
// alternative, one rank deciding from the loads it sees and announcing each decision,
// would put a message and a wait on every request's path, and no rank sees the in-flight
// load of the others' requests anyway. least-loaded therefore counts the KV blocks sent to
// each decode rank so far (what it has had to take in), not a live queue length. The
// schedule is generated as the run reads it (kvserve_source.h), and summarised (sched_) by
// one pass before.
ServeSource KvCacheBench::serve_source(const KvOptions& o, double rate, uint64_t seed, size_t requests) const {
  ServeSourceSpec spec;
  spec.requests = requests;
  if (!plan_.trace_arrivals.empty()) spec.trace_arrivals = &plan_.trace_arrivals;
  spec.rate = rate;
  spec.burstiness = opt_.burstiness;
  spec.seed = seed;
  spec.tokens = plan_.token_dist;
  spec.fixed_tokens = o.shape.tokens;
  if (!plan_.request_tokens.empty()) spec.trace_tokens = &plan_.request_tokens;
  spec.max_tokens = kMaxKvTokens;
  spec.block_tokens = o.shape.block_tokens;
  spec.shape_blocks = o.shape.blocks();
  spec.route.route = plan_.route;
  spec.route.decode_ranks = static_cast<int>(o.decode.size());
  for (const KvPair& p : kv_pairs(o))
    spec.route.round_robin.push_back(
        static_cast<int>(std::find(o.decode.begin(), o.decode.end(), p.decode) - o.decode.begin()));
  spec.route.block_tokens = o.shape.block_tokens;
  spec.route.cache_blocks = static_cast<size_t>(opt_.decode_cache);
  if (!plan_.trace_hash_ids.empty()) spec.hash_ids = &plan_.trace_hash_ids;
  spec.pairs = kv_pairs(o).size();
  spec.prefill_ranks = o.prefill.size();
  spec.mesh = o.mesh;
  spec.prefill_us_per_token = opt_.prefill_us_per_token;
  return ServeSource(std::move(spec));
}

// One open-loop run of `source`: its schedule summarised first (sched_), each request's
// times tallied as its ack arrives (per decode rank, and per rail with --pin-rails).
KvRunResult KvCacheBench::serve_run(KvTransfer& transfer, const KvOptions& o, KvMode mode, ServeSource& source,
                                    bool check, ServeWindow window, ServeTally& tally) {
  sched_ = schedule_stats(source, o.decode.size());
  tally = ServeTally(o.decode.size(), o.pin_rails ? static_cast<size_t>(o.rails) : 0,
                     plan_.has_slo ? plan_.slo.limit_us : 0,
                     ServeWindow{window.from_s, window.to_s < 0 ? sched_.span_s : window.to_s});
  std::vector<size_t> decode_of;  // per pair: index into the decode ranks
  for (const KvPair& p : kv_pairs(o))
    decode_of.push_back(static_cast<size_t>(std::find(o.decode.begin(), o.decode.end(), p.decode) - o.decode.begin()));
  const KvRecordSink sink = [&](const KvServeRecord& r) {
    tally.add(decode_of[static_cast<size_t>(r.pair)], r.rail, ServeSample{r.queue_us, r.transfer_us, r.total_us},
              r.arrival_s);
  };
  return transfer.run_open_loop(mode, source, check, sink);
}

// Per decode rank (each request's route target) or, with --pin-rails, per rail: queue,
// transfer and total p50/p99/p99.9, one table row and one JSON object per group, each
// group's load judged as the run's is (carried vs arrived over the window).
json KvCacheBench::per_group_entry(const std::string& what, const char* key, const std::vector<int>& ids,
                                   const std::vector<ServeTally::Group>& groups, double window_s) const {
  json out = json::array();
  ctx_.print(fmt::format("# per {}: {:>6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}", what, key,
                         "requests", "queue p50", "p99", "p99.9", "xfer p50", "p99", "p99.9", "total p50", "p99",
                         "p99.9"));
  for (size_t d = 0; d < groups.size(); ++d) {
    const Summary sq = groups[d].queue.summary(), sx = groups[d].transfer.summary(), st = groups[d].total.summary();
    ctx_.print(fmt::format(
        "# per {}: {:>6} {:>8} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}", what,
        ids[d], st.count, sq.p50, sq.p99, sq.p999, sx.p50, sx.p99, sx.p999, st.p50, st.p99, st.p999));
    const LoadVerdict load = judge_load(st.count, groups[d].acked_in_window, window_s);
    out.push_back(json{{key, ids[d]},
                       {"requests", st.count},
                       {"queue_us", to_json(sq)},
                       {"request_us", to_json(sx)},
                       {"total_us", to_json(st)},
                       {"arrival_rps", load.arrival_rps},
                       {"carried_rps", load.carried_rps},
                       {"load_judged", load.judged},
                       {"overload", load.overload}});
    if (load.overload)
      ctx_.print(fmt::format("# OVERLOAD on {} {}: carried {:.1f} req/s is below {:.0f}% of the {:.1f} that arrived",
                             what, ids[d], load.carried_rps, 100 * kCarriedShare, load.arrival_rps));
  }
  print_slowest(what, ids, groups);
  return out;
}

// Names the group whose requests fared worst, so a slow rail or decode rank is read off
// one line rather than compared across the table: at the highest percentile (p99, p90 or
// p50) that every group has the samples for (min_samples), else not at all.
void KvCacheBench::print_slowest(const std::string& what, const std::vector<int>& ids,
                                 const std::vector<ServeTally::Group>& groups) const {
  uint64_t fewest = UINT64_MAX;
  size_t busy = 0;
  for (const auto& g : groups) {
    if (g.total.count() == 0) continue;
    fewest = std::min(fewest, g.total.count());
    ++busy;
  }
  if (busy < 2) return;
  double pct = 0;
  for (double p : {99.0, 90.0, 50.0}) {
    if (fewest >= min_samples(p)) {
      pct = p;
      break;
    }
  }
  if (pct == 0) {
    ctx_.print(fmt::format("# slowest {}: not judged ({} requests in the smallest group, p50 needs {})", what, fewest,
                           min_samples(50)));
    return;
  }
  size_t worst = groups.size(), best = groups.size();
  for (size_t d = 0; d < groups.size(); ++d) {
    if (groups[d].total.count() == 0) continue;
    const double v = groups[d].total.percentile(pct);
    if (worst == groups.size() || v > groups[worst].total.percentile(pct)) worst = d;
    if (best == groups.size() || v < groups[best].total.percentile(pct)) best = d;
  }
  if (worst == best) return;
  const std::string basis =
      pct == 99 ? ""
                : fmt::format("; p{}: {} requests in the smallest group, p99 needs {}", pct, fewest, min_samples(99));
  ctx_.print(fmt::format(
      "# slowest {}: {} {} (total p{} {:.1f} us, xfer p{} {:.1f} us; {:.1f}x the total p{} of {} {}{})", what, what,
      ids[worst], pct, groups[worst].total.percentile(pct), pct, groups[worst].transfer.percentile(pct),
      groups[worst].total.percentile(pct) / groups[best].total.percentile(pct), pct, what, ids[best], basis));
}

// --prefill-us-per-token: arrival until ready (compute and the wait for the prefill rank),
// printed and kept as a summary.
// Rail utilisation: the KV bytes every prefill rank posted on each rail over the serving
// window (first arrival to the last ack), in GB/s and, with --line-rate, as a fraction of
// the rail's line rate between the pools: each node has one link per rail, so the smaller
// pool's links bound what a rail carries.
json KvCacheBench::rail_entry(const KvOptions& o, const KvRunResult& run, double wall) {
  std::vector<uint64_t> bytes(static_cast<size_t>(o.rails), 0);
  for (const auto& mine : ctx_.bootstrap().all_gather_vectors(run.rail_bytes))
    for (size_t r = 0; r < mine.size() && r < bytes.size(); ++r) bytes[r] += mine[r];
  const size_t links = std::min(o.prefill.size(), o.decode.size());
  const double line_gbps = static_cast<double>(links) * opt_.line_rate_gbps * 1.25e8 / 1e9;  // GB/s
  json out = json::array();
  std::string text;
  for (size_t r = 0; r < bytes.size(); ++r) {
    const double gbps = wall > 0 ? static_cast<double>(bytes[r]) / wall / 1e9 : 0;
    json e{{"rail", r}, {"bytes", bytes[r]}, {"gbps", gbps}};
    text += fmt::format("{}rail {} {:.3f} GB/s", r ? ", " : "", r, gbps);
    if (line_gbps > 0) {
      e["line_fraction"] = gbps / line_gbps;
      text += fmt::format(" ({:.2f} of {} x {} Gb/s)", gbps / line_gbps, links, opt_.line_rate_gbps);
    }
    out.push_back(std::move(e));
  }
  ctx_.print(fmt::format("# rail utilisation (bytes carried / {:.3f} s window): {}", wall, text));
  return out;
}

json KvCacheBench::prefill_entry() const {
  const Summary s = sched_.prefill_us.summary();
  ctx_.print(
      fmt::format("# prefill ({} us per token, one request at a time per prefill rank): arrival to ready p50 "
                  "{:.1f} p99 {:.1f} us; queue counts from ready, total from arrival",
                  opt_.prefill_us_per_token, s.p50, s.p99));
  return to_json(s);
}

// The routing line and the JSON's routing: requests per decode rank, KV blocks not sent
// because the decode rank held them, and (-c) held blocks that arrived anyway.
json KvCacheBench::routing_entry(const KvOptions& o, const KvRunResult& run) {
  const double unit = static_cast<double>(o.shape.layers) * o.shape.planes * static_cast<double>(o.shape.block_bytes());
  const auto total = static_cast<uint64_t>(static_cast<double>(sched_.blocks) * unit);
  const auto saved = static_cast<uint64_t>(static_cast<double>(sched_.saved) * unit);
  const double share = sched_.blocks ? static_cast<double>(sched_.saved) / static_cast<double>(sched_.blocks) : 0;
  json per_decode = json::object();
  std::string text;
  for (size_t d = 0; d < o.decode.size(); ++d) {
    const std::string rank = std::to_string(o.decode[d]);
    per_decode[rank] =
        json{{"requests", sched_.requests_per_decode[d]},
             {"bytes_saved", static_cast<uint64_t>(static_cast<double>(sched_.saved_per_decode[d]) * unit)}};
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", rank, sched_.requests_per_decode[d]);
  }
  json out{{"route", to_string(plan_.route)},
           {"decode_cache_blocks", opt_.decode_cache},
           {"bytes_total", total},
           {"bytes_saved", saved},
           {"saved_share", share},
           {"per_decode", per_decode}};
  ctx_.print(fmt::format("# route {}: requests per decode rank {}", to_string(plan_.route), text));
  if (opt_.decode_cache > 0)
    ctx_.print(
        fmt::format("# prefix reuse (--decode-cache {} blocks of 512 tokens per decode rank): {} of {} B not "
                    "sent ({:.1f}%)",
                    opt_.decode_cache, with_commas(saved), with_commas(total), 100 * share));
  if (common_.check) {
    uint64_t resent = 0;
    for (uint64_t r : ctx_.bootstrap().all_gather_value<uint64_t>(run.resent_blocks)) resent += r;
    out["resent_blocks"] = resent;
    if (resent) ctx_.print(fmt::format("# FAILED: {} held block(s) were sent again", resent));
  }
  return out;
}

int KvCacheBench::run_serve() {
  json config = config_json();
  config["serve"] = json{{"rate", opt_.rate},
                         {"burstiness", opt_.burstiness},
                         {"duration_s", opt_.duration_s},
                         {"seed", opt_.seed},
                         {"requests_per_pair", plan_.serve_requests_per_pair},
                         {"slo", opt_.slo},
                         {"trace", opt_.trace},
                         {"time_scale", opt_.time_scale},
                         {"route", opt_.route},
                         {"decode_cache_blocks", opt_.decode_cache},
                         {"prefill_us_per_token", opt_.prefill_us_per_token},
                         {"decode_memory", opt_.decode_memory}};
  ResultsRun results(ctx_, config);
  print_header();
  KvOptions o = plan_.base;
  o.shape.tokens = plan_.token_counts.front();
  const KvMode mode = plan_.modes.empty() ? KvMode::contiguous : plan_.modes.front();
  const size_t pairs = kv_pairs(o).size();
  const int per_pair = plan_.serve_requests_per_pair;
  const std::string load = opt_.trace.empty() ? fmt::format("at {} req/s offered, burstiness {}, seed {}", opt_.rate,
                                                            opt_.burstiness, opt_.seed)
                                              : fmt::format("at the times of --trace {}", opt_.trace);
  if (opt_.find_max_rate)
    ctx_.print(fmt::format("# serve: --find-max-rate for {}, burstiness {}, seed {}, mode {}", plan_.slo.text,
                           opt_.burstiness, opt_.seed, to_string(mode)));
  else
    ctx_.print(fmt::format("# serve: {} requests ({} per pair) {}, mode {}", per_pair * pairs, per_pair, load,
                           to_string(mode)));
  // The schedule, generated as the run goes; summarised by one pass now (sizes, routes).
  ServeSource source = serve_source(o, opt_.rate, opt_.seed, plan_.serve_requests);
  sched_ = schedule_stats(source, o.decode.size());
  if (plan_.token_dist.kind != TokenDist::Kind::fixed) {
    double mean = 0;
    const json sz = request_sizes(o, mean);
    const auto commas = [&](const char* q) { return with_commas(static_cast<uint64_t>(sz["bytes"][q].get<double>())); };
    ctx_.print(fmt::format(
        "# request sizes (--tokens {}): blocks of {} tokens p50 {:.0f} p99 {:.0f} max {:.0f}; bytes p50 {} p99 {} max "
        "{} (mean {}); pools sized for {} tokens",
        plan_.token_dist.text, o.shape.block_tokens, sz["blocks"]["p50"].get<double>(),
        sz["blocks"]["p99"].get<double>(), sz["blocks"]["max"].get<double>(), commas("p50"), commas("p99"),
        commas("max"), with_commas(static_cast<uint64_t>(mean)), o.shape.tokens));
  }
  results.measure([&] {
    if (!plan_.trace_note.empty()) ctx_.print("# " + plan_.trace_note);
    KvTransfer transfer(ctx_.progress(), ctx_.bootstrap(), o);
    if (plan_.warmup > 0) transfer.run(mode, plan_.warmup, 0, false);
    if (opt_.find_max_rate) {
      find_max_rate_run(results, transfer, o, mode);
      return;
    }
    serve_header();
    results.counters_begin();
    ServeTally tally(0, 0, 0);
    const KvRunResult run = serve_run(transfer, o, mode, source, common_.check, ServeWindow{0, -1}, tally);
    ServeSummary summary;
    // A trace asks for no rate: its own arrivals are the offer.
    json entry = serve_entry(o, mode, opt_.trace.empty() ? opt_.rate : 0, run, tally, summary);
    entry["routing"] = routing_entry(o, run);
    if (opt_.prefill_us_per_token > 0) entry["prefill_us"] = prefill_entry();
    uint64_t wrong = 0;
    for (uint64_t w : ctx_.bootstrap().all_gather_value<uint64_t>(run.wrong)) wrong += w;
    // A held block that arrived anyway is a wrong byte count of its own: reuse must not send it.
    wrong += entry["routing"].value("resent_blocks", uint64_t{0});
    entry["wrong"] = wrong;
    results.add_counters(entry);
    results.add(std::move(entry));
    if (common_.check) ctx_.print(fmt::format("# Wrong bytes : {} {}", wrong, wrong ? "FAILED" : "OK"));
    wrong_ = wrong;
  });
  ctx_.status().clear();
  results.finish();
  return wrong_ ? 1 : 0;
}

}  // namespace railbench
