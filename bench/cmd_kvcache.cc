// railbench kvcache: the KV-cache transfer of prefill/decode disaggregation, as paged
// blocks, per mode and token count, against one contiguous write of the same bytes.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "bench/commands.h"
#include "bench/kvcache_report.h"
#include "bench/run_context.h"
#include "collectives/kvcache/geometry.h"
#include "collectives/kvcache/transfer.h"
#include "lib/bandwidth.h"
#include "lib/results.h"
#include "lib/sizes.h"

namespace railbench {

using nlohmann::json;

namespace {

// "0,1", "2-3", "0,2-3".
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

// Bytes the kernel says can be allocated without swapping.
uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

std::string gb(uint64_t bytes) {
  return fmt::format("{:.2f} GB", static_cast<double>(bytes) / 1e9);
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

}  // namespace

int run_kvcache(Bootstrap& bootstrap, const CommonOptions& common, const KvCacheOptions& opt) {
  RunContext ctx(bootstrap, common, "kvcache");
  KvModel model;
  int dtype_bytes = 2;
  std::vector<uint64_t> token_counts;
  std::vector<KvMode> modes;
  KvOptions base;
  int warmup = common.warmup_iters < 0 ? 1 : common.warmup_iters;
  ctx.agree([&] {
    // The block pools live in host memory for now; GPU-resident KV pools come later.
    if (!common.mem.empty() && common.mem != "host") {
      throw UnsupportedError(fmt::format(
          "kvcache --mem {}: the KV block pools are host memory only so far; drop --mem (or use --mem host)",
          common.mem));
    }
    if (ctx.size() < 2) {
      throw UsageError(fmt::format(
          "kvcache needs at least 2 ranks (prefill and decode), got {}: launch with mpirun -np 2 or more", ctx.size()));
    }
    model = model_from(opt);
    dtype_bytes = parse_kv_dtype(opt.kv_dtype);
    for (const auto& t : opt.tokens) {
      const uint64_t n = parse_size(t);
      if (n == 0) throw UsageError("--tokens 0: a request needs at least 1 token");
      token_counts.push_back(n);
    }
    if (opt.block_tokens < 1) throw UsageError(fmt::format("--block-tokens {} must be 1 or more", opt.block_tokens));
    for (uint64_t n : token_counts) {
      if (static_cast<uint64_t>(opt.block_tokens) > n) {
        throw UsageError(
            fmt::format("--block-tokens {} is larger than the request of --tokens {}: use a block of at "
                        "most {} tokens or more tokens",
                        opt.block_tokens, n, n));
      }
    }
    for (const auto& m : opt.modes) {
      const KvMode mode = parse_kv_mode(m);
      if (mode != KvMode::contiguous && std::find(modes.begin(), modes.end(), mode) == modes.end())
        modes.push_back(mode);
    }
    if (opt.requests < 1) throw UsageError(fmt::format("--requests {} must be 1 or more", opt.requests));
    if (warmup < 0) throw UsageError(fmt::format("-w {} must be 0 or more", warmup));
    if (opt.concurrency < 1) throw UsageError(fmt::format("--concurrency {} must be 1 or more", opt.concurrency));
    if (opt.alloc_run < 1) throw UsageError(fmt::format("--alloc-run {} must be 1 or more", opt.alloc_run));
    if (opt.protocol != "auto" && opt.protocol != "write" && opt.protocol != "send")
      throw UsageError(fmt::format("unknown --protocol '{}': use auto, write or send", opt.protocol));
    const int n = ctx.size();
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
        if (r >= n)
          throw UsageError(fmt::format("rank {} in --prefill-ranks/--decode-ranks: ranks are 0..{}", r, n - 1));
        if (!seen.insert(r).second)
          throw UsageError(
              fmt::format("rank {} is listed twice in --prefill-ranks/--decode-ranks: one role per rank", r));
      }
    }
    if (base.decode.empty()) throw UsageError("no decode ranks left: give --decode-ranks");
    base.concurrency = opt.concurrency;
    base.alloc_run = opt.alloc_run;
    base.shape.layers = model.layers;
    base.shape.planes = kv_planes(model);
    base.shape.token_bytes = kv_plane_token_bytes(model, dtype_bytes);
    base.shape.block_tokens = static_cast<uint64_t>(opt.block_tokens);
    // Memory, before anything is allocated: every rank of this host, at the largest count.
    KvOptions largest = base;
    largest.shape.tokens = *std::max_element(token_counts.begin(), token_counts.end());
    uint64_t needed = 0;
    int here = 0;
    for (int r = 0; r < n; ++r) {
      if (ctx.hosts()[static_cast<size_t>(r)] != ctx.hosts()[static_cast<size_t>(ctx.rank())]) continue;
      needed += kv_rank_bytes(largest, r);
      ++here;
    }
    const uint64_t avail = mem_available();
    const uint64_t limit = opt.max_mem.empty() ? avail / 10 * 9 : parse_size(opt.max_mem);
    if (needed > limit) {
      throw UsageError(fmt::format(
          "--concurrency {} with --tokens {} of {} ({} per request) needs {} on host {} ({} rank(s): block pool and "
          "staging buffer of {} request(s) per pair), more than the {} allowed ({}): lower --concurrency or "
          "--tokens, or use more hosts",
          opt.concurrency, largest.shape.tokens, model.name, gb(largest.shape.request_bytes()), gb(needed),
          ctx.hosts()[static_cast<size_t>(ctx.rank())], here, opt.concurrency, gb(limit),
          opt.max_mem.empty() ? fmt::format("90% of MemAvailable {}; --max-mem sets it", gb(avail)) : "--max-mem"));
    }
  });
  ctx.open_transport();
  Transport& t = ctx.transport();
  const auto& caps = t.caps();
  const bool can_write = caps.write && caps.write_with_imm;
  ctx.agree([&] {
    if (opt.protocol == "write" && !can_write)
      throw UnsupportedError(
          fmt::format("--protocol write needs RDMA write with immediate, which {} ({}) lacks: use "
                      "--protocol send",
                      t.name(), t.provider()));
  });
  base.protocol =
      opt.protocol == "send" || (opt.protocol == "auto" && !can_write) ? KvProtocol::send : KvProtocol::write;
  base.rails = t.num_rails();
  const auto pairs = kv_pairs(base);

