// alltoall --routing: each sweep size becomes one MoE dispatch step, an all-to-all-v
// whose counts come from collectives/moe_routing.h. A size S is the bytes every rank
// sends: tokens per rank x K x hidden x type size, with either the token's length fixed
// (--hidden, 1024 elements unless --tokens-per-rank is given) and the token count from
// S, or the token count fixed (--tokens-per-rank) and the length from S.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/collectives/collective_sweep.h"
#include "collectives/alltoallv.h"
#include "collectives/moe_routing.h"

namespace railbench {

// One size's routing and this rank's share of it.
struct RoutedSize {
  uint64_t tokens_per_rank = 0;
  uint64_t hidden = 0;  // elements per token copy
  MoeRouting routing;
  AllToAllVLayout layout;  // this rank's counts and offsets, elements, packed in rank order
  UnevenSize plan;         // what the sweep prints and divides by
  nlohmann::json detail;   // the size's "routing" entry
};

// Throws UsageError when a routing option (--topk, --experts, --tokens-per-rank,
// --hidden) comes without --routing, or --tokens-per-rank with --hidden.
void check_routing_options(const CollectiveOptions& o);

class RoutedSweep {
 public:
  // Throws UsageError for options that cannot be routed (naming the option and the fix).
  RoutedSweep(const CollectiveOptions& o, const std::vector<size_t>& sizes, DataType type, int rank, int ranks);

  const RoutedSize& at(size_t size_index) const { return sizes_[size_index]; }
  size_t buffer_bytes() const;  // every size's input and result fit in this
  std::vector<std::string> header_lines() const;
  nlohmann::json config() const;
  // Block q of this rank's input is fill_block(rank, q); block q of the result must be
  // fill_block(q, rank), at the layout's offsets.
  void fill(size_t size_index, void* in, uint32_t seed) const;
  uint64_t count_wrong(size_t size_index, const void* out, uint32_t seed) const;

 private:
  MoeRoutingOptions base_;
  DataType type_;
  int rank_ = 0, ranks_ = 0;
  bool fixed_tokens_ = false;
  std::vector<RoutedSize> sizes_;
};

}  // namespace railbench
