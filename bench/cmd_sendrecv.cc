// railbench sendrecv: every pair of ranks, in rounds of disjoint pairs, on every rail.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "bench/commands.h"
#include "bench/pair_test.h"
#include "bench/run_context.h"
#include "bench/sweep.h"
#include "lib/gpu.h"
#include "lib/results.h"
#include "lib/schedule.h"
#include "lib/sizes.h"

namespace railbench {

using nlohmann::json;

namespace {

// Windows larger than this many bytes add time, not information: big messages
// saturate the link with few in flight.
constexpr uint64_t kMaxWindowBytes = 64ULL << 20;

int window_for(uint64_t bytes, int window) {
  const uint64_t by_bytes = std::max<uint64_t>(1, kMaxWindowBytes / std::max<uint64_t>(bytes, 1));
  return static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(window), by_bytes));
}

// Merges what each rank of a pair measured (the leader the latency, each initiator
// its direction) into one record per (pair, rail).
std::vector<PairRecord> merge_pairs(const std::vector<std::string>& per_rank) {
  std::map<std::tuple<int, int, int>, PairRecord> merged;
  for (const auto& text : per_rank) {
    for (const auto& pj : json::parse(text)) {
      SendRecvRecord wrapper = sendrecv_from_json(json{{"bytes", 0}, {"op", ""}, {"pairs", json::array({pj})}});
      const PairRecord& p = wrapper.pairs[0];
      auto& m = merged[{p.rail, p.a, p.b}];
      m.a = p.a;
      m.b = p.b;
      m.rail = p.rail;
      if (p.latency_us.count) m.latency_us = p.latency_us;
      if (p.bw_ab.count) m.bw_ab = p.bw_ab;
      if (p.bw_ba.count) m.bw_ba = p.bw_ba;
      if (p.bw_bidir.count) m.bw_bidir = p.bw_bidir;
      m.wrong += p.wrong;
    }
  }
  std::vector<PairRecord> out;
  for (auto& [k, v] : merged) out.push_back(v);
  return out;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

void print_header(const RunContext& ctx, const SendRecvOptions& opt, size_t npairs, bool per_pair) {
  const Transport& t = ctx.transport();
  ctx.print(
      fmt::format("# railbench sendrecv: verb {}, transport {} ({}), {} ranks on {} host(s), {} rail(s), {} "
                  "pairs per rail",
                  opt.verb, t.name(), t.provider(), ctx.size(), ctx.num_hosts(), t.num_rails(), npairs));
  ctx.print(
      "# latency: ping-pong RTT/2 per iteration (read: full round trip); bandwidth: GB/s (1e9 B/s), median "
      "over windows");
  ctx.print("#");
  if (per_pair) {
    ctx.print(fmt::format("# {:>10} {:>4} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>7}", "size", "rail", "pair",
                          "lat p50", "lat p99", "lat p99.9", "a->b", "b->a", "bidir", "#wrong"));
    ctx.print(fmt::format("# {:>10} {:>4} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>7}", "(B)", "", "", "(us)",
                          "(us)", "(us)", "(GB/s)", "(GB/s)", "(GB/s)", ""));
  } else {
    ctx.print(fmt::format("# {:>10} {:>4} {:>6} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>7}", "size", "rail", "pairs",
                          "lat p50", "lat p99", "lat p99.9", "uni min", "uni med", "bidir med", "#wrong"));
    ctx.print(fmt::format("# {:>10} {:>4} {:>6} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>7}", "(B)", "", "",
                          "(med,us)", "(worst)", "(worst)", "(GB/s)", "(GB/s)", "(GB/s)", ""));
  }
}

void print_size(const RunContext& ctx, uint64_t bytes, const std::vector<PairRecord>& pairs, bool per_pair) {
  std::map<int, std::vector<const PairRecord*>> by_rail;
  for (const auto& p : pairs) by_rail[p.rail].push_back(&p);
  for (const auto& [rail, list] : by_rail) {
    if (per_pair) {
      for (const PairRecord* p : list) {
        ctx.print(fmt::format("  {:>10} {:>4} {:>9} {:>9.2f} {:>9.2f} {:>10.2f} {:>10.3f} {:>10.3f} {:>10.3f} {:>7}",
                              bytes, rail, fmt::format("{}-{}", p->a, p->b), p->latency_us.p50, p->latency_us.p99,
                              p->latency_us.p999, p->bw_ab.p50, p->bw_ba.p50, p->bw_bidir.p50, p->wrong));
      }
      continue;
    }
    std::vector<double> lat50, uni, bidir;
    double lat99 = 0, lat999 = 0;
    uint64_t wrong = 0;
    for (const PairRecord* p : list) {
      lat50.push_back(p->latency_us.p50);
      lat99 = std::max(lat99, p->latency_us.p99);
      lat999 = std::max(lat999, p->latency_us.p999);
      uni.push_back(p->bw_ab.p50);
      uni.push_back(p->bw_ba.p50);
      bidir.push_back(p->bw_bidir.p50);
      wrong += p->wrong;
    }
    ctx.print(fmt::format("  {:>10} {:>4} {:>6} {:>9.2f} {:>9.2f} {:>10.2f} {:>10.3f} {:>10.3f} {:>10.3f} {:>7}", bytes,
                          rail, list.size(), median_of(lat50), lat99, lat999, *std::min_element(uni.begin(), uni.end()),
                          median_of(uni), median_of(bidir), wrong));
  }
}

// The pairs a technician should look at first: lowest bandwidth at the largest size,
// highest p99 latency at the smallest.
void print_slowest(const RunContext& ctx, const std::vector<SendRecvRecord>& records) {
  if (records.empty() || records.front().pairs.size() < 2) return;
  const auto& big = records.back();
  const auto& small = records.front();
  std::vector<const PairRecord*> by_bw, by_lat;
  for (const auto& p : big.pairs) by_bw.push_back(&p);
  for (const auto& p : small.pairs) by_lat.push_back(&p);
  auto uni_min = [](const PairRecord* p) { return std::min(p->bw_ab.p50, p->bw_ba.p50); };
  std::sort(by_bw.begin(), by_bw.end(), [&](auto* x, auto* y) { return uni_min(x) < uni_min(y); });
  std::sort(by_lat.begin(), by_lat.end(), [](auto* x, auto* y) { return x->latency_us.p99 > y->latency_us.p99; });
  const size_t k = std::min<size_t>(5, by_bw.size());
  ctx.print("#");
  ctx.print(fmt::format("# slowest pairs by bandwidth at {} B (median GB/s, lower direction):", big.bytes));
  for (size_t i = 0; i < k; ++i) {
    const auto* p = by_bw[i];
    ctx.print(fmt::format("#   {}  rail {}  ranks {}-{} ({} / {})  a->b {:.3f}  b->a {:.3f}  bidir {:.3f}", i + 1,
                          p->rail, p->a, p->b, ctx.hosts()[p->a], ctx.hosts()[p->b], p->bw_ab.p50, p->bw_ba.p50,
                          p->bw_bidir.p50));
  }
  ctx.print(fmt::format("# slowest pairs by p99 latency at {} B (us):", small.bytes));
  for (size_t i = 0; i < k; ++i) {
    const auto* p = by_lat[i];
    ctx.print(fmt::format("#   {}  rail {}  ranks {}-{} ({} / {})  p50 {:.2f}  p99 {:.2f}  p99.9 {:.2f}", i + 1,
                          p->rail, p->a, p->b, ctx.hosts()[p->a], ctx.hosts()[p->b], p->latency_us.p50,
                          p->latency_us.p99, p->latency_us.p999));
  }
}

}  // namespace

