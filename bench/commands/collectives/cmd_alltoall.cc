// railbench alltoall: nccl-tests' alltoall_perf over any transport (pairwise exchange,
// the MoE dispatch pattern), plus every link's step times and the slowest links.
#include <algorithm>

#include <fmt/format.h>

#include "bench/commands/collectives/alltoall_routed.h"
#include "bench/commands/collectives/collective_sweep.h"
#include "collectives/alltoall.h"
#include "collectives/alltoallv.h"
#include "collectives/check.h"
#include "lib/core/stats.h"
#include "lib/results/results.h"

namespace railbench {

using nlohmann::json;

namespace {

// Keeps, per timed out-of-place iteration, how long each source's block took (step
// posted until the block arrived), so a slow link src -> dst stands out. With --routing
// every size is an uneven MoE dispatch (alltoall_routed.h) over AllToAllV.
class AllToAllRunner : public CollectiveRunner {
 public:
  explicit AllToAllRunner(const CollectiveSetup& s)
      : from_(static_cast<size_t>(s.progress->transport().world_size())),
        me_(s.progress->transport().rank()),
        esize_(size_of(s.type)) {
    const Transport& t = s.progress->transport();
    if (s.options->routing.empty()) {
      check_routing_options(*s.options);
      a2a_ = std::make_unique<AllToAll>(*s.progress,
                                        AllToAllOptions{s.ring.max_bytes, s.ring.rails, s.window, s.ring.memory});
      return;
    }
    routed_ = std::make_unique<RoutedSweep>(*s.options, s.sizes, s.type, me_, t.world_size());
    a2av_ = std::make_unique<AllToAllV>(
        *s.progress, Group::world(t), AllToAllVOptions{routed_->buffer_bytes(), s.ring.rails, s.window, s.ring.memory});
  }

  std::string algo_for(size_t) const override { return "pairwise"; }
  void run(const CollectiveBuffers& b, size_t count, DataType type, ReduceOp) override {
    if (a2a_) return a2a_->run(b, count, type);
    a2av_->run(b, routed_->at(size_).layout, type);
  }
  const std::vector<double>& step_us() const { return a2a_ ? a2a_->step_us() : a2av_->step_us(); }

  void begin_size(size_t size_index) override {
    size_ = size_index;
    for (auto& v : from_) v.clear();
  }
  void after_call(bool keep, int timed_iters) override {
    if (!keep) return;
    timed_iters_ = timed_iters;
    for (size_t q = 0; q < from_.size(); ++q)
      if (static_cast<int>(q) != me_) from_[q].push_back(step_us()[q]);
  }
  void end_size(RunContext& ctx, uint64_t bytes, size_t block_bytes, json& entry) override;
  void print_summary(const RunContext& ctx) const override;

  std::optional<UnevenSize> uneven(size_t si) const override {
    if (!routed_) return std::nullopt;
    return routed_->at(si).plan;
  }
  size_t buffer_bytes(size_t even_bytes) const override { return routed_ ? routed_->buffer_bytes() : even_bytes; }
  void fill(void* in, uint32_t seed) const override { routed_->fill(size_, in, seed); }
  uint64_t count_wrong(const void* out, uint32_t seed) const override { return routed_->count_wrong(size_, out, seed); }
  std::vector<std::string> header_lines() const override {
    return routed_ ? routed_->header_lines() : std::vector<std::string>{};
  }
  std::pair<std::string, std::string> columns_head() const override {
    if (!routed_) return {};
    return {fmt::format("  {:>8} {:>8} {:>8}", "tokens", "exp-imb", "pair-imb"),
            fmt::format("  {:>8} {:>8} {:>8}", "(/rank)", "max/mean", "max/mean")};
  }
  void add_config(json& config) const override {
    if (routed_) config["routing"] = routed_->config();
  }

