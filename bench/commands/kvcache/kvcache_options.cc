#include "bench/commands/kvcache/kvcache_options.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/commands/kvcache/kvserve_trace.h"
#include "lib/core/errors.h"
#include "lib/core/sizes.h"

namespace railbench {

using nlohmann::json;

std::vector<int> parse_ranks(const std::string& text, const char* option) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      const auto dash = item.find('-');
      const int lo = std::stoi(item.substr(0, dash), &used);
      const int hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
      if (lo < 0 || hi < lo) throw std::invalid_argument(item);
      for (int r = lo; r <= hi; ++r) out.push_back(r);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("{} '{}': expected ranks such as 0,1 or 0-3", option, text));
    }
  }
  if (out.empty()) throw UsageError(fmt::format("{} is empty: give ranks such as 0,1 or 0-3", option));
  return out;
}

uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

namespace {

std::string gb(uint64_t bytes) {
  if (bytes == UINT64_MAX) return "more than 18 EB";
  return fmt::format("{:.2f} GB", static_cast<double>(bytes) / 1e9);
}

// KvShape::request_bytes(), which wraps on absurd sizes, saturating instead.
uint64_t request_bytes(const KvShape& s) {
  return mul_sat(mul_sat(static_cast<uint64_t>(s.layers) * static_cast<uint64_t>(s.planes), s.tokens), s.token_bytes);
}

KvModel model_from(const KvCacheOptions& o) {
  if (o.layers == 0 && o.kv_heads == 0 && o.head_dim == 0 && o.latent_dim == 0)
    return find_model_preset(o.model, model_config_dir());
  json j{{"name", "custom"}, {"display", "custom"}, {"layers", o.layers}};
  if (o.latent_dim > 0) {
    j["attention"] = "mla";
    j["kv_lora_rank"] = o.latent_dim;
    if (o.rope_dim > 0) j["qk_rope_head_dim"] = o.rope_dim;
  } else {
    j["attention"] = "gqa";
    j["kv_heads"] = o.kv_heads;
    j["head_dim"] = o.head_dim;
  }
  return kv_model_from_json(j, "custom model (--layers, --kv-heads, --head-dim or --latent-dim)");
}

// Prefill ranks (default: the first half) and decode ranks (default: the others), each
// rank in one role at most.
void resolve_roles(const KvCacheOptions& opt, int n, KvOptions& base) {
  std::vector<int> all(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) all[static_cast<size_t>(r)] = r;
  base.prefill = opt.prefill_ranks.empty() ? std::vector<int>(all.begin(), all.begin() + n / 2)
                                           : parse_ranks(opt.prefill_ranks, "--prefill-ranks");
  if (opt.decode_ranks.empty()) {
    for (int r : all)
      if (std::find(base.prefill.begin(), base.prefill.end(), r) == base.prefill.end()) base.decode.push_back(r);
  } else {
    base.decode = parse_ranks(opt.decode_ranks, "--decode-ranks");
  }
  std::set<int> seen;
  for (const auto* list : {&base.prefill, &base.decode}) {
    for (int r : *list) {
      if (r >= n) throw UsageError(fmt::format("rank {} in --prefill-ranks/--decode-ranks: ranks are 0..{}", r, n - 1));
      if (!seen.insert(r).second)
        throw UsageError(
            fmt::format("rank {} is listed twice in --prefill-ranks/--decode-ranks: one role per rank", r));
    }
  }
  if (base.decode.empty()) throw UsageError("no decode ranks left: give --decode-ranks");
}

// Memory, before anything is allocated: every rank of this host, at the largest count.
void check_memory(const KvCacheOptions& opt, const KvCacheWorld& w, const KvCachePlan& plan) {
  KvOptions largest = plan.base;
  largest.shape.tokens = *std::max_element(plan.token_counts.begin(), plan.token_counts.end());
  // Payload (pools, staging) and bookkeeping (block tables, copy plans: 8 and 32 B per
  // block, which dominate with tiny tokens), summed without wrapping.
  uint64_t payload = 0, bookkeeping = 0;
  int here = 0;
  const std::string& host = w.hosts[static_cast<size_t>(w.rank)];
  for (size_t r = 0; r < w.hosts.size(); ++r) {
    if (w.hosts[r] != host) continue;
    payload = add_sat(payload, kv_rank_bytes(largest, static_cast<int>(r)));
    bookkeeping = add_sat(bookkeeping, kv_rank_bookkeeping_bytes(largest, static_cast<int>(r)));
    ++here;
  }
  const uint64_t needed = add_sat(payload, bookkeeping);
  const uint64_t avail = w.mem_available;
  const uint64_t limit = opt.max_mem.empty() ? avail / 10 * 9 : parse_size(opt.max_mem);
  if (needed > limit) {
    throw UsageError(fmt::format(
        "--concurrency {} with --tokens {} of {} ({} per request, {} blocks of {} tokens) needs {} on host {} ({} "
        "rank(s): {} of block pools and staging buffers, {} of block tables and copy plans, for {} request(s) per "
        "pair), more than the {} allowed ({}): lower --concurrency or --tokens, raise --block-tokens, or use more "
        "hosts",
        opt.concurrency, largest.shape.tokens, plan.model.name, gb(request_bytes(largest.shape)),
        largest.shape.blocks(), largest.shape.block_tokens, gb(needed), host, here, gb(payload), gb(bookkeeping),
        opt.concurrency, gb(limit),
        opt.max_mem.empty() ? fmt::format("90% of MemAvailable {}; --max-mem sets it", gb(avail)) : "--max-mem"));
  }
}

// Counts and modes: token counts, block size against them, modes without repeats.
void resolve_sizes(const KvCacheOptions& opt, KvCachePlan& plan) {
  // The command line splits --tokens at commas, lognormal:M,S included: joined again.
  const bool lognormal = !opt.tokens.empty() && opt.tokens.front().rfind("lognormal:", 0) == 0;
  if (opt.serve && (opt.tokens.size() == 1 || lognormal)) {
    std::string text;
    for (const auto& t : opt.tokens) text += (text.empty() ? "" : ",") + t;
    plan.token_dist = parse_token_dist(text, kMaxKvTokens);
  }
  // A distribution's sizes are drawn in resolve_serve, once the request count is known.
  const bool sized = plan.token_dist.kind != TokenDist::Kind::fixed;
  for (const auto& t : sized ? std::vector<std::string>{} : opt.tokens) {
    const uint64_t n = parse_size(t);
    if (n == 0) throw UsageError("--tokens 0: a request needs at least 1 token");
    if (n > kMaxKvTokens)
      throw UsageError(
          fmt::format("--tokens {} is more than {} (4G) tokens per request: give fewer tokens", t, kMaxKvTokens));
    plan.token_counts.push_back(n);
  }
  if (opt.block_tokens < 1) throw UsageError(fmt::format("--block-tokens {} must be 1 or more", opt.block_tokens));
  for (uint64_t n : plan.token_counts) {
    if (static_cast<uint64_t>(opt.block_tokens) > n) {
      throw UsageError(
          fmt::format("--block-tokens {} is larger than the request of --tokens {}: use a block of at "
                      "most {} tokens or more tokens",
                      opt.block_tokens, n, n));
    }
  }
  for (const auto& m : opt.modes) {
    const KvMode mode = parse_kv_mode(m);
    if (mode != KvMode::contiguous && std::find(plan.modes.begin(), plan.modes.end(), mode) == plan.modes.end())
      plan.modes.push_back(mode);
  }
}

// --trace: the trace's arrival times, whole rounds over the pairs (a tail shorter than
// one round is left out); its token counts are summarised, not yet sent (one size a pool).
void resolve_trace(const KvCacheOptions& opt, KvCachePlan& plan, size_t pairs) {
  if (opt.find_max_rate)
    throw UsageError("--find-max-rate draws its own arrivals at each rate: drop --trace (or --find-max-rate)");
  std::ifstream in(opt.trace);
  if (!in) throw UsageError(fmt::format("--trace {}: cannot open it: give a readable trace file", opt.trace));
  const Trace t = parse_trace(in, opt.trace, opt.time_scale);
  const size_t per_pair = t.requests.size() / pairs;
  if (per_pair == 0)
    throw UsageError(fmt::format("--trace {} has {} request(s), fewer than the {} pairs: give a longer trace",
                                 opt.trace, t.requests.size(), pairs));
  std::vector<double> tokens;
  for (size_t i = 0; i < per_pair * pairs; ++i) {
    plan.trace_hash_ids.push_back(t.requests[i].hash_ids);
    plan.trace_arrivals.push_back(t.requests[i].arrival_s);
    tokens.push_back(static_cast<double>(t.requests[i].input_tokens));
    plan.trace_tokens.push_back(t.requests[i].input_tokens);
  }
  const Summary s = summarize(tokens);
  plan.serve_requests_per_pair = static_cast<int>(per_pair);
  plan.trace_note = fmt::format(
      "{} trace {}: {} requests over {:.3f} s (--time-scale {}), prompt tokens p50 {:.0f} p99 {:.0f} max {:.0f}",
      t.format, opt.trace, per_pair * pairs, plan.trace_arrivals.back(), opt.time_scale, s.p50, s.p99, s.max);
}

// --serve --tokens as a distribution: every request's tokens (drawn, or the trace's
// prompt lengths), and the largest, in whole blocks, as the size the pools are built for.
void resolve_request_tokens(const KvCacheOptions& opt, KvCachePlan& plan, size_t requests) {
  const TokenDist& d = plan.token_dist;
  if (d.kind == TokenDist::Kind::fixed) return;
  if (opt.find_max_rate)
    throw UsageError(
        fmt::format("--find-max-rate searches with one request size: give --tokens a count, not {}", d.text));
  if (d.kind == TokenDist::Kind::trace) {
    if (opt.trace.empty()) throw UsageError("--tokens trace takes the prompt lengths of --trace: give --trace FILE");
    plan.request_tokens = plan.trace_tokens;
    // A logged prompt of 0 tokens still holds a block; beyond the limit is refused below.
    for (auto& t : plan.request_tokens) t = std::max<uint64_t>(t, 1);
  }
  // Drawn sizes are drawn again as the run goes (kvserve_source.h): only the largest is kept.
  uint64_t most = 0;
  if (d.kind == TokenDist::Kind::trace) {
    most = *std::max_element(plan.request_tokens.begin(), plan.request_tokens.end());
  } else {
    TokenDraws draws(d, opt.seed, kMaxKvTokens);
    for (size_t i = 0; i < requests; ++i) most = std::max(most, draws.next());
  }
  if (most > kMaxKvTokens)
    throw UsageError(
        fmt::format("--tokens trace: a prompt of {} tokens in --trace {} is more than {} (4G): trim the trace", most,
                    opt.trace, kMaxKvTokens));
  const auto bt = static_cast<uint64_t>(opt.block_tokens);
  plan.token_counts = {(most + bt - 1) / bt * bt};
}

// --route and --decode-cache: prefix reuse needs every request's hash ids (a Mooncake
// trace) and its own prompt length, so that the ids' 512-token blocks are its tokens.
void resolve_route(const KvCacheOptions& opt, KvCachePlan& plan) {
  plan.route = parse_kv_route(opt.route);
  plan.base.mesh = plan.route != KvRoute::round_robin;
  if (opt.decode_cache < 0)
    throw UsageError(fmt::format("--decode-cache {} must be 0 (off) or more blocks of 512 tokens", opt.decode_cache));
  if (!std::isfinite(opt.prefill_us_per_token) || opt.prefill_us_per_token < 0)
    throw UsageError(
        fmt::format("--prefill-us-per-token {} must be microseconds 0 or above (e.g. 20)", opt.prefill_us_per_token));
  if (plan.route == KvRoute::prefix && opt.decode_cache == 0)
    throw UsageError(
        "--route prefix chooses the decode rank holding most of a request's blocks, and with --decode-cache 0 none "
        "holds any: give --decode-cache N (blocks of 512 tokens per decode rank)");
  if (opt.decode_cache == 0) return;
  if (opt.find_max_rate)
    throw UsageError("--decode-cache replays a trace's prefixes, --find-max-rate draws its own arrivals: drop one");
  if (opt.trace.empty() || plan.token_dist.kind != TokenDist::Kind::trace)
    throw UsageError(
        "--decode-cache needs each request's prompt blocks: give a Mooncake --trace FILE.jsonl (hash_ids) and "
        "--tokens trace");
}

// After the trace is read: its requests must carry hash ids.
void check_hash_ids(const KvCacheOptions& opt, const KvCachePlan& plan) {
  if (opt.decode_cache == 0) return;
  const bool any =
      std::any_of(plan.trace_hash_ids.begin(), plan.trace_hash_ids.end(), [](const auto& ids) { return !ids.empty(); });
  if (!any)
    throw UsageError(
        fmt::format("--decode-cache: --trace {} has no hash_ids: prefix reuse needs a Mooncake trace (JSONL with "
                    "hash_ids, one id per 512-token block)",
                    opt.trace));
}

// --decode-memory: a request whose KV (whole blocks) is larger than a decode rank's KV
// memory could never be placed there, whatever the route: refused before any transfer,
// naming the first such request.
void check_decode_memory(const KvCacheOptions& opt, const KvCachePlan& plan) {
  if (opt.decode_memory.empty()) return;
  const uint64_t limit = parse_size(opt.decode_memory);
  if (limit == 0) throw UsageError(fmt::format("--decode-memory {} must be above 0 (e.g. 40G)", opt.decode_memory));
  const KvShape& s = plan.base.shape;
  const auto bytes = [&](uint64_t tokens) {
    const uint64_t blocks = (tokens + s.block_tokens - 1) / s.block_tokens;
    return mul_sat(mul_sat(static_cast<uint64_t>(s.layers) * static_cast<uint64_t>(s.planes), blocks), s.block_bytes());
  };
  if (plan.token_dist.kind == TokenDist::Kind::fixed) {
    if (bytes(plan.token_counts.front()) > limit)
      throw UsageError(fmt::format(
          "--tokens {}: a request's KV is {} B, more than --decode-memory {} of a decode rank: raise --decode-memory "
          "or give fewer --tokens",
          plan.token_counts.front(), with_commas(bytes(plan.token_counts.front())), opt.decode_memory));
    return;
  }
  const bool drawn = plan.request_tokens.empty();  // a distribution: drawn again, in the run's order
  std::optional<TokenDraws> draws;
  if (drawn) draws.emplace(plan.token_dist, opt.seed, kMaxKvTokens);
  const size_t n = drawn ? plan.serve_requests : plan.request_tokens.size();
  for (size_t i = 0; i < n; ++i) {
    const uint64_t tokens = drawn ? draws->next() : plan.request_tokens[i];
    if (bytes(tokens) <= limit) continue;
    const std::string which = opt.trace.empty() ? fmt::format("request {} (--tokens {})", i, plan.token_dist.text)
                                                : fmt::format("--trace {}, its request {}", opt.trace, i + 1);
    throw UsageError(fmt::format(
        "{}: {} tokens are {} B of KV, more than --decode-memory {} of a decode rank: raise --decode-memory or {}",
        which, tokens, with_commas(bytes(tokens)), opt.decode_memory,
        opt.trace.empty() ? "narrow the --tokens distribution" : "trim the trace"));
  }
}

// --serve: one token count, a load that parses, and a request count that stays in memory.
void resolve_serve(const KvCacheOptions& opt, KvCachePlan& plan) {
  check_serve_load(opt.rate, opt.burstiness);
  resolve_route(opt, plan);
  if (plan.token_dist.kind == TokenDist::Kind::fixed && plan.token_counts.size() != 1)
    throw UsageError(
        fmt::format("--serve takes one --tokens value, got {}: give e.g. --tokens 4096", plan.token_counts.size()));
  if (!std::isfinite(opt.duration_s) || opt.duration_s < 0)
    throw UsageError(
        fmt::format("--duration {} must be seconds above 0 (or leave it out and give --requests)", opt.duration_s));
  if (opt.find_max_rate && opt.slo.empty())
    throw UsageError("--find-max-rate needs --slo, the objective it searches for (e.g. --slo p99:50ms)");
  if (!std::isfinite(opt.line_rate_gbps) || opt.line_rate_gbps < 0)
    throw UsageError(fmt::format("--line-rate {} must be Gb/s per rail above 0", opt.line_rate_gbps));
  if (!opt.slo.empty()) {
    plan.slo = parse_slo(opt.slo);
    plan.has_slo = true;
  }
  if (opt.find_max_rate) {
    if (opt.probe_requests < 1)
      throw UsageError(fmt::format("--probe-requests {} must be 1 or more (e.g. 300)", opt.probe_requests));
    plan.probe =
        probe_plan(opt.probe_warmup_s, opt.probe_duration_s, static_cast<uint64_t>(opt.probe_requests), plan.slo);
  }
  const auto pairs = static_cast<double>(kv_pairs(plan.base).size());
  if (!opt.trace.empty()) {
    resolve_trace(opt, plan, static_cast<size_t>(pairs));
    plan.serve_requests = plan.trace_arrivals.size();
    resolve_request_tokens(opt, plan, plan.trace_arrivals.size());
    check_hash_ids(opt, plan);
    check_decode_memory(opt, plan);
    return;
  }
  const double total = opt.duration_s > 0 ? std::ceil(opt.rate * opt.duration_s) : opt.requests;
  // Nothing is kept per request (the schedule is generated as the run goes, the times kept
  // in histograms); a request's id rides in a 32-bit immediate and its position in an int.
  if (std::ceil(total / pairs) * pairs > 2147483647.0)
    throw UsageError(fmt::format(
        "--serve with {:.0f} requests is more than 2,147,483,647 in one run: lower --rate or --duration", total));
  plan.serve_requests_per_pair = std::max(1, static_cast<int>(std::ceil(total / pairs)));
  plan.serve_requests = static_cast<size_t>(plan.serve_requests_per_pair) * static_cast<size_t>(pairs);
  resolve_request_tokens(opt, plan, plan.serve_requests);
  check_decode_memory(opt, plan);
}

}  // namespace

