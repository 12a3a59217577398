// railbench alltoall: nccl-tests' alltoall_perf over any transport (pairwise exchange,
// the MoE dispatch pattern), plus every link's step times and the slowest links.
#include <algorithm>

#include <fmt/format.h>

#include "bench/commands/collectives/collective_sweep.h"
#include "collectives/alltoall.h"
#include "collectives/check.h"
#include "lib/core/stats.h"
#include "lib/results/results.h"

namespace railbench {

using nlohmann::json;

namespace {

// Keeps, per timed out-of-place iteration, how long each source's block took (step
// posted until the block arrived), so a slow link src -> dst stands out.
class AllToAllRunner : public CollectiveRunner {
 public:
  explicit AllToAllRunner(const CollectiveSetup& s)
      : a2a_(*s.progress, AllToAllOptions{s.ring.max_bytes, s.ring.rails, s.window, s.ring.memory}),
        from_(static_cast<size_t>(s.progress->transport().world_size())),
        me_(s.progress->transport().rank()) {}

  std::string algo_for(size_t) const override { return "pairwise"; }
  void run(const CollectiveBuffers& b, size_t count, DataType type, ReduceOp) override { a2a_.run(b, count, type); }

  void begin_size() override {
    for (auto& v : from_) v.clear();
  }
  void after_call(bool keep, int timed_iters) override {
    if (!keep) return;
    timed_iters_ = timed_iters;
    for (size_t q = 0; q < from_.size(); ++q)
      if (static_cast<int>(q) != me_) from_[q].push_back(a2a_.step_us()[q]);
  }
  // Every rank's per-source step times summarized: one entry per (src -> dst) link.
  void end_size(RunContext& ctx, uint64_t bytes, size_t block_bytes, json& entry) override {
    json local = json::array();
    for (size_t q = 0; q < from_.size(); ++q) {
      auto& v = from_[q];
      // The warm-up calls went through the same hook: keep the timed ones.
      if (v.size() > static_cast<size_t>(timed_iters_)) v.erase(v.begin(), v.end() - timed_iters_);
      if (static_cast<int>(q) == me_ || v.empty()) continue;
      const Summary s = summarize(v);
      local.push_back(json{{"src", q},
                           {"dst", me_},
                           {"step_us", to_json(s)},
                           {"gbps", gbps(static_cast<double>(block_bytes), s.p50 * 1e-6)}});
    }
    pairs_ = json::array();
    for (const auto& text : ctx.bootstrap().all_gather_strings(local.dump()))
      for (auto& e : json::parse(text)) pairs_.push_back(std::move(e));
    last_bytes_ = bytes;
    entry["pairs"] = pairs_;
  }
  void print_summary(const RunContext& ctx) const override;

 private:
  AllToAll a2a_;
  std::vector<std::vector<double>> from_;
  int me_ = 0, timed_iters_ = 0;
  json pairs_;
  uint64_t last_bytes_ = 0;
};

// After the sweep: the links with the slowest median step at the largest size, against
// the median link, so one bad cable or NIC stands out.
void AllToAllRunner::print_summary(const RunContext& ctx) const {
  if (pairs_.empty()) return;
  std::vector<std::pair<double, const json*>> order;
  for (const auto& p : pairs_) order.emplace_back(p.at("step_us").at("p50").get<double>(), &p);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<double> p50s;
  for (const auto& [v, p] : order) p50s.push_back(v);
  const double median = summarize(p50s).p50;
  ctx.print(
      fmt::format("# Slowest all-to-all links at {} B (step time: step posted until the block arrived):", last_bytes_));
  ctx.print(fmt::format("#   {:<24} {:<24} {:>10} {:>10} {:>8} {:>9}", "src", "dst", "p50 (us)", "p99 (us)", "GB/s",
                        "x median"));
  for (size_t i = 0; i < std::min<size_t>(order.size(), 5); ++i) {
    const json& p = *order[i].second;
    ctx.print(fmt::format("#   {:<24} {:<24} {:>10.1f} {:>10.1f} {:>8.3f} {:>9.2f}", ctx.peer_name(p.at("src")),
                          ctx.peer_name(p.at("dst")), order[i].first, p.at("step_us").at("p99").get<double>(),
                          p.at("gbps").get<double>(), median > 0 ? order[i].first / median : 0.0));
  }
}

const CollectiveSpec kAllToAll{
    "alltoall",
    "All-to-all (pairwise exchange, the MoE pattern) with nccl-tests columns and per-link step times",
    50,
    Pattern::all_to_all,
    "(n-1)/n",
    CollectiveKind::all_to_all,
    false,
    true,
    {"pairwise"},
    "pairwise (the only one)",
    [](const MemoryRegion* buf, size_t) {
      return CollectiveBuffers{buf, 0, buf, 0};
    },
    [](size_t count, int n) { return count * static_cast<size_t>(n); },
    [](size_t count, int n) { return count * static_cast<size_t>(n); },
    [](DataType type, ReduceOp, int rank, int n, uint32_t seed, void* in, size_t count) {
      fill_alltoall(type, rank, n, seed, in, count);
    },
    [](DataType type, ReduceOp, int rank, int n, uint32_t seed, const void* out, size_t count) {
      return count_wrong_alltoall(type, rank, n, seed, out, count);
    },
    [](const CollectiveSetup& s) -> std::unique_ptr<CollectiveRunner> { return std::make_unique<AllToAllRunner>(s); },
    [](CLI::App& sub, CollectiveOptions& o) {
      sub.add_option("--window", o.window, "Steps (peers) in flight at once; 1: strict pairwise")
          ->capture_default_str();
    },
};

const bool registered = register_collective(kAllToAll);

}  // namespace
}  // namespace railbench
