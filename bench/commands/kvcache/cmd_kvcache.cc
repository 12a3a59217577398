// railbench kvcache: the KV-cache transfer of prefill/decode disaggregation, as paged
// blocks, per mode and token count, against one contiguous write of the same bytes.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/commands/kvcache/kvcache_bench.h"
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

}  // namespace

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
        "decode rank's ack, total = arrival until the ack; carried = acks inside the judged window (first judged "
        "arrival to the last arrival) / its length");
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

namespace {

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
               "--serve: measure the capacity, then search the highest rate meeting --slo below it, printing the "
               "curve");
  sub.add_option("--probe-warmup", kv.probe_warmup_s, "--find-max-rate: seconds of each probe not judged")
      ->capture_default_str();
  sub.add_option("--probe-duration", kv.probe_duration_s,
                 "--find-max-rate: judged seconds of each probe, at least (longer at low rates: --probe-requests)")
      ->capture_default_str();
  sub.add_option("--probe-requests", kv.probe_requests,
                 "--find-max-rate: judged requests of each probe, at least (raised to what the --slo percentile "
                 "needs: p99.9 1000)")
      ->capture_default_str();
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
      add_paths_option(sub, common);
      add_link_options(sub, common);
      // --mem only to refuse GPU memory with a clear message: the block pools are host memory.
      add_memory_options(sub, common, false);
      add_kvcache_options(sub, *opt);
      return SubcommandRun{{}, [&common, opt](Bootstrap& b) { return KvCacheBench(b, common, *opt).run(); }};
    }});

}  // namespace
}  // namespace railbench