 private:
  std::unique_ptr<AllToAll> a2a_;
  std::unique_ptr<RoutedSweep> routed_;
  std::unique_ptr<AllToAllV> a2av_;
  std::vector<std::vector<double>> from_;
  int me_ = 0, timed_iters_ = 0;
  size_t size_ = 0, esize_ = 4;
  json pairs_;
  uint64_t last_bytes_ = 0;
};

// Every rank's per-source step times summarized: one entry per (src -> dst) link, on rank 0
// (the results file and the slowest-links table are its own).
void AllToAllRunner::end_size(RunContext& ctx, uint64_t bytes, size_t block_bytes, json& entry) {
  json local = json::array();
  for (size_t q = 0; q < from_.size(); ++q) {
    auto& v = from_[q];
    // The warm-up calls went through the same hook: keep the timed ones.
    if (v.size() > static_cast<size_t>(timed_iters_)) v.erase(v.begin(), v.end() - timed_iters_);
    if (static_cast<int>(q) == me_ || v.empty()) continue;
    const Summary s = summarize(v);
    // Uneven: this link's own block, which may be empty.
    const double link_bytes =
        static_cast<double>(routed_ ? routed_->at(size_).layout.recv_counts[q] * esize_ : block_bytes);
    local.push_back(json{{"src", q}, {"dst", me_}, {"step_us", to_json(s)}, {"gbps", gbps(link_bytes, s.p50 * 1e-6)}});
  }
  pairs_ = json::array();
  for (const auto& text : ctx.bootstrap().gather_strings(local.dump()))
    for (auto& e : json::parse(text)) pairs_.push_back(std::move(e));
  last_bytes_ = bytes;
  entry["pairs"] = pairs_;
  if (routed_) entry["routing"] = routed_->at(size_).detail;
}

// After the sweep: the links with the slowest median step at the largest size, against
// the median link, so one bad cable or NIC stands out.
void AllToAllRunner::print_summary(const RunContext& ctx) const {
  if (pairs_.empty()) return;
  std::vector<std::pair<double, const json*>> order;
  for (const auto& p : pairs_) order.emplace_back(p.at("step_us").at("p50").get<double>(), &p);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<double> p50s;
  for (const auto& [v, p] : order) p50s.push_back(v);
  const double median_p50 = median(std::move(p50s));
  ctx.print(
      fmt::format("# Slowest all-to-all links at {} B (step time: step posted until the block arrived):", last_bytes_));
  ctx.print(fmt::format("#   {:<24} {:<24} {:>10} {:>10} {:>8} {:>9}", "src", "dst", "p50 (us)", "p99 (us)", "GB/s",
                        "x median"));
  for (size_t i = 0; i < std::min<size_t>(order.size(), 5); ++i) {
    const json& p = *order[i].second;
    ctx.print(fmt::format("#   {:<24} {:<24} {:>10.1f} {:>10.1f} {:>8.3f} {:>9.2f}", ctx.peer_name(p.at("src")),
                          ctx.peer_name(p.at("dst")), order[i].first, p.at("step_us").at("p99").get<double>(),
                          p.at("gbps").get<double>(), median_p50 > 0 ? order[i].first / median_p50 : 0.0));
  }
}

const CollectiveSpec kAllToAll{
    "alltoall",
    "All-to-all (pairwise exchange, the MoE pattern; --routing: uneven MoE dispatch) with nccl-tests columns and "
    "per-link step times",
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
      sub.add_option("--routing", o.routing,
                     "Uneven MoE dispatch per size: uniform, zipf:S or file:PATH (per-expert weights)");
      sub.add_option("--topk", o.topk, "With --routing: experts per token, K (default 2)");
      sub.add_option("--experts", o.experts, "With --routing: experts E, spread evenly over the ranks (default 8)");
      sub.add_option("--tokens-per-rank", o.tokens_per_rank,
                     "With --routing: fixed tokens per rank; each size then sets the token's length");
      sub.add_option("--hidden", o.hidden,
                     "With --routing: elements per token (default 1024); each size then sets the token count");
    },
};

const bool cmd_alltoall_registered = register_collective(kAllToAll);

}  // namespace
}  // namespace railbench
