// railbench kvcache: the KV-cache transfer of prefill/decode disaggregation, as paged
// blocks, per mode and token count, against one contiguous write of the same bytes.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/commands/kvcache/kvcache_options.h"
#include "bench/commands/kvcache/kvcache_report.h"
#include "bench/commands/kvcache/kvserve_load.h"
#include "bench/commands/kvcache/kvserve_search.h"
#include "bench/commands/kvcache/kvserve_source.h"
#include "bench/runner/results_run.h"
#include "bench/runner/run_context.h"
#include "bench/runner/stragglers_run.h"
#include "collectives/kvcache/routing.h"
#include "collectives/kvcache/transfer.h"
#include "lib/core/bandwidth.h"
#include "lib/core/sizes.h"
#include "lib/results/results.h"

namespace railbench {

using nlohmann::json;

namespace {

std::string gb(uint64_t bytes) {
  return fmt::format("{:.2f} GB", static_cast<double>(bytes) / 1e9);
}

class KvCacheBench {
 public:
  KvCacheBench(Bootstrap& bootstrap, const CommonOptions& common, const KvCacheOptions& opt)
      : ctx_(bootstrap, common, "kvcache"), common_(common), opt_(opt) {}
  int run();

 private:
  void open();
  json config_json() const;
  void print_header() const;
  KvRecord run_mode(KvTransfer& transfer, const KvOptions& o, KvMode mode, double& contiguous_gbps);
  int run_serve();
  json serve_entry(const KvOptions& o, KvMode mode, const KvRunResult& run, const ServeTally& mine,
                   ServeSummary& summary);
  void serve_header() const;
  json request_sizes(const KvOptions& o, double& mean_bytes) const;
  ServeSource serve_source(const KvOptions& o, double rate, uint64_t seed, size_t requests) const;
  KvRunResult serve_run(KvTransfer& transfer, const KvOptions& o, KvMode mode, ServeSource& source, bool check,
                        ServeTally& tally);
  json routing_entry(const KvOptions& o, const KvRunResult& run);
  json per_group_entry(const std::string& what, const char* key, const std::vector<int>& ids,
                       const std::vector<ServeTally::Group>& groups) const;
  json prefill_entry() const;
  json rail_entry(const KvOptions& o, const KvRunResult& run, double wall);
  void find_max_rate_run(ResultsRun& results, KvTransfer& transfer, const KvOptions& o, KvMode mode);

