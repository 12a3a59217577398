#include "bench/commands/collectives/alltoall_routed.h"

#include <algorithm>

#include <fmt/format.h>

#include "collectives/check.h"
#include "lib/core/errors.h"

namespace railbench {

using nlohmann::json;

namespace {

constexpr uint64_t kDefaultHidden = 1024;

MoeRoutingOptions routing_options(const CollectiveOptions& o) {
  check_routing_options(o);
  return MoeRoutingOptions{parse_routing(o.routing), o.experts ? o.experts : 8, o.topk ? o.topk : 2, 0, 0, 0};
}

}  // namespace

void check_routing_options(const CollectiveOptions& o) {
  const bool routed = !o.routing.empty();
  for (auto [given, name] :
       {std::pair{o.topk != 0, "--topk"}, std::pair{o.experts != 0, "--experts"},
        std::pair{o.tokens_per_rank != 0, "--tokens-per-rank"}, std::pair{o.hidden != 0, "--hidden"}})
    if (given && !routed)
      throw UsageError(fmt::format("{} shapes a routed exchange: add --routing uniform|zipf:S|file:PATH", name));
  if (o.tokens_per_rank != 0 && o.hidden != 0)
    throw UsageError("--tokens-per-rank and --hidden both fix the size: give one, the sweep's size sets the other");
}

RoutedSweep::RoutedSweep(const CollectiveOptions& o, const std::vector<size_t>& sizes, DataType type, int rank,
                         int ranks)
    : base_(routing_options(o)), type_(type), rank_(rank), ranks_(ranks), fixed_tokens_(o.tokens_per_rank != 0) {
  validate_routing(base_, ranks);
  const uint64_t esize = size_of(type), k = static_cast<uint64_t>(base_.topk);
  for (size_t si = 0; si < sizes.size(); ++si) {
    RoutedSize s;
    s.hidden = fixed_tokens_ ? sizes[si] / (o.tokens_per_rank * k * esize) : (o.hidden ? o.hidden : kDefaultHidden);
    s.tokens_per_rank = fixed_tokens_ ? o.tokens_per_rank : sizes[si] / (k * s.hidden * esize);
    if (s.hidden == 0 || s.tokens_per_rank == 0) {
      sizes_.push_back(std::move(s));  // count 0: skipped
      continue;
    }
    MoeRoutingOptions step = base_;
    step.tokens_per_rank = s.tokens_per_rank;
    step.step = si;  // each size its own draws, the same on every rank
    s.routing = route_tokens(step, ranks);
    uint64_t busiest = 0;
    for (int q = 0; q < ranks; ++q)
      busiest = std::max<uint64_t>({busiest, s.routing.sent_by(q), s.routing.received_by(q)});
    s.layout = dispatch_layout(s.routing, rank, s.hidden);
    const uint64_t count = s.tokens_per_rank * k * s.hidden;
    UnevenSize& p = s.plan;
    p.bytes = count * esize;
    p.count = count;
    p.bw_bytes = busiest * s.hidden * esize;
    p.in_bytes = s.layout.send_extent() * esize;
    p.out_bytes = s.layout.recv_extent() * esize;
    p.columns = fmt::format("  {:>8} {:>8.3f} {:>8.3f}", s.tokens_per_rank, s.routing.expert_imbalance(),
                            s.routing.pair_imbalance());
    s.detail = json{{"tokens_per_rank", s.tokens_per_rank},
                    {"hidden", s.hidden},
                    {"expert_imbalance", s.routing.expert_imbalance()},
                    {"pair_imbalance", s.routing.pair_imbalance()},
                    {"busiest_bytes", p.bw_bytes},
                    {"expert_load", s.routing.expert_load}};
    sizes_.push_back(std::move(s));
  }
  if (std::all_of(sizes_.begin(), sizes_.end(), [](const RoutedSize& s) { return s.plan.count == 0; })) {
    throw UsageError(fmt::format(
        "--routing: no size in the sweep holds one token ({} x {} elements x {} B at -e {} B): raise -e, or lower {}",
        base_.topk, fixed_tokens_ ? "1" : std::to_string(o.hidden ? o.hidden : kDefaultHidden), esize,
        sizes.empty() ? 0 : sizes.back(), fixed_tokens_ ? "--tokens-per-rank" : "--hidden"));
  }
}

size_t RoutedSweep::buffer_bytes() const {
  size_t most = 64;
  for (const auto& s : sizes_) most = std::max({most, s.plan.in_bytes, s.plan.out_bytes});
  return most;
}

std::vector<std::string> RoutedSweep::header_lines() const {
  return {fmt::format("# routing {}: {} experts over {} ranks, top-{}; size = tokens per rank x {} x hidden x type "
                      "size ({}); draws seeded by the size's index",
                      base_.routing.text, base_.experts, ranks_, base_.topk, base_.topk,
                      fixed_tokens_ ? "tokens fixed, hidden from the size" : "hidden fixed, tokens from the size"),
          "# uneven: algbw = the busiest rank's bytes (sent or received, own block included) / time; "
          "exp-imb, pair-imb = max/mean token copies per expert, per rank pair"};
}

json RoutedSweep::config() const {
  return json{{"distribution", base_.routing.text},
              {"experts", base_.experts},
              {"topk", base_.topk},
              {"fixed", fixed_tokens_ ? "tokens_per_rank" : "hidden"}};
}

void RoutedSweep::fill(size_t si, void* in, uint32_t seed) const {
  const AllToAllVLayout& l = sizes_[si].layout;
  auto* base = static_cast<std::byte*>(in);
  for (int q = 0; q < ranks_; ++q) {
    const auto i = static_cast<size_t>(q);
    fill_block(type_, rank_, q, seed, base + l.send_offsets[i] * size_of(type_), l.send_counts[i]);
  }
}

uint64_t RoutedSweep::count_wrong(size_t si, const void* out, uint32_t seed) const {
  const AllToAllVLayout& l = sizes_[si].layout;
  const auto* base = static_cast<const std::byte*>(out);
  uint64_t wrong = 0;
  for (int q = 0; q < ranks_; ++q) {
    const auto i = static_cast<size_t>(q);
    wrong += count_wrong_block(type_, q, rank_, seed, base + l.recv_offsets[i] * size_of(type_), l.recv_counts[i]);
  }
  return wrong;
}

}  // namespace railbench