  std::string pair_text;
  for (const auto& p : pairs) pair_text += fmt::format("{}{}->{}", pair_text.empty() ? "" : " ", p.prefill, p.decode);
  const std::string protocol = base.protocol == KvProtocol::write ? "write" : "send";
  json modes_json = json::array();
  for (KvMode m : modes) modes_json.push_back(to_string(m));
  json config{{"model", model.name},
              {"attention", model.attention == KvAttention::gqa ? "gqa" : "mla"},
              {"layers", model.layers},
              {"kv_heads", model.kv_heads},
              {"head_dim", model.head_dim},
              {"latent_dim", model.latent_dim},
              {"rope_dim", model.rope_dim},
              {"kv_dtype", opt.kv_dtype},
              {"bytes_per_token", kv_bytes_per_token(model, dtype_bytes)},
              {"formula", kv_formula(model, dtype_bytes)},
              {"tokens", token_counts},
              {"block_tokens", opt.block_tokens},
              {"modes", modes_json},
              {"prefill_ranks", base.prefill},
              {"decode_ranks", base.decode},
              {"requests", opt.requests},
              {"warmup_requests", warmup},
              {"concurrency", opt.concurrency},
              {"alloc_run", opt.alloc_run},
              {"protocol", protocol},
              {"ordered_writes", caps.ordered_writes}};
  ResultsFile results(ctx.is_root() ? common.json_path : "", ctx.results_header(config));

  ctx.print(fmt::format("# railbench kvcache: {} ({}), transport {} ({}), {} ranks on {} host(s), {} rail(s)",
                        model.display, opt.kv_dtype, t.name(), t.provider(), ctx.size(), ctx.num_hosts(),
                        t.num_rails()));
  ctx.print(fmt::format("# KV bytes per token: {}", kv_formula(model, dtype_bytes)));
  for (uint64_t n : token_counts) {
    ctx.print(fmt::format("#   {} tokens: {} B ({})", n, with_commas(n * kv_bytes_per_token(model, dtype_bytes)),
                          gb(n * kv_bytes_per_token(model, dtype_bytes))));
  }
  ctx.print(
      fmt::format("# pairs (prefill->decode): {}; {} timed + {} warm-up request(s) per pair and mode, {} in "
                  "flight per pair; blocks of {} tokens, allocator runs of {} block(s); protocol {}{}",
                  pair_text, opt.requests, warmup, opt.concurrency, opt.block_tokens, opt.alloc_run, protocol,
                  base.protocol == KvProtocol::write
                      ? (caps.ordered_writes ? " (writes ordered per rail: each rail's last write carries the imm)"
                                             : " (unordered: imm after the writes complete)")
                      : ""));
  ctx.print(
      "# time: per request, from the prefill rank's first post until the decode rank's ack arrives (decode acks when "
      "it has seen the completion and, staged, unpacked); GB/s = bytes/req / p50; vs 1w = GB/s / one contiguous "
      "write's GB/s");
  ctx.print("#");
  print_kv_header(ctx);

