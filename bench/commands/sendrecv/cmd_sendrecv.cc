// railbench sendrecv: every pair of ranks, in rounds of disjoint pairs, on every rail.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/runner/burn_in.h"
#include "bench/runner/pair_test.h"
#include "bench/runner/records.h"
#include "bench/runner/results_run.h"
#include "bench/runner/run_context.h"
#include "bench/runner/sweep.h"
#include "lib/core/schedule.h"
#include "lib/core/sizes.h"
#include "lib/core/stats.h"
#include "lib/results/results.h"
#include "lib/transport/gpu.h"

namespace railbench {

using nlohmann::json;

namespace {

struct SendRecvOptions {
  std::string verb = "send";           // send, write, read
  std::string write_latency = "auto";  // poll (ib_write_lat), imm, auto: poll on host memory
  int window = 64;                     // messages in flight per bandwidth iteration
  int bw_iters = 20;                   // timed bandwidth iterations (windows) per direction
  bool all_pairs = false;              // print every pair at every size
};

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

void print_header(const RunContext& ctx, const SendRecvOptions& opt, size_t npairs, bool per_pair) {
  const Transport& t = ctx.transport();
  ctx.print(
      fmt::format("# railbench sendrecv: verb {}, transport {} ({}), {} ranks on {} host(s), {} rail(s), {} "
                  "pairs per rail",
                  opt.verb, t.name(), t.provider(), ctx.size(), ctx.num_hosts(), t.num_rails(), npairs));
  ctx.print(
      "# latency: ping-pong RTT/2 per iteration (read: full round trip); bandwidth: GB/s (1e9 B/s), median "
      "over windows");
  if (opt.verb == "write") {
    ctx.print(opt.write_latency == "poll"
                  ? "# write latency: the responder polls the last byte of its buffer (as perftest's ib_write_lat)"
                  : "# write latency: write-with-immediate, the responder waits for its completion (not "
                    "ib_write_lat's method: --write-latency poll)");
  }
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
                          rail, list.size(), median(lat50), lat99, lat999, *std::min_element(uni.begin(), uni.end()),
                          median(uni), median(bidir), wrong));
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

// Every pair of ranks, in rounds of disjoint pairs (a rank is in one pair per round, so
// one set of buffers serves every pair), on every rail, at every size.
class SendRecvBench {
 public:
  SendRecvBench(Bootstrap& bootstrap, const CommonOptions& common, const SendRecvOptions& opt)
      : ctx_(bootstrap, common, "sendrecv"), common_(common), opt_(opt) {}
  // The buffers and regions below go before ctx_: close the transport first (see
  // RunContext::close_transport), also when run() throws.
  ~SendRecvBench() { ctx_.close_transport(); }
  SendRecvBench(const SendRecvBench&) = delete;
  SendRecvBench& operator=(const SendRecvBench&) = delete;
  int run();

 private:
  void resolve();
  void allocate();
  PairRecord measure_pair(size_t si, int rail, int peer);
  SendRecvRecord run_size(size_t si);
  void log_window(BurnInLog& log, const SendRecvRecord& largest) const;
  void print_window(const BurnInLog& log, const SendRecvRecord& largest, int pass) const;

