// railbench congestion: GPCNeT's method on a rail-optimized SU. A victim pair measures
// 8 B ping-pong latency, one-way bandwidth and an 8 B all-reduce alone, then again while every other rank
// runs an aggressor pattern (incast, all-to-all, cross-rail pairs), and each percentile
// is compared as GPCNeT's congestion impact factor. The victim pair is placed on one
// leaf (one slot, so one rail) or across the spine (two slots), from the rank layout.
#include <chrono>
#include <cstring>
#include <optional>
#include <span>
#include <thread>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/commands/congestion/impact.h"
#include "bench/commands/congestion/placement.h"
#include "bench/runner/pair_test.h"
#include "bench/runner/results_run.h"
#include "bench/runner/run_context.h"
#include "collectives/group_ops.h"
#include "lib/core/sizes.h"
#include "lib/results/results.h"
#include "lib/transport/gpu.h"

namespace railbench {

using nlohmann::json;
using namespace congestion;

namespace {

struct CongestionOptions {
  std::string victims = "auto";  // same-leaf, cross-spine; auto: both where the layout allows
  std::string aggressors = "incast,broadcast,alltoall,cross-rail";
  int ranks_per_node = 0;  // 0: ranks that share a host name are a node
  std::string slot_rails;  // "rail0,rail1": the NIC of the rank in slot s
  std::string bw_bytes = "16K";
  int window = 64;
  int bw_iters = 40;
  std::string aggressor_bytes = "256K";
  int aggressor_window = 4;  // messages per peer per aggressor round
  double lead_s = 0.5;       // the aggressors' head start before the victims measure
  int nap_us = 0;            // aggressors' sleep when a poll finds nothing (0: spin)
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// What the victim pair's leader measured in one phase.
struct VictimSamples {
  std::vector<double> latency_us, bw_gbps, allreduce_us;
};

// What one aggressor rank did in a run (plain data: all-gathered as bytes).
struct AggressorRun {
  double sent_bytes = 0, seconds = 0;
  bool capped = false;  // the leader stopped at --timeout before the victims finished
};

// One aggressor run as seen by rank 0: the load it put on the fabric.
struct AggressorLoad {
  double gbps = 0;      // bytes all aggressors sent / the longest aggressor's time
  bool capped = false;  // stopped at --timeout before the victims finished
};

// 8-byte control tokens, apart from the pair test's: the aggressor leader's go / stop
// to every aggressor, and the victims' "done" to the leader.
constexpr size_t kGo = 0, kStop = 8, kCtlIn = 16, kDoneOut = 24, kDoneIn = 32;
constexpr size_t kTokenBytes = 64;

class CongestionBench {
 public:
  CongestionBench(Bootstrap& bootstrap, const CommonOptions& common, const CongestionOptions& opt)
      : ctx_(bootstrap, common, "congestion"), common_(common), opt_(opt) {}
  ~CongestionBench() { ctx_.close_transport(); }
  CongestionBench(const CongestionBench&) = delete;
  CongestionBench& operator=(const CongestionBench&) = delete;
  int run();

 private:
  void resolve();
  void allocate();
  VictimSamples measure_victims(const Placement& pl);
  AggressorRun run_aggressors(const Placement& pl, std::optional<Pattern> pattern);
  AggressorLoad gather_load(const Placement& pl, const AggressorRun& mine);
  LocalSpan tok(size_t offset) const { return LocalSpan{ctl_mr_.get(), offset, 8}; }
  std::string where(int rank) const;
  void print_placement(const Placement& pl) const;
  void report(ResultsRun& results, const Placement& pl, Pattern pattern, const VictimSamples& isolated,
              const VictimSamples& congested, const AggressorLoad& load);