  uint64_t total_wrong = 0;
  std::map<std::string, double> efficiency;  // per mode, at the largest token count
  try {
    for (uint64_t tokens : token_counts) {
      KvOptions o = base;
      o.shape.tokens = tokens;
      KvTransfer transfer(ctx.progress(), ctx.bootstrap(), o);
      double contiguous_gbps = 0;
      std::vector<KvMode> order{KvMode::contiguous};
      order.insert(order.end(), modes.begin(), modes.end());
      for (KvMode mode : order) {
        ctx.progress_note(fmt::format("kvcache {} tokens: {}", tokens, to_string(mode)));
        const KvRunResult run = transfer.run(mode, warmup, opt.requests, false);
        KvRecord rec;
        rec.tokens = tokens;
        rec.mode = to_string(mode);
        rec.bytes = o.shape.request_bytes();
        rec.blocks = o.shape.units();
        const auto ops = ctx.bootstrap().all_gather_value<uint64_t>(run.ops_per_request);
        rec.ops = *std::max_element(ops.begin(), ops.end());
        std::vector<double> all_us;
        for (const auto& v : ctx.bootstrap().all_gather_vectors(run.request_us))
          all_us.insert(all_us.end(), v.begin(), v.end());
        rec.request_us = summarize(all_us);
        const auto walls = ctx.bootstrap().all_gather_value<double>(run.wall_s);
        const double wall = *std::max_element(walls.begin(), walls.end());
        const double seconds = rec.request_us.p50 * 1e-6;
        rec.gbps = gbps(static_cast<double>(rec.bytes), seconds);
        rec.blocks_per_s = seconds > 0 ? static_cast<double>(rec.blocks) / seconds : 0;
        rec.aggregate_gbps = gbps(static_cast<double>(rec.bytes) * static_cast<double>(rec.request_us.count), wall);
        if (mode == KvMode::contiguous) contiguous_gbps = rec.gbps;
        rec.ratio = contiguous_gbps > 0 ? rec.gbps / contiguous_gbps : 0;
        if (common.check) {
          // Untimed: every block of C+1 requests per pair filled with its pattern and
          // verified on the decode side (slots are reused, so stale data would show).
          const KvRunResult checked = transfer.run(mode, 0, opt.concurrency + 1, true);
          for (uint64_t w : ctx.bootstrap().all_gather_value<uint64_t>(checked.wrong)) rec.wrong += w;
          rec.checked = true;
          total_wrong += rec.wrong;
        }
        efficiency[rec.mode] = rec.ratio;
        print_kv_row(ctx, rec);
        results.add(to_json(rec));
      }
    }
  } catch (const Error& e) {
    results.finish(false, e.what());
    throw;
  }
  ctx.progress_note("");
  const std::string basis =
      efficiency.count("per-block") ? "per-block" : to_string(modes.empty() ? KvMode::contiguous : modes.front());
  json what_if =
      print_what_if(ctx, load_model_presets(model_config_dir()), dtype_bytes, opt.kv_dtype, basis, efficiency[basis]);
  what_if["efficiency_by_mode"] = efficiency;
  results.set("what_if", what_if);
  if (common.check) ctx.print(fmt::format("# Wrong bytes : {} {}", total_wrong, total_wrong ? "FAILED" : "OK"));
  results.set("channels", ctx.gather_channels());
  results.finish(true);
  if (!common.json_path.empty()) ctx.print(fmt::format("# results: {}", common.json_path));
  return total_wrong ? 1 : 0;
}

}  // namespace railbench