  RunContext ctx_;
  const CommonOptions& common_;
  const KvCacheOptions& opt_;
  KvCachePlan plan_;
  std::vector<KvModel> presets_;  // for the what-if table
  std::vector<std::string> skipped_presets_;
  bool ordered_writes_ = false;
  ServeScheduleStats sched_;  // --serve: what the run's schedule holds (sizes, routes, prefill waits)
  uint64_t wrong_ = 0;
  // --stragglers: each (token count, mode) run is one op, collected to rank 0 after it.
  std::unique_ptr<StragglerRecording> stragglers_;
  StragglerThreshold straggler_threshold_;
  uint32_t straggler_op_ = 0;
  void setup_stragglers();
  void finish_stragglers(ResultsRun& results);
};

// Options resolved on every rank (agreed), then the transport, then the protocol it allows.
void KvCacheBench::open() {
  ctx_.agree([&] {
    plan_ = resolve_kvcache(
        opt_, KvCacheWorld{ctx_.hosts(), ctx_.rank(), common_.mem, common_.warmup_iters, mem_available()});
    // The what-if table's presets, read before anything is measured: a duplicate name
    // refuses the run now rather than after it; a broken file is only skipped.
    presets_ = load_model_presets(model_config_dir(), &skipped_presets_);
    if (!opt_.straggler_threshold.empty()) straggler_threshold_ = parse_straggler_threshold(opt_.straggler_threshold);
    if (opt_.serve && (opt_.stragglers || !opt_.straggler_threshold.empty()))
      throw UsageError(
          "--stragglers judges the closed-loop transfers of each token count and mode: drop --serve (or "
          "--stragglers)");
  });
  setup_stragglers();
  if (ctx_.is_root()) {
    for (const auto& why : skipped_presets_)
      fmt::print(stderr, "railbench: warning: model preset skipped (fix or remove the file): {}\n", why);
  }
  ctx_.open_transport();
  Transport& t = ctx_.transport();
  const auto& caps = t.caps();
  const bool can_write = caps.write && caps.write_with_imm;
  ctx_.agree([&] {
    if (opt_.protocol == "write" && !can_write)
      throw UnsupportedError(
          fmt::format("--protocol write needs RDMA write with immediate, which {} ({}) lacks: use "
                      "--protocol send",
                      t.name(), t.provider()));
  });
  plan_.base.protocol =
      opt_.protocol == "send" || (opt_.protocol == "auto" && !can_write) ? KvProtocol::send : KvProtocol::write;
  plan_.base.rails = t.num_rails();
  plan_.base.pin_rails = opt_.pin_rails;
  ordered_writes_ = caps.ordered_writes;
}

json KvCacheBench::config_json() const {
  const KvModel& model = plan_.model;
  json modes_json = json::array();
  for (KvMode m : plan_.modes) modes_json.push_back(to_string(m));
  json config{{"model", model.name},
              {"attention", model.attention == KvAttention::gqa ? "gqa" : "mla"},
              {"layers", model.layers},
              {"kv_heads", model.kv_heads},
              {"head_dim", model.head_dim},
              {"latent_dim", model.latent_dim},
              {"rope_dim", model.rope_dim},
              {"kv_dtype", opt_.kv_dtype},
              {"bytes_per_token", kv_bytes_per_token(model, plan_.dtype_bytes)},
              {"formula", kv_formula(model, plan_.dtype_bytes)},
              {"tokens", plan_.token_counts},
              {"block_tokens", opt_.block_tokens},
              {"modes", modes_json},
              {"prefill_ranks", plan_.base.prefill},
              {"decode_ranks", plan_.base.decode},
              {"requests", opt_.requests},
              {"warmup_requests", plan_.warmup},
              {"concurrency", opt_.concurrency},
              {"alloc_run", opt_.alloc_run},
              {"protocol", plan_.base.protocol == KvProtocol::write ? "write" : "send"},
              {"ordered_writes", ordered_writes_},
              {"pin_rails", opt_.pin_rails}};
  // The threshold of --stragglers (absent when off), as the collective commands record it.
  if (stragglers_) config["stragglers"] = to_string(straggler_threshold_);
  return config;
}

void KvCacheBench::print_header() const {
  const KvModel& model = plan_.model;
  const Transport& t = ctx_.transport();
  const uint64_t per_token = kv_bytes_per_token(model, plan_.dtype_bytes);
  std::string pair_text;
  for (const auto& p : kv_pairs(plan_.base))
    pair_text += fmt::format("{}{}->{}", pair_text.empty() ? "" : " ", p.prefill, p.decode);
  const bool write = plan_.base.protocol == KvProtocol::write;
  ctx_.print(fmt::format("# railbench kvcache: {} ({}), transport {} ({}), {} ranks on {} host(s), {} rail(s)",
                         model.display, opt_.kv_dtype, t.name(), t.provider(), ctx_.size(), ctx_.num_hosts(),
                         t.num_rails()));
  ctx_.print(fmt::format("# KV bytes per token: {}", kv_formula(model, plan_.dtype_bytes)));
  for (uint64_t n : plan_.token_counts)
    ctx_.print(fmt::format("#   {} tokens: {} B ({})", n, with_commas(n * per_token), gb(n * per_token)));
  ctx_.print(
      fmt::format("# pairs (prefill->decode): {}; {} timed + {} warm-up request(s) per pair and mode, {} in "
                  "flight per pair; blocks of {} tokens, allocator runs of {} block(s); protocol {}{}",
                  pair_text, opt_.serve ? plan_.serve_requests_per_pair : opt_.requests, plan_.warmup, opt_.concurrency,
                  opt_.block_tokens, opt_.alloc_run, write ? "write" : "send",
                  write ? (ordered_writes_ ? " (writes ordered per rail: each rail's last write carries the imm)"
                                           : " (unordered: imm after the writes complete)")
                        : ""));
  if (opt_.serve && plan_.route != KvRoute::round_robin)
    ctx_.print(
        fmt::format("# --route {}: every prefill rank paired with every decode rank, each request's decode rank "
                    "chosen per request (the per-pair count above is the mean)",
                    to_string(plan_.route)));
  if (opt_.serve) {
    // The sweep's per-pair counts do not apply: the serve line below says what runs.
    ctx_.print(
        "# serve: queue = arrival until the transfer starts (a slot of the pair free), xfer = start until the "
        "decode rank's ack, total = arrival until the ack; carried = requests / (first arrival to last ack)");
    return;
  }
  ctx_.print(
      "# time: per request, from the prefill rank's first post until the decode rank's ack arrives (decode acks when "
      "it has seen the completion and, staged, unpacked); GB/s = bytes/req / p50; vs 1w = GB/s / one contiguous "
      "write's GB/s");
  ctx_.print("#");
  print_kv_header(ctx_);
}

// One mode at one token count: timed requests, then with -c an untimed run in which
// every block of C+1 requests per pair is filled with its pattern and verified on the
// decode side (slots are reused, so stale data would show).
KvRecord KvCacheBench::run_mode(KvTransfer& transfer, const KvOptions& o, KvMode mode, double& contiguous_gbps) {
  Bootstrap& b = ctx_.bootstrap();
  if (stragglers_)
    stragglers_->recorder().begin_op(make_op_key(straggler_op_++, 0, fmt::format("kv.{}", to_string(mode))));
  const KvRunResult run = transfer.run(mode, plan_.warmup, opt_.requests, false);
  if (stragglers_) {
    stragglers_->recorder().end_op();
    stragglers_->collect(ctx_.progress(), b);
  }
  KvRecord rec;
  rec.tokens = o.shape.tokens;
  rec.mode = to_string(mode);
  rec.bytes = o.shape.request_bytes();
  rec.blocks = o.shape.units();
  const auto ops = b.all_gather_value<uint64_t>(run.ops_per_request);
  rec.ops = *std::max_element(ops.begin(), ops.end());
  std::vector<double> all_us;
  for (const auto& v : b.all_gather_vectors(run.request_us)) all_us.insert(all_us.end(), v.begin(), v.end());
  rec.request_us = summarize(all_us);
  const auto walls = b.all_gather_value<double>(run.wall_s);
  const double wall = *std::max_element(walls.begin(), walls.end());
  const double seconds = rec.request_us.p50 * 1e-6;
  rec.gbps = gbps(static_cast<double>(rec.bytes), seconds);
  rec.blocks_per_s = seconds > 0 ? static_cast<double>(rec.blocks) / seconds : 0;
  rec.aggregate_gbps = gbps(static_cast<double>(rec.bytes) * static_cast<double>(rec.request_us.count), wall);
  if (mode == KvMode::contiguous) contiguous_gbps = rec.gbps;
  rec.ratio = contiguous_gbps > 0 ? rec.gbps / contiguous_gbps : 0;
  if (common_.check) {
    const KvRunResult checked = transfer.run(mode, 0, opt_.concurrency + 1, true);
    for (uint64_t w : b.all_gather_value<uint64_t>(checked.wrong)) rec.wrong += w;
    rec.checked = true;
  }
  return rec;
}

// --serve: one open-loop run in the first --mode after a closed-loop warm-up; every
// prefill rank's tally (fixed-size histograms, not records) is gathered and merged, so
// what the ranks exchange does not grow with the requests.
json KvCacheBench::serve_entry(const KvOptions& o, KvMode mode, const KvRunResult& run, const ServeTally& mine,
                               ServeSummary& summary) {
  Bootstrap& b = ctx_.bootstrap();
  ServeTally tally(mine.per_decode.size(), mine.per_rail.size(), mine.slo_limit_us);
  for (const auto& words : b.all_gather_vectors(mine.words())) tally.merge_words(words);
  const auto walls = b.all_gather_value<double>(run.wall_s);
  const double wall = *std::max_element(walls.begin(), walls.end());
  double mean_bytes = static_cast<double>(o.shape.request_bytes());
  const json sizes = request_sizes(o, mean_bytes);
  const auto bytes = static_cast<uint64_t>(std::llround(mean_bytes));
  const ServeSummary s = summarize_serve(tally, sched_.span_s, wall, bytes, plan_.has_slo ? &plan_.slo : nullptr);
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
             {"carried_rps", s.carried_rps},
             {"offered_gbps", s.offered_gbps},
             {"carried_gbps", s.carried_gbps},
             {"wall_s", wall},
             {"overload", s.overload}};
  if (!sizes.is_null()) entry["request_sizes"] = sizes;
  if (plan_.has_slo) entry["slo"] = json{{"slo", plan_.slo.text}, {"goodput", s.goodput}, {"met", s.slo_met}};
  summary = s;
  ctx_.print(
      fmt::format("  {:>9.1f} {:>9.1f} {:>9.3f} {:>9.3f} {:>10.1f} {:>10.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}",
                  s.offered_rps, s.carried_rps, s.offered_gbps, s.carried_gbps, s.queue_us.p50, s.queue_us.p99,
                  s.transfer_us.p50, s.transfer_us.p99, s.total_us.p50, s.total_us.p99));
  ctx_.print(fmt::format("# total p99.9 {:.1f} us, {} requests in {:.3f} s", s.total_us.p999, s.requests, wall));
  entry["rails"] = rail_entry(o, run, wall);
  entry["per_decode"] = per_group_entry("decode rank", "decode", o.decode, tally.per_decode);
  if (o.pin_rails) {
    std::vector<int> rail_ids(tally.per_rail.size());
    for (size_t r = 0; r < rail_ids.size(); ++r) rail_ids[r] = static_cast<int>(r);
    entry["per_rail"] = per_group_entry("rail", "rail", rail_ids, tally.per_rail);
  }
  if (s.overload)
    ctx_.print(
        fmt::format("# OVERLOAD: carried {:.1f} req/s is below 90% of the {:.1f} offered; queueing grew "
                    "(p99 {:.1f} us): lower --rate or add rails or decode ranks{}",
                    s.carried_rps, s.offered_rps, s.queue_us.p99,
                    opt_.prefill_us_per_token > 0 ? " (or prefill ranks: see the prefill line)" : ""));
  if (plan_.has_slo)
    ctx_.print(fmt::format("# SLO {}: goodput {:.2f}% of requests within {:.0f} us; p{} of total {}", plan_.slo.text,
                           100 * s.goodput, plan_.slo.limit_us, plan_.slo.percentile, s.slo_met ? "met" : "MISSED"));
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

// --find-max-rate: probes from --rate up or down and bisects (kvserve_search.h); every
// probe is a results entry, so the curve is in the JSON and the CSV as it is measured.
// Every rank computes the same summaries from the gathered tallies, so all follow the
// same sequence of rates without another exchange.
void KvCacheBench::find_max_rate_run(ResultsRun& results, KvTransfer& transfer, const KvOptions& o, KvMode mode) {
  const size_t pairs = kv_pairs(o).size();
  int probe = 0;
  const auto measure = [&](double rate) {
    // --duration: rate x duration requests, at most 200,000 a probe so that a doubling
    // far past capacity stays short; else --requests.
    const double total = opt_.duration_s > 0 ? std::min(std::ceil(rate * opt_.duration_s), 2e5) : opt_.requests;
    const int per_pair = std::max(1, static_cast<int>(std::ceil(total / static_cast<double>(pairs))));
    ServeSource source =
        serve_source(o, rate, opt_.seed + static_cast<uint64_t>(probe), static_cast<size_t>(per_pair) * pairs);
    ctx_.print(fmt::format("# probe {}: {:.1f} req/s offered, {} requests", ++probe, rate, per_pair * pairs));
    ServeTally tally(0, 0, 0);
    const KvRunResult run = serve_run(transfer, o, mode, source, false, tally);
    ServeSummary sum;
    json entry = serve_entry(o, mode, run, tally, sum);
    entry["probe"] = probe;
    results.add(std::move(entry));
    RatePoint p;
    p.rate = rate;
    p.p50_us = sum.total_us.p50;
    p.carried = sum.carried_rps;
    p.slo_us = sum.slo_us;
    p.met = sum.slo_met;  // a queue that grows shows in the percentile; small probes make the overload flag noisy
    return p;
  };
  const MaxRateResult r = find_max_rate(opt_.rate, plan_.slo, measure);
  json curve = json::array();
  ctx_.print(fmt::format("# find-max-rate {}: curve (offered req/s -> total p50 / p{} us)", plan_.slo.text,
                         plan_.slo.percentile));
  for (const RatePoint& p : r.curve) {
    ctx_.print(
        fmt::format("#   {:>10.1f} -> {:>10.1f} / {:>10.1f} {}", p.rate, p.p50_us, p.slo_us, p.met ? "met" : "missed"));
    curve.push_back(
        json{{"rate", p.rate}, {"p50_us", p.p50_us}, {"slo_us", p.slo_us}, {"carried_rps", p.carried}, {"met", p.met}});
  }
  json out{{"slo", plan_.slo.text}, {"max_rate", r.max_rate}, {"curve", curve}};
  std::string capacity;
  if (opt_.line_rate_gbps > 0) {
    // The wire's bound: the pool links in parallel (the smaller pool's ranks x rails) at
    // the line rate, divided by one request's bytes.
    const double links =
        static_cast<double>(std::min(o.prefill.size(), o.decode.size()) * static_cast<size_t>(o.rails));
    const double cap = links * opt_.line_rate_gbps * 1.25e8 / static_cast<double>(o.shape.request_bytes());
    out["analytical_capacity_rps"] = cap;
    out["fraction_of_capacity"] = r.max_rate / cap;
    capacity = fmt::format("; analytical capacity {:.1f} req/s ({:.0f} link(s) x {} Gb/s / {} B), {:.2f} of it", cap,
                           links, opt_.line_rate_gbps, o.shape.request_bytes(), r.max_rate / cap);
  }
  results.set("max_rate", out);
  ctx_.print(fmt::format("# max rate meeting {}: {:.1f} req/s{}", plan_.slo.text, r.max_rate, capacity));
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
                                    bool check, ServeTally& tally) {
  sched_ = schedule_stats(source, o.decode.size());
  tally = ServeTally(o.decode.size(), o.pin_rails ? static_cast<size_t>(o.rails) : 0,
                     plan_.has_slo ? plan_.slo.limit_us : 0);
  std::vector<size_t> decode_of;  // per pair: index into the decode ranks
  for (const KvPair& p : kv_pairs(o))
    decode_of.push_back(static_cast<size_t>(std::find(o.decode.begin(), o.decode.end(), p.decode) - o.decode.begin()));
  const KvRecordSink sink = [&](const KvServeRecord& r) {
    tally.add(decode_of[static_cast<size_t>(r.pair)], r.rail, ServeSample{r.queue_us, r.transfer_us, r.total_us});
  };
  return transfer.run_open_loop(mode, source, check, sink);
}

// Per decode rank (each request's route target) or, with --pin-rails, per rail: queue,
// transfer and total p50/p99/p99.9, one table row and one JSON object per group.
json KvCacheBench::per_group_entry(const std::string& what, const char* key, const std::vector<int>& ids,
                                   const std::vector<ServeTally::Group>& groups) const {
  json out = json::array();
  ctx_.print(fmt::format("# per {}: {:>6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}", what, key,
                         "requests", "queue p50", "p99", "p99.9", "xfer p50", "p99", "p99.9", "total p50", "p99",
                         "p99.9"));
  for (size_t d = 0; d < groups.size(); ++d) {
    const Summary sq = groups[d].queue.summary(), sx = groups[d].transfer.summary(), st = groups[d].total.summary();
    ctx_.print(fmt::format(
        "# per {}: {:>6} {:>8} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}", what,
        ids[d], st.count, sq.p50, sq.p99, sq.p999, sx.p50, sx.p99, sx.p999, st.p50, st.p99, st.p999));
    out.push_back(json{{key, ids[d]},
                       {"requests", st.count},
                       {"queue_us", to_json(sq)},
                       {"request_us", to_json(sx)},
                       {"total_us", to_json(st)}});
  }
  // Name the group whose requests fared worst, so a slow rail or decode rank is read off
  // one line rather than compared across the table.
  size_t worst = groups.size(), best = groups.size();
  for (size_t d = 0; d < groups.size(); ++d) {
    if (groups[d].total.count() == 0) continue;
    const double p99 = groups[d].total.percentile(99);
    if (worst == groups.size() || p99 > groups[worst].total.percentile(99)) worst = d;
    if (best == groups.size() || p99 < groups[best].total.percentile(99)) best = d;
  }
  if (worst != best && worst < groups.size())
    ctx_.print(
        fmt::format("# slowest {}: {} {} (total p99 {:.1f} us, xfer p99 {:.1f} us; {:.1f}x the total p99 of {} {})",
                    what, what, ids[worst], groups[worst].total.percentile(99), groups[worst].transfer.percentile(99),
                    groups[worst].total.percentile(99) / groups[best].total.percentile(99), what, ids[best]));
  return out;
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
  ctx_.print(
      fmt::format("# serve: {} requests ({} per pair) {}, mode {}", per_pair * pairs, per_pair, load, to_string(mode)));
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
    const KvRunResult run = serve_run(transfer, o, mode, source, common_.check, tally);
    ServeSummary summary;
    json entry = serve_entry(o, mode, run, tally, summary);
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

int KvCacheBench::run() {
  open();
  if (opt_.serve) return run_serve();
  ResultsRun results(ctx_, config_json());
  print_header();
  uint64_t total_wrong = 0;
  std::map<std::string, double> efficiency;  // per mode, at the largest token count
  results.measure([&] {
    const size_t steps = plan_.token_counts.size() * (plan_.modes.size() + 1);
    size_t step = 0;
    for (uint64_t tokens : plan_.token_counts) {
      KvOptions o = plan_.base;
      o.shape.tokens = tokens;
      KvTransfer transfer(ctx_.progress(), ctx_.bootstrap(), o);
      double contiguous_gbps = 0;
      std::vector<KvMode> order{KvMode::contiguous};
      order.insert(order.end(), plan_.modes.begin(), plan_.modes.end());
      for (KvMode mode : order) {
        ctx_.status().step(fmt::format("kvcache: step {}/{} ({} tokens, {}), {} elapsed", ++step, steps, tokens,
                                       to_string(mode), format_clock(ctx_.status().elapsed_s())));
        results.counters_begin();
        const KvRecord rec = run_mode(transfer, o, mode, contiguous_gbps);
        json entry = to_json(rec);
        results.add_counters(entry);
        total_wrong += rec.wrong;
        efficiency[rec.mode] = rec.ratio;
        print_kv_row(ctx_, rec);
        results.add(std::move(entry));
      }
    }
  });
  ctx_.status().clear();
  const std::string basis = efficiency.count("per-block")
                                ? "per-block"
                                : to_string(plan_.modes.empty() ? KvMode::contiguous : plan_.modes.front());
  json what_if = print_what_if(ctx_, presets_, plan_.dtype_bytes, opt_.kv_dtype, basis, efficiency[basis],
                               ctx_.transport().provider(), ctx_.transport().rail_info(0).name);
  what_if["efficiency_by_mode"] = efficiency;
  results.set("what_if", what_if);
  if (common_.check) ctx_.print(fmt::format("# Wrong bytes : {} {}", total_wrong, total_wrong ? "FAILED" : "OK"));
  finish_stragglers(results);
  results.finish();
  return total_wrong ? 1 : 0;
}

// Every message and write of a (token count, mode) run is recorded: the ring holds the
// largest run's (its blocks' writes or sends, a notice each, warm-up included), capped
// at 1M messages (40 MB); a run with more is dropped from the analysis and counted.
void KvCacheBench::setup_stragglers() {
  if (!opt_.stragglers && opt_.straggler_threshold.empty()) return;
  uint64_t most = 0;
  for (uint64_t tokens : plan_.token_counts) {
    KvShape shape = plan_.base.shape;
    shape.tokens = tokens;
    most = std::max<uint64_t>(most, shape.units());
  }
  const uint64_t requests = static_cast<uint64_t>(opt_.requests + plan_.warmup + opt_.concurrency + 1);
  const auto msgs = static_cast<size_t>(std::clamp<uint64_t>(2 * (most + 1) * requests, 1024, uint64_t{1} << 20));
  stragglers_ = std::make_unique<StragglerRecording>(1, msgs);
  ctx_.wrap_transport([this](std::unique_ptr<Transport> t) { return stragglers_->wrap(std::move(t)); });
}

void KvCacheBench::finish_stragglers(ResultsRun& results) {
  if (!stragglers_ || !ctx_.is_root()) return;
  write_stragglers(ctx_, results, *stragglers_, ctx_.hosts(), straggler_threshold_);
}

void add_kvcache_options(CLI::App& sub, KvCacheOptions& kv) {
  sub.add_option("--model", kv.model, "Preset from configs/models (llama-3.1-70b, deepseek-v3, ...)")
      ->capture_default_str();
  sub.add_option("--layers", kv.layers, "Custom model: layers");
  sub.add_option("--kv-heads", kv.kv_heads, "Custom model: KV heads (grouped-query attention)");
  sub.add_option("--head-dim", kv.head_dim, "Custom model: head dimension");
  sub.add_option("--latent-dim", kv.latent_dim, "Custom model: MLA latent width per token per layer");
  sub.add_option("--rope-dim", kv.rope_dim, "Custom model: MLA rotary values per token per layer");
  sub.add_option("--kv-dtype", kv.kv_dtype, "fp16, bf16 or fp8")->capture_default_str();
  sub.add_option("--tokens", kv.tokens,
                 "Tokens per request: a value or a list (4096 or 1K,4K,32K); --serve also "
                 "uniform:A-B, lognormal:MEDIAN,SIGMA or trace")
      ->delimiter(',')
      ->capture_default_str();
  sub.add_option("--block-tokens", kv.block_tokens, "Tokens per KV block")->capture_default_str();
  sub.add_option("--mode", kv.modes, "per-block, coalesced, staged (a list; one contiguous write always runs)")
      ->delimiter(',')
      ->capture_default_str();
  sub.add_option("--prefill-ranks", kv.prefill_ranks, "Prefill ranks (0,1 or 0-1; default: first half)");
  sub.add_option("--decode-ranks", kv.decode_ranks, "Decode ranks (default: the others)");
  sub.add_option("--requests", kv.requests, "Timed requests per pair and mode")->capture_default_str();
  sub.add_option("--concurrency", kv.concurrency, "Requests in flight per pair")->capture_default_str();
  sub.add_option("--alloc-run", kv.alloc_run, "Consecutive block ids the pool allocator hands out (1: all scattered)")
      ->capture_default_str();
  sub.add_option("--protocol", kv.protocol, "auto, write (one-sided + immediate) or send (two-sided)")
      ->capture_default_str();
  sub.add_flag("--serve", kv.serve, "Open-loop serving run: requests arrive at --rate (see --burstiness, --slo)");
  sub.add_option("--rate", kv.rate, "--serve: requests per second offered, over all pairs")->capture_default_str();
  sub.add_option("--burstiness", kv.burstiness, "--serve: gamma shape of the gaps (1: Poisson, <1 burstier)")
      ->capture_default_str();
  sub.add_option("--duration", kv.duration_s,
                 "--serve: seconds of arrivals (rate x duration requests); else --requests in all");
  sub.add_option("--seed", kv.seed, "--serve: seed of the arrival times")->capture_default_str();
  sub.add_option("--trace", kv.trace,
                 "--serve: replay a trace's arrival times (Azure, BurstGPT CSV or Mooncake JSONL; see the guide)");
  sub.add_option("--time-scale", kv.time_scale, "--trace: speed-up of the replay (2: twice as fast)")
      ->capture_default_str();
  sub.add_flag("--find-max-rate", kv.find_max_rate,
               "--serve: search the highest --rate meeting --slo (starts at --rate), printing the curve");
  sub.add_option("--line-rate", kv.line_rate_gbps,
                 "--serve: Gb/s per rail: each rail's utilisation as a fraction of it; with --find-max-rate the "
                 "analytical capacity printed beside the answer");
  sub.add_option("--slo", kv.slo, "--serve: latency objective on the total time, e.g. p99:50ms (goodput reported)");
  sub.add_option("--route", kv.route,
                 "--serve: decode rank per request: round-robin, least-loaded (fewest KV blocks sent) or prefix "
                 "(most of its prefix held)")
      ->capture_default_str();
  sub.add_option("--decode-cache", kv.decode_cache,
                 "--serve with a Mooncake --trace: prefix blocks (512 tokens) each decode rank keeps (LRU); held "
                 "blocks are not sent. 0: off")
      ->capture_default_str();
  sub.add_option("--prefill-us-per-token", kv.prefill_us_per_token,
                 "--serve: prefill compute per prompt token; a request's KV is ready that long after it arrives "
                 "(serial per prefill rank)")
      ->capture_default_str();
  sub.add_option("--decode-memory", kv.decode_memory,
                 "--serve: KV memory of a decode rank (40G); a request larger than it is refused before the run");
  sub.add_option("--max-mem", kv.max_mem, "Memory all ranks of a host may allocate (default 90% of MemAvailable)");
  sub.add_flag("--pin-rails", kv.pin_rails,
               "Each request on one rail (slot s of pair k on rail (k x concurrency + s) mod rails) instead of "
               "striped over all; --serve then reports per rail");
  sub.add_flag("--stragglers", kv.stragglers,
               "name a slow link (node -> node, rail) or a late rank from every transfer of each token count and "
               "mode");
  sub.add_option("--straggler-threshold", kv.straggler_threshold,
                 "TIME%,ITERS% (10%,25%): the verdict names one costing more than TIME% of a run in more than "
                 "ITERS% of the runs; turns --stragglers on");
}

const bool cmd_kvcache_registered = register_subcommand(Subcommand{
    "kvcache", "KV-cache transfer of prefill/decode disaggregation: paged blocks per mode vs one contiguous write", 55,
    [](CLI::App& sub, CommonOptions& common) {
      auto opt = std::make_shared<KvCacheOptions>();
      add_transport_options(sub, common);
      // No -n: --requests is the count of timed requests.
      add_warmup_option(sub, common, "Untimed requests per pair and mode before timing (default 1)");
      add_check_option(sub, common);
      add_output_options(sub, common);
      add_timeline_option(sub, common);
      add_link_options(sub, common);
      // --mem only to refuse GPU memory with a clear message: the block pools are host memory.
      add_memory_options(sub, common, false);
      add_kvcache_options(sub, *opt);
      return SubcommandRun{{}, [&common, opt](Bootstrap& b) { return KvCacheBench(b, common, *opt).run(); }};
    }});

}  // namespace
}  // namespace railbench