  RunContext ctx_;
  const CommonOptions& common_;
  const CongestionOptions& opt_;
  std::vector<RankSpot> spots_;
  std::vector<Placement> placements_;
  std::vector<Pattern> patterns_;
  int iters_ = 1000, warmup_ = 100;
  size_t bw_bytes_ = 0, agg_bytes_ = 0;
  std::unique_ptr<gpu::Buffer> src_, dst_, tokens_, ctl_, ar_, ar_scratch_;
  std::unique_ptr<MemoryRegion> src_mr_, dst_mr_, tok_mr_, ctl_mr_, ar_mr_, ar_scratch_mr_;
  std::unique_ptr<PairTest> test_;
};

void CongestionBench::resolve() {
  ctx_.agree([&] {
    if (opt_.window < 1 || opt_.bw_iters < 1 || opt_.aggressor_window < 1) {
      throw UsageError(fmt::format("--window {}, --bw-iters {} and --aggressor-window {} must each be 1 or more",
                                   opt_.window, opt_.bw_iters, opt_.aggressor_window));
    }
    if (opt_.nap_us < 0 || opt_.nap_us > 100000)
      throw UsageError(fmt::format("--aggressor-nap {} must be 0..100000 microseconds", opt_.nap_us));
    if (!(opt_.lead_s >= 0 && opt_.lead_s <= 60))
      throw UsageError(fmt::format("--lead {} must be 0..60 seconds", opt_.lead_s));
    iters_ = common_.iters >= 0 ? common_.iters : 1000;
    warmup_ = common_.warmup_iters >= 0 ? common_.warmup_iters : 100;
    if (iters_ < 1) throw UsageError(fmt::format("-n {}: the latency victim needs 1 or more iterations", iters_));
    bw_bytes_ = parse_size(opt_.bw_bytes);
    agg_bytes_ = parse_size(opt_.aggressor_bytes);
    if (bw_bytes_ == 0 || agg_bytes_ == 0)
      throw UsageError("--bw-bytes and --aggressor-bytes must be 1 byte or more: e.g. 16K and 256K");
    spots_ = layout_ranks(ctx_.hosts(), opt_.ranks_per_node);
    int slots = 0;
    for (const auto& s : spots_) slots = std::max(slots, s.slot + 1);
    std::vector<std::string> paths = split_list(opt_.victims);
    if (opt_.victims == "auto") {
      paths = slots >= 2 ? std::vector<std::string>{"cross-spine", "same-leaf"} : std::vector<std::string>{"same-leaf"};
    }
    if (paths.empty()) throw UsageError("--victims is empty: use same-leaf, cross-spine or both (comma-separated)");
    for (const auto& p : paths) placements_.push_back(place(spots_, parse_victim_path(p)));
    for (const auto& a : split_list(opt_.aggressors)) patterns_.push_back(parse_pattern(a));
    if (patterns_.empty()) throw UsageError("--aggressors is empty: use incast, broadcast, alltoall and/or cross-rail");
    if (!opt_.slot_rails.empty()) {
      const auto rails = split_list(opt_.slot_rails);
      const int slot = spots_[ctx_.rank()].slot;
      if (slot >= static_cast<int>(rails.size())) {
        throw UsageError(
            fmt::format("--slot-rails '{}' names {} NIC(s), and rank {} is slot {} of its node: name one "
                        "NIC per rank of a node, slot 0 first",
                        opt_.slot_rails, rails.size(), ctx_.rank(), slot));
      }
      ctx_.set_rails(rails[slot]);
    }
  });
  ctx_.open_transport();
  const Transport& t = ctx_.transport();
  ctx_.agree([&] {
    if (!t.caps().send_recv) {
      throw UnsupportedError(
          fmt::format("congestion's victims and aggressors use two-sided send/recv, which {} ({}) "
                      "lacks: use -t ofi or -t verbs",
                      t.name(), t.provider()));
    }
    if (ctx_.memory_kind() != MemoryKind::host) {
      throw UnsupportedError(
          fmt::format("congestion measures from host memory, and -t {} moves GPU memory only: use "
                      "-t ofi or -t verbs",
                      t.name()));
    }
    // A round posts its window of receives per peer at once, next to a control token.
    if (const size_t depth = t.caps().max_outstanding;
        depth > 0 && opt_.aggressor_window + 2 > static_cast<int>(depth)) {
      throw UsageError(fmt::format("--aggressor-window {} is deeper than {} ({}) queues per peer ({}): use {} or less",
                                   opt_.aggressor_window, t.name(), t.provider(), depth, depth - 2));
    }
    if (std::max(bw_bytes_, agg_bytes_) > t.caps().max_msg_size) {
      throw UsageError(
          fmt::format("--bw-bytes / --aggressor-bytes exceed the transport's largest message ({} B): "
                      "lower them",
                      t.caps().max_msg_size));
    }
  });
}

void CongestionBench::allocate() {
  Transport& t = ctx_.transport();
  const size_t bytes = std::max(bw_bytes_, agg_bytes_);
  ctx_.agree([&] {
    // Every receive of an aggressor round lands in one buffer: the data is load, not checked.
    src_ = std::make_unique<gpu::Buffer>(MemoryKind::host, bytes);
    dst_ = std::make_unique<gpu::Buffer>(MemoryKind::host, bytes);
    tokens_ = std::make_unique<gpu::Buffer>(MemoryKind::host, 64);
    ctl_ = std::make_unique<gpu::Buffer>(MemoryKind::host, kTokenBytes);
    src_mr_ = t.register_memory(src_->data(), src_->size(), MemoryKind::host);
    dst_mr_ = t.register_memory(dst_->data(), dst_->size(), MemoryKind::host);
    tok_mr_ = t.register_memory(tokens_->data(), tokens_->size(), MemoryKind::host);
    ctl_mr_ = t.register_memory(ctl_->data(), ctl_->size(), MemoryKind::host);
    // The victims' small all-reduce: two f32 (8 B), reduced in place, and its scratch.
    ar_ = std::make_unique<gpu::Buffer>(MemoryKind::host, 64);
    ar_scratch_ = std::make_unique<gpu::Buffer>(MemoryKind::host, 64);
    ar_mr_ = t.register_memory(ar_->data(), ar_->size(), MemoryKind::host);
    ar_scratch_mr_ = t.register_memory(ar_scratch_->data(), ar_scratch_->size(), MemoryKind::host);
  });
  const uint64_t go = 1, stop = 0;
  std::memcpy(ctl_->data() + kGo, &go, 8);
  std::memcpy(ctl_->data() + kStop, &stop, 8);
  PairBuffers buffers{src_mr_.get(), dst_mr_.get(), tok_mr_.get(), {}, {}};
  // Only the send verb is used: no remote keys needed.
  test_ = std::make_unique<PairTest>(ctx_.progress(), buffers, Verb::send, false);
}

// The victim pair's measurement; the pair's leader (lower rank) keeps both figures:
// the ping-pong's RTT/2 and the bandwidth of the windows it streams to its partner.
// The leader then tells the aggressor leader it is done: that stops the aggressors at
// their next round (or, alone, ends their idle wait).
VictimSamples CongestionBench::measure_victims(const Placement& pl) {
  const auto [a, b] = pl.victims;
  const int peer = ctx_.rank() == a ? b : a;
  const bool leader = ctx_.rank() == a;
  VictimSamples s;
  s.latency_us = test_->latency(peer, 0, 8, warmup_, iters_, leader);
  uint64_t wrong = 0;
  s.bw_gbps = test_->stream(peer, 0, bw_bytes_, opt_.window, 2, opt_.bw_iters, a, 1, &wrong);
  // GPCNeT's third victim: a small (8 B) all-reduce over the victims, each iteration
  // timed on its own; the leader keeps its times (the two finish together).
  const Group group{{a, b}, leader ? 0 : 1};
  const Vec v{ar_mr_.get(), 0, 2};
  for (int i = 0; i < warmup_ + iters_; ++i) {
    const auto t0 = Clock::now();
    rhd_allreduce(ctx_.progress(), group, 1, v, DataType::f32, ReduceOp::sum, ar_scratch_mr_.get());
    if (i >= warmup_ && leader) s.allreduce_us.push_back(seconds_between(t0, Clock::now()) * 1e6);
  }
  if (leader)
    ctx_.progress().wait(ctx_.progress().send(pl.aggressors.front(), 0, tok(kDoneOut)),
                         "the victims' done token to the aggressor leader");
  return s;
}

// Waits for `ids` with a deadline of inactivity (--timeout), napping `nap_us` whenever a
// poll finds nothing: ranks that wait on a host with fewer cores than ranks leave the
// CPU to the ranks that measure. nap_us 0 spins, as Progress::wait does.
void wait_napping(Progress& p, std::span<const uint64_t> ids, double timeout_s, int nap_us, const char* what) {
  auto idle_since = Clock::now();
  for (size_t next = 0; next < ids.size();) {
    if (p.done(ids[next])) {
      ++next;
      continue;
    }
    if (p.poll_once() > 0) {
      idle_since = Clock::now();
    } else {
      if (seconds_between(idle_since, Clock::now()) > timeout_s) {
        throw TimeoutError(
            fmt::format("congestion: nothing arrived for {:.0f} s while waiting for {} (--timeout): a "
                        "peer stopped or the fabric dropped it; rerun with a longer --timeout if the "
                        "fabric is this slow",
                        timeout_s, what));
      }
      if (nap_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(nap_us));
    }
  }
}

// Rounds of `pattern` among the aggressors until the victims are done (no pattern: the
// aggressors only wait, napping, while the victims measure alone). The first aggressor
// leads: before each round it tells every other aggressor go or stop, so all of them
// stop at the same round without a clock they would have to agree on.
AggressorRun CongestionBench::run_aggressors(const Placement& pl, std::optional<Pattern> pattern) {
  Progress& p = ctx_.progress();
  const int lead = pl.aggressors.front();
  const bool is_lead = ctx_.rank() == lead;
  const AggressorRole role = pattern ? aggressor_role(*pattern, ctx_.rank(), pl.aggressors, spots_) : AggressorRole{};
  const int nap = pattern ? opt_.nap_us : 1000;
  uint64_t done_id = 0;
  if (is_lead) done_id = p.recv(pl.victims.first, 0, tok(kDoneIn));
  const auto t0 = Clock::now();
  double sent = 0;
  bool capped = false;
  std::vector<uint64_t> ids;
  for (;;) {
    bool stop = false;
    if (is_lead) {
      if (!pattern) wait_napping(p, {&done_id, 1}, common_.timeout_s, nap, "the victims' done token");
      p.poll_once();
      // A safety cap: aggressors never outlast --timeout, even if the victims never finish.
      capped = !p.done(done_id) && seconds_between(t0, Clock::now()) > common_.timeout_s;
      stop = p.done(done_id) || capped;
      ids.clear();
      for (int other : pl.aggressors)
        if (other != lead) ids.push_back(p.send(other, 0, tok(stop ? kStop : kGo)));
      wait_napping(p, ids, common_.timeout_s, nap, "the go / stop tokens to the other aggressors");
    } else {
      const uint64_t id = p.recv(lead, 0, tok(kCtlIn));
      wait_napping(p, {&id, 1}, common_.timeout_s, nap, "the aggressor leader's go / stop token");
      uint64_t v = 0;
      std::memcpy(&v, ctl_->data() + kCtlIn, 8);
      stop = v == 0;
    }
    if (stop) break;
    const LocalSpan in{dst_mr_.get(), 0, agg_bytes_}, out{src_mr_.get(), 0, agg_bytes_};
    ids.clear();
    for (int peer : role.recv_from)
      for (int k = 0; k < opt_.aggressor_window; ++k) ids.push_back(p.recv(peer, 0, in));
    for (int peer : role.send_to)
      for (int k = 0; k < opt_.aggressor_window; ++k) ids.push_back(p.send(peer, 0, out));
    // Only this round's operations: the leader's receive of the victims' token stays posted.
    wait_napping(p, ids, common_.timeout_s, nap, "an aggressor round");
    sent += static_cast<double>(role.send_to.size()) * opt_.aggressor_window * static_cast<double>(agg_bytes_);
  }
  if (is_lead) wait_napping(p, {&done_id, 1}, common_.timeout_s, nap, "the victims' done token");
  return AggressorRun{sent, seconds_between(t0, Clock::now()), capped};
}

// Collective: every rank's aggressor figures, summed into the load the victims saw.
AggressorLoad CongestionBench::gather_load(const Placement& pl, const AggressorRun& mine) {
  auto all = ctx_.bootstrap().all_gather_value(mine);
  AggressorLoad load;
  double total = 0, longest = 0;
  for (int r : pl.aggressors) {
    total += all[r].sent_bytes;
    longest = std::max(longest, all[r].seconds);
    load.capped = load.capped || all[r].capped;
  }
  load.gbps = longest > 0 ? total / longest / 1e9 : 0;
  return load;
}

std::string CongestionBench::where(int rank) const {
  return fmt::format("rank {} ({} slot {})", rank, ctx_.hosts()[rank], spots_[rank].slot);
}

void CongestionBench::print_placement(const Placement& pl) const {
  const auto [a, b] = pl.victims;
  const std::string path =
      pl.path == VictimPath::same_leaf
          ? fmt::format("inside rail {}'s leaf: shares the leaf, not its ports, with the aggressors", spots_[a].slot)
          : fmt::format(
                "through the spine: rail {}'s and rail {}'s leaf uplinks, shared with every cross-rail "
                "aggressor flow",
                spots_[a].slot, spots_[b].slot);
  std::string ranks;
  for (int r : pl.aggressors) ranks += fmt::format("{}{}", ranks.empty() ? "" : ",", r);
  ctx_.print("#");
  ctx_.print(fmt::format("# victims {}: {} <-> {}, {}", to_string(pl.path), where(a), where(b), path));
  std::string pairs;
  for (const auto& [x, y] : cross_rail_pairs(pl.aggressors, spots_)) pairs += fmt::format(" {}-{}", x, y);
  ctx_.print(fmt::format("# aggressors: ranks {}; incast into and broadcast from rank {}; cross-rail pairs{}", ranks,
                         pl.aggressors.front(), pairs));
  ctx_.print(fmt::format("#   {:<14} {:<10} {:>26}   {:>26}   {:>20} {:>9}", "victim metric", "aggressor",
                         "isolated p50/p99/p99.9", "congested p50/p99/p99.9", "impact p50/p99/p99.9", "aggr GB/s"));
}

void CongestionBench::report(ResultsRun& results, const Placement& pl, Pattern pattern, const VictimSamples& isolated,
                             const VictimSamples& congested, const AggressorLoad& load) {
  struct Metric {
    const char* name;
    const char* unit;
    Better better;
    const std::vector<double>& iso;
    const std::vector<double>& con;
  };
  const Metric metrics[] = {
      {"latency", "us", Better::lower, isolated.latency_us, congested.latency_us},
      {"bandwidth", "GB/s", Better::higher, isolated.bw_gbps, congested.bw_gbps},
      {"allreduce", "us", Better::lower, isolated.allreduce_us, congested.allreduce_us},
  };
  for (const Metric& m : metrics) {
    const Tail iso = tail_of(m.iso, m.better), con = tail_of(m.con, m.better);
    const Impact imp = impact_of(iso, con, m.better);
    const bool lat = m.better == Better::lower;
    auto fig = [&](const Tail& t) {
      return lat ? fmt::format("{:.1f} / {:.1f} / {:.1f}", t.p50, t.p99, t.p999)
                 : fmt::format("{:.4f} / {:.4f} / {:.4f}", t.p50, t.p99, t.p999);
    };
    ctx_.print(fmt::format("    {:<14} {:<10} {:>26}   {:>26}   {:>20} {:>9.3f}{}",
                           fmt::format("{} {}", m.name, m.unit), to_string(pattern), fig(iso), fig(con),
                           fmt::format("{:.2f} / {:.2f} / {:.2f}", imp.p50, imp.p99, imp.p999), load.gbps,
                           load.capped ? "  (aggressors stopped at --timeout)" : ""));
    const auto [a, b] = pl.victims;
    json aggressors = json::array();
    for (int r : pl.aggressors) aggressors.push_back(r);
    results.add(json{{"placement", to_string(pl.path)},
                     {"victim_ranks", {a, b}},
                     {"victim_hosts", {ctx_.hosts()[a], ctx_.hosts()[b]}},
                     {"victim_slots", {spots_[a].slot, spots_[b].slot}},
                     {"metric", m.name},
                     {"unit", m.unit},
                     {"tail", lat ? "high" : "low"},
                     {"aggressor", to_string(pattern)},
                     {"aggressor_ranks", aggressors},
                     {"aggressor_gbps", load.gbps},
                     {"aggressor_capped", load.capped},
                     {"isolated", to_json(iso)},
                     {"congested", to_json(con)},
                     {"impact", to_json(imp)}});
  }
}

int CongestionBench::run() {
  resolve();
  allocate();
  int nodes = 0, slots = 0;
  for (const auto& s : spots_) {
    nodes = std::max(nodes, s.node + 1);
    slots = std::max(slots, s.slot + 1);
  }
  json config{{"latency_bytes", 8},
              {"iters", iters_},
              {"warmup_iters", warmup_},
              {"bw_bytes", bw_bytes_},
              {"window", opt_.window},
              {"bw_iters", opt_.bw_iters},
              {"aggressor_bytes", agg_bytes_},
              {"aggressor_window", opt_.aggressor_window},
              {"lead_s", opt_.lead_s},
              {"ranks_per_node", opt_.ranks_per_node},
              {"nodes", nodes}};
  ResultsRun results(ctx_, config);
  const Transport& t = ctx_.transport();
  ctx_.print(
      fmt::format("# railbench congestion: transport {} ({}), {} ranks on {} nodes, up to {} per node (slot s "
                  "= rail s)",
                  t.name(), t.provider(), ctx_.size(), nodes, slots));
  ctx_.print("# GPCNeT's method: the victim pair alone, then while the other ranks run each aggressor;");
  ctx_.print(
      fmt::format("# latency: 8 B ping-pong RTT/2 (us), {} iterations; bandwidth: {} B x {} per window, one "
                  "direction, {} windows (GB/s);",
                  iters_, bw_bytes_, opt_.window, opt_.bw_iters));
  ctx_.print("# allreduce: 8 B (2 x f32) over the victim pair, per iteration (us), as many as the latency;");
  ctx_.print(
      "# impact = congested / isolated (latency), isolated / congested (bandwidth: p99, p99.9 are the low "
      "tail); above 1 is worse");
  results.measure([&] {
    for (const Placement& pl : placements_) {
      const bool victim = ctx_.rank() == pl.victims.first || ctx_.rank() == pl.victims.second;
      print_placement(pl);
      ctx_.status().update(fmt::format("congestion: {} victims alone", to_string(pl.path)));
      ctx_.bootstrap().barrier();
      VictimSamples iso;
      if (victim) {
        iso = measure_victims(pl);
      } else {
        run_aggressors(pl, std::nullopt);
      }
      auto iso_lat = ctx_.bootstrap().all_gather_vectors(iso.latency_us);
      auto iso_bw = ctx_.bootstrap().all_gather_vectors(iso.bw_gbps);
      auto iso_ar = ctx_.bootstrap().all_gather_vectors(iso.allreduce_us);
      for (Pattern pattern : patterns_) {
        ctx_.status().update(fmt::format("congestion: {} victims under {}", to_string(pl.path), to_string(pattern)));
        ctx_.bootstrap().barrier();
        VictimSamples con;
        AggressorRun mine;
        if (victim) {
          std::this_thread::sleep_for(std::chrono::duration<double>(opt_.lead_s));
          con = measure_victims(pl);
        } else {
          mine = run_aggressors(pl, pattern);
        }
        const AggressorLoad load = gather_load(pl, mine);
        auto con_lat = ctx_.bootstrap().all_gather_vectors(con.latency_us);
        auto con_bw = ctx_.bootstrap().all_gather_vectors(con.bw_gbps);
        auto con_ar = ctx_.bootstrap().all_gather_vectors(con.allreduce_us);
        const int a = pl.victims.first;
        if (ctx_.is_root()) {
          report(results, pl, pattern, VictimSamples{iso_lat[a], iso_bw[a], iso_ar[a]},
                 VictimSamples{con_lat[a], con_bw[a], con_ar[a]}, load);
        }
      }
    }
  });
  ctx_.status().clear();
  results.finish();
  return 0;
}

const bool cmd_congestion_registered = register_subcommand(Subcommand{
    "congestion", "Victim latency and bandwidth alone and under aggressors (GPCNeT's congestion impact)", 12,
    [](CLI::App& sub, CommonOptions& common) {
      auto opt = std::make_shared<CongestionOptions>();
      add_transport_options(sub, common);
      add_iteration_options(sub, common);
      add_output_options(sub, common, {.json = true, .counters = false});
      add_timeline_option(sub, common);
      add_paths_option(sub, common);
      add_link_options(sub, common);
      sub.add_option("--victims", opt->victims,
                     "Victim pair placement: same-leaf, cross-spine or both (auto: both with 2+ ranks per node)")
          ->capture_default_str();
      sub.add_option("--aggressors", opt->aggressors, "Aggressor patterns: incast, broadcast, alltoall, cross-rail")
          ->capture_default_str();
      sub.add_option("--ranks-per-node", opt->ranks_per_node,
                     "Consecutive ranks per node (0: ranks sharing a host name are a node)")
          ->capture_default_str();
      sub.add_option("--slot-rails", opt->slot_rails,
                     "NIC per slot, slot 0 first (e.g. rail0,rail1): each rank opens its slot's rail");
      sub.add_option("--bw-bytes", opt->bw_bytes, "Bandwidth victim's message size")->capture_default_str();
      sub.add_option("--window", opt->window, "Bandwidth victim's messages per window")->capture_default_str();
      sub.add_option("--bw-iters", opt->bw_iters, "Bandwidth victim's timed windows")->capture_default_str();
      sub.add_option("--aggressor-bytes", opt->aggressor_bytes, "Aggressor message size")->capture_default_str();
      sub.add_option("--aggressor-window", opt->aggressor_window, "Aggressor messages per peer per round")
          ->capture_default_str();
      sub.add_option("--aggressor-nap", opt->nap_us,
                     "Microseconds an aggressor sleeps when a poll finds nothing (0: spin; more ranks than cores: "
                     "e.g. 200)")
          ->capture_default_str();
      sub.add_option("--lead", opt->lead_s, "Seconds the aggressors run before the victims measure")
          ->capture_default_str();
      return SubcommandRun{{}, [&common, opt](Bootstrap& b) { return CongestionBench(b, common, *opt).run(); }};
    }});

}  // namespace
}  // namespace railbench