  RunContext ctx_;
  const CommonOptions& common_;
  SendRecvOptions opt_;  // a copy: resolve() settles --write-latency auto
  Sweep sweep_;
  BurnInPlan burn_in_;
  Verb verb_ = Verb::send;
  WriteLatency write_latency_ = WriteLatency::poll;
  std::unique_ptr<gpu::Buffer> src_, dst_, tokens_;
  std::unique_ptr<MemoryRegion> src_mr_, dst_mr_, tok_mr_;
  std::unique_ptr<PairTest> test_;
  std::vector<Round> rounds_;
};

void SendRecvBench::resolve() {
  ctx_.agree([&] {
    if (ctx_.size() < 2) {
      throw UsageError(
          fmt::format("sendrecv needs at least 2 ranks, got {}: launch with mpirun -np 2 or more", ctx_.size()));
    }
    sweep_ = make_sweep(common_, SweepDefaults{"8", "4M", 1000, 100});
    burn_in_ = make_burn_in_plan(common_.duration, common_.cycles);
    verb_ = parse_verb(opt_.verb);
    if (opt_.write_latency != "auto") parse_write_latency(opt_.write_latency);  // bad input before connecting
    if (opt_.window < 1) throw UsageError(fmt::format("--window {} must be 1 or more", opt_.window));
    if (opt_.bw_iters < 1) throw UsageError(fmt::format("--bw-iters {} must be 1 or more", opt_.bw_iters));
    if (sweep_.sizes.front() == 0) throw UsageError("sendrecv sizes must be 1 byte or more: use -b 1 or larger");
  });
  ctx_.open_transport();
  const Transport& t = ctx_.transport();
  ctx_.agree([&] {
    const auto& c = t.caps();
    if (verb_ == Verb::write && !(c.write && c.write_with_imm)) {
      throw UnsupportedError(
          fmt::format("--verb write needs RDMA write with immediate, which {} ({}) lacks: use "
                      "--verb send",
                      t.name(), t.provider()));
    }
    if (opt_.write_latency == "auto") {
      // Polling a byte needs the buffer where the CPU can read it.
      opt_.write_latency = ctx_.memory_kind() == MemoryKind::cuda ? "imm" : "poll";
    } else if (parse_write_latency(opt_.write_latency) == WriteLatency::poll &&
               ctx_.memory_kind() == MemoryKind::cuda) {
      throw UsageError(
          "--write-latency poll reads the last byte of the buffer on the CPU, and --mem cuda puts it in GPU "
          "memory: use --write-latency imm (or auto) with GPU memory");
    }
    write_latency_ = parse_write_latency(opt_.write_latency);
    if (verb_ == Verb::read && !c.read) {
      throw UnsupportedError(
          fmt::format("--verb read needs RDMA read, which {} ({}) lacks: use --verb send", t.name(), t.provider()));
    }
    if (sweep_.sizes.back() > c.max_msg_size) {
      throw UsageError(fmt::format("-e {} exceeds the transport's largest message ({} B): lower -e",
                                   sweep_.sizes.back(), c.max_msg_size));
    }
  });
}

void SendRecvBench::allocate() {
  Transport& t = ctx_.transport();
  const size_t max_bytes = sweep_.sizes.back();
  // Tokens live in the same memory as the data: NCCL moves GPU memory only.
  const MemoryKind mem = ctx_.memory_kind();
  ctx_.agree([&] {
    src_ = std::make_unique<gpu::Buffer>(mem, max_bytes);
    dst_ = std::make_unique<gpu::Buffer>(mem, max_bytes);
    tokens_ = std::make_unique<gpu::Buffer>(mem, 64);
    src_mr_ = t.register_memory(src_->data(), src_->size(), mem);
    dst_mr_ = t.register_memory(dst_->data(), dst_->size(), mem);
    tok_mr_ = t.register_memory(tokens_->data(), tokens_->size(), mem);
  });
  PairBuffers buffers{src_mr_.get(), dst_mr_.get(), tok_mr_.get(), {}, {}};
  for (const auto& blob : ctx_.bootstrap().all_gather_v(src_mr_->remote_key().serialize()))
    buffers.peer_src.push_back(RemoteKey::deserialize(blob));
  for (const auto& blob : ctx_.bootstrap().all_gather_v(dst_mr_->remote_key().serialize()))
    buffers.peer_dst.push_back(RemoteKey::deserialize(blob));
  test_ = std::make_unique<PairTest>(ctx_.progress(), buffers, verb_, common_.check, write_latency_);
  rounds_ = circle_schedule(ctx_.size());
}

// This rank's side of one pair test: the leader keeps the latency and both ways, each
// initiator its own direction.
PairRecord SendRecvBench::measure_pair(size_t si, int rail, int peer) {
  const uint64_t bytes = sweep_.sizes[si];
  const int window = window_for(bytes, opt_.window);
  const bool leader = ctx_.rank() < peer;
  const int a = std::min(ctx_.rank(), peer), b = std::max(ctx_.rank(), peer);
  PairRecord rec;
  rec.a = a;
  rec.b = b;
  rec.rail = rail;
  const auto seed = static_cast<uint32_t>(si * 7919 + static_cast<size_t>(rail));
  auto lat = test_->latency(peer, rail, bytes, sweep_.warmup, sweep_.iters, leader);
  if (leader) rec.latency_us = summarize(lat);
  auto ab = test_->stream(peer, rail, bytes, window, 1, opt_.bw_iters, a, seed, &rec.wrong);
  if (!ab.empty()) rec.bw_ab = summarize(ab);
  auto ba = test_->stream(peer, rail, bytes, window, 1, opt_.bw_iters, b, seed + 1, &rec.wrong);
  if (!ba.empty()) rec.bw_ba = summarize(ba);
  auto bi = test_->bidirectional(peer, rail, bytes, window, 1, opt_.bw_iters);
  if (leader) rec.bw_bidir = summarize(bi);
  return rec;
}

SendRecvRecord SendRecvBench::run_size(size_t si) {
  const uint64_t bytes = sweep_.sizes[si];
  ctx_.sweep_step(si + 1, sweep_.sizes.size(), bytes);
  std::vector<PairRecord> mine;
  for (int rail = 0; rail < ctx_.transport().num_rails(); ++rail) {
    for (size_t r = 0; r < rounds_.size(); ++r) {
      ctx_.status().update(fmt::format("sendrecv: size {}/{} ({}), rail {} round {}/{}, {} elapsed", si + 1,
                                       sweep_.sizes.size(), format_size(bytes), rail, r + 1, rounds_.size(),
                                       format_clock(ctx_.status().elapsed_s())));
      const int peer = peer_in_round(rounds_[r], ctx_.rank());
      if (peer >= 0) mine.push_back(measure_pair(si, rail, peer));
      // Rounds must not overlap, or pairs would share links and measure each other.
      ctx_.bootstrap().barrier();
    }
  }
  SendRecvRecord local{bytes, opt_.verb, mine};
  // To every rank: each rank's exit code counts the wrong bytes of every pair.
  auto gathered = ctx_.bootstrap().all_gather_strings(to_json(local).at("pairs").dump());
  return SendRecvRecord{bytes, opt_.verb, merge_pairs(gathered)};
}

// A window's figure for each pair and rail: its lower direction's median bandwidth at the
// largest size (where bandwidth, not latency, sets the time); its rail is its group.
void SendRecvBench::log_window(BurnInLog& log, const SendRecvRecord& largest) const {
  for (const PairRecord& p : largest.pairs) {
    log.add(fmt::format("rail{} ranks {}-{}", p.rail, p.a, p.b), fmt::format("rail{}", p.rail), "GB/s",
            std::min(p.bw_ab.p50, p.bw_ba.p50));
  }
}

// One line for a burn-in pass: when it ran and the range of its pairs' figures.
void SendRecvBench::print_window(const BurnInLog& log, const SendRecvRecord& largest, int pass) const {
  double lo = 0, hi = 0;
  for (size_t i = 0; i < largest.pairs.size(); ++i) {
    const PairRecord& p = largest.pairs[i];
    const double gbps = std::min(p.bw_ab.p50, p.bw_ba.p50);
    lo = i == 0 ? gbps : std::min(lo, gbps);
    hi = std::max(hi, gbps);
  }
  const WindowTime& t = log.times().back();
  ctx_.print(fmt::format("# burn-in pass {} at +{:.1f} s ({}), {:.1f} s: {} B, pairs {:.3f} .. {:.3f} GB/s", pass,
                         t.start_s, t.wall, t.end_s - t.start_s, largest.bytes, lo, hi));
}

int SendRecvBench::run() {
  resolve();
  allocate();
  const size_t npairs = static_cast<size_t>(ctx_.size()) * (ctx_.size() - 1) / 2;
  const bool per_pair = opt_.all_pairs || npairs <= 8;
  json config{{"min_bytes", sweep_.sizes.front()},
              {"max_bytes", sweep_.sizes.back()},
              {"step_factor", common_.step_factor},
              {"iters", sweep_.iters},
              {"warmup_iters", sweep_.warmup},
              {"verb", opt_.verb},
              {"window", opt_.window},
              {"bw_iters", opt_.bw_iters},
              {"rounds", rounds_.size()},
              {"pairs_per_rail", npairs}};
  // How a write latency was taken (poll as ib_write_lat, or imm); no key for the other verbs.
  if (verb_ == Verb::write) config["write_latency"] = opt_.write_latency;
  ResultsRun results(ctx_, config);
  print_header(ctx_, opt_, npairs, per_pair);
  std::vector<SendRecvRecord> records;
  uint64_t total_wrong = 0;
  // Burn-in: the whole sweep once per window; the tables and "results" are the first
  // window's, every window keeps one figure per pair and rail (bench/runner/burn_in.h).
  BurnInLog log;
  SendRecvRecord largest;
  results.measure([&] {
    results.burn_in(
        burn_in_, log,
        [&](const BurnInClock& clock) {
          const bool first = clock.windows_started() == 1;
          for (size_t si = 0; si < sweep_.sizes.size(); ++si) {
            // Counters go with the first window's results (a collective gather, so every
            // rank agrees: `first` comes from rank 0's clock).
            if (first) results.counters_begin();
            SendRecvRecord rec = run_size(si);
            json entry = to_json(rec);
            if (first) results.add_counters(entry);
            for (const auto& p : rec.pairs) total_wrong += p.wrong;
            if (si + 1 == sweep_.sizes.size()) largest = rec;
            if (!first) continue;
            print_size(ctx_, rec.bytes, rec.pairs, per_pair);
            results.add(std::move(entry));
            records.push_back(std::move(rec));
          }
          if (burn_in_.on()) log_window(log, largest);
        },
        [&](const BurnInClock& clock, bool rewrite_due) {
          if (rewrite_due) print_window(log, largest, clock.windows_started());
        });
  });
  ctx_.status().clear();
  print_slowest(ctx_, records);
  if (burn_in_.on()) {
    const std::string what =
        fmt::format("sendrecv bandwidth per pair and rail at {} B (median GB/s, lower direction)", sweep_.sizes.back());
    for (const auto& line : log.table(what, "pair")) ctx_.print(line);
  }
  if (common_.check) ctx_.print(fmt::format("# Wrong bytes : {} {}", total_wrong, total_wrong ? "FAILED" : "OK"));
  results.finish();
  return total_wrong ? 1 : 0;
}

const bool cmd_sendrecv_registered = register_subcommand(Subcommand{
    "sendrecv", "Point-to-point latency and bandwidth between every pair of ranks", 10,
    [](CLI::App& sub, CommonOptions& common) {
      auto opt = std::make_shared<SendRecvOptions>();
      add_transport_options(sub, common);
      add_sweep_options(sub, common);
      add_iteration_options(sub, common);
      add_check_option(sub, common);
      add_output_options(sub, common, {.metrics = true});
      add_timeline_option(sub, common);
      add_paths_option(sub, common);
      add_link_options(sub, common);
      add_memory_options(sub, common);
      add_burn_in_options(sub, common);
      sub.add_option("--verb", opt->verb, "send (two-sided), write (RDMA write) or read (RDMA read)")
          ->capture_default_str();
      sub.add_option("--write-latency", opt->write_latency,
                     "--verb write latency method: poll (the responder polls the buffer's last byte, as "
                     "ib_write_lat), imm (write-with-immediate completion), auto (poll unless --mem cuda)")
          ->capture_default_str();
      sub.add_option("--window", opt->window, "Messages in flight per bandwidth iteration")->capture_default_str();
      sub.add_option("--bw-iters", opt->bw_iters, "Timed bandwidth windows per direction")->capture_default_str();
      sub.add_flag("--all-pairs", opt->all_pairs, "Print every pair at every size (default when <= 8 pairs)");
      return SubcommandRun{{}, [&common, opt](Bootstrap& b) { return SendRecvBench(b, common, *opt).run(); }};
    }});

}  // namespace
}  // namespace railbench