KvCachePlan resolve_kvcache(const KvCacheOptions& opt, const KvCacheWorld& w) {
  // The block pools live in host memory for now; GPU-resident KV pools come later.
  if (!w.mem.empty() && w.mem != "host") {
    throw UnsupportedError(fmt::format(
        "kvcache --mem {}: the KV block pools are host memory only so far; drop --mem (or use --mem host)", w.mem));
  }
  const int n = static_cast<int>(w.hosts.size());
  if (n < 2) {
    throw UsageError(fmt::format(
        "kvcache needs at least 2 ranks (prefill and decode), got {}: launch with mpirun -np 2 or more", n));
  }
  KvCachePlan plan;
  plan.warmup = w.warmup_iters < 0 ? 1 : w.warmup_iters;
  plan.model = model_from(opt);
  plan.dtype_bytes = parse_kv_dtype(opt.kv_dtype);
  resolve_sizes(opt, plan);
  if (opt.requests < 1) throw UsageError(fmt::format("--requests {} must be 1 or more", opt.requests));
  if (plan.warmup < 0) throw UsageError(fmt::format("-w {} must be 0 or more", plan.warmup));
  if (opt.concurrency < 1) throw UsageError(fmt::format("--concurrency {} must be 1 or more", opt.concurrency));
  if (opt.alloc_run < 1) throw UsageError(fmt::format("--alloc-run {} must be 1 or more", opt.alloc_run));
  if (opt.protocol != "auto" && opt.protocol != "write" && opt.protocol != "send")
    throw UsageError(fmt::format("unknown --protocol '{}': use auto, write or send", opt.protocol));
  KvOptions& base = plan.base;
  resolve_roles(opt, n, base);
  base.concurrency = opt.concurrency;
  base.alloc_run = opt.alloc_run;
  base.shape.layers = plan.model.layers;
  base.shape.planes = kv_planes(plan.model);
  base.shape.token_bytes = kv_plane_token_bytes(plan.model, plan.dtype_bytes);
  base.shape.block_tokens = static_cast<uint64_t>(opt.block_tokens);
  if (opt.serve) resolve_serve(opt, plan);
  check_memory(opt, w, plan);
  return plan;
}

}  // namespace railbench