int run_sendrecv(Bootstrap& bootstrap, const CommonOptions& common, const SendRecvOptions& opt) {
  RunContext ctx(bootstrap, common, "sendrecv");
  Sweep sweep;
  Verb verb = Verb::send;
  ctx.agree([&] {
    if (ctx.size() < 2) {
      throw UsageError(
          fmt::format("sendrecv needs at least 2 ranks, got {}: launch with mpirun -np 2 or more", ctx.size()));
    }
    sweep = make_sweep(common, SweepDefaults{"8", "4M", 1000, 100});
    verb = parse_verb(opt.verb);
    if (opt.window < 1) throw UsageError(fmt::format("--window {} must be 1 or more", opt.window));
    if (opt.bw_iters < 1) throw UsageError(fmt::format("--bw-iters {} must be 1 or more", opt.bw_iters));
    if (sweep.sizes.front() == 0) throw UsageError("sendrecv sizes must be 1 byte or more: use -b 1 or larger");
  });
  ctx.open_transport();
  Transport& t = ctx.transport();
  ctx.agree([&] {
    const auto& c = t.caps();
    if (verb == Verb::write && !(c.write && c.write_with_imm)) {
      throw UnsupportedError(
          fmt::format("--verb write needs RDMA write with immediate, which {} ({}) lacks: use "
                      "--verb send",
                      t.name(), t.provider()));
    }
    if (verb == Verb::read && !c.read) {
      throw UnsupportedError(
          fmt::format("--verb read needs RDMA read, which {} ({}) lacks: use --verb send", t.name(), t.provider()));
    }
    if (sweep.sizes.back() > c.max_msg_size) {
      throw UsageError(fmt::format("-e {} exceeds the transport's largest message ({} B): lower -e", sweep.sizes.back(),
                                   c.max_msg_size));
    }
  });

  // One set of buffers serves every pair: a rank is in one pair per round.
  const size_t max_bytes = sweep.sizes.back();
  // Tokens live in the same memory as the data: NCCL moves GPU memory only.
  const MemoryKind mem = ctx.memory_kind();
  std::unique_ptr<gpu::Buffer> src, dst, tokens;
  std::unique_ptr<MemoryRegion> src_mr, dst_mr, tok_mr;
  ctx.agree([&] {
    src = std::make_unique<gpu::Buffer>(mem, max_bytes);
    dst = std::make_unique<gpu::Buffer>(mem, max_bytes);
    tokens = std::make_unique<gpu::Buffer>(mem, 64);
    src_mr = t.register_memory(src->data(), src->size(), mem);
    dst_mr = t.register_memory(dst->data(), dst->size(), mem);
    tok_mr = t.register_memory(tokens->data(), tokens->size(), mem);
  });
  PairBuffers buffers{src_mr.get(), dst_mr.get(), tok_mr.get(), {}, {}};
  for (const auto& blob : ctx.bootstrap().all_gather_v(src_mr->remote_key().serialize()))
    buffers.peer_src.push_back(RemoteKey::deserialize(blob));
  for (const auto& blob : ctx.bootstrap().all_gather_v(dst_mr->remote_key().serialize()))
    buffers.peer_dst.push_back(RemoteKey::deserialize(blob));
  PairTest test(ctx.progress(), buffers, verb, common.check);

  const auto rounds = circle_schedule(ctx.size());
  const size_t npairs = static_cast<size_t>(ctx.size()) * (ctx.size() - 1) / 2;
  const bool per_pair = opt.all_pairs || npairs <= 8;

  json config{{"min_bytes", sweep.sizes.front()},
              {"max_bytes", sweep.sizes.back()},
              {"step_factor", common.step_factor},
              {"iters", sweep.iters},
              {"warmup_iters", sweep.warmup},
              {"verb", opt.verb},
              {"window", opt.window},
              {"bw_iters", opt.bw_iters},
              {"rounds", rounds.size()},
              {"pairs_per_rail", npairs}};
  ResultsFile results(ctx.is_root() ? common.json_path : "", ctx.results_header(config));
  print_header(ctx, opt, npairs, per_pair);

  std::vector<SendRecvRecord> records;
  uint64_t total_wrong = 0;
  try {
    for (size_t si = 0; si < sweep.sizes.size(); ++si) {
      const uint64_t bytes = sweep.sizes[si];
      const int window = window_for(bytes, opt.window);
      std::vector<PairRecord> mine;
      for (int rail = 0; rail < t.num_rails(); ++rail) {
        for (size_t r = 0; r < rounds.size(); ++r) {
          ctx.progress_note(fmt::format("sendrecv {} B: rail {} round {}/{}", bytes, rail, r + 1, rounds.size()));
          const int peer = peer_in_round(rounds[r], ctx.rank());
          if (peer >= 0) {
            const bool leader = ctx.rank() < peer;
            const int a = std::min(ctx.rank(), peer), b = std::max(ctx.rank(), peer);
            PairRecord rec;
            rec.a = a;
            rec.b = b;
            rec.rail = rail;
            const auto seed = static_cast<uint32_t>(si * 7919 + static_cast<size_t>(rail));
            auto lat = test.latency(peer, rail, bytes, sweep.warmup, sweep.iters, leader);
            if (leader) rec.latency_us = summarize(lat);
            auto ab = test.stream(peer, rail, bytes, window, 1, opt.bw_iters, a, seed, &rec.wrong);
            if (!ab.empty()) rec.bw_ab = summarize(ab);
            auto ba = test.stream(peer, rail, bytes, window, 1, opt.bw_iters, b, seed + 1, &rec.wrong);
            if (!ba.empty()) rec.bw_ba = summarize(ba);
            auto bi = test.bidirectional(peer, rail, bytes, window, 1, opt.bw_iters);
            if (leader) rec.bw_bidir = summarize(bi);
            mine.push_back(rec);
          }
          // Rounds must not overlap, or pairs would share links and measure each other.
          ctx.bootstrap().barrier();
        }
      }
      SendRecvRecord local{bytes, opt.verb, mine};
      auto gathered = ctx.bootstrap().all_gather_strings(to_json(local).at("pairs").dump());
      SendRecvRecord rec{bytes, opt.verb, merge_pairs(gathered)};
      for (const auto& p : rec.pairs) total_wrong += p.wrong;
      print_size(ctx, bytes, rec.pairs, per_pair);
      results.add(to_json(rec));
      records.push_back(std::move(rec));
    }
  } catch (const Error& e) {
    results.finish(false, e.what());
    throw;
  }
  ctx.progress_note("");
  print_slowest(ctx, records);
  if (common.check) ctx.print(fmt::format("# Wrong bytes : {} {}", total_wrong, total_wrong ? "FAILED" : "OK"));
  results.set("channels", ctx.gather_channels());
  results.finish(true);
  if (ctx.is_root() && !common.json_path.empty()) ctx.print(fmt::format("# results: {}", common.json_path));
  return total_wrong ? 1 : 0;
}

}  // namespace railbench
