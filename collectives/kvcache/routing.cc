#include "collectives/kvcache/routing.h"

#include <algorithm>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

const char* to_string(KvRoute route) {
  switch (route) {
    case KvRoute::round_robin: return "round-robin";
    case KvRoute::least_loaded: return "least-loaded";
    case KvRoute::prefix: return "prefix";
  }
  return "?";
}

KvRoute parse_kv_route(const std::string& name) {
  for (KvRoute r : {KvRoute::round_robin, KvRoute::least_loaded, KvRoute::prefix})
    if (name == to_string(r)) return r;
  throw UsageError(fmt::format("unknown --route '{}': use round-robin, least-loaded or prefix", name));
}

size_t KvBlockLru::held_prefix(const std::vector<uint64_t>& ids) const {
  size_t n = 0;
  while (n < ids.size() && holds(ids[n])) ++n;
  return n;
}

void KvBlockLru::use(const std::vector<uint64_t>& ids) {
  if (capacity_ == 0) return;
  for (uint64_t id : ids) {
    const auto it = where_.find(id);
    if (it != where_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      continue;
    }
    order_.push_front(id);
    where_[id] = order_.begin();
    if (order_.size() > capacity_) {
      where_.erase(order_.back());
      order_.pop_back();
    }
  }
}

KvRoutePlan route_requests(const KvRouteInput& in) {
  const auto workers = static_cast<size_t>(std::max(in.decode_ranks, 1));
  std::vector<KvBlockLru> caches(workers, KvBlockLru(in.cache_blocks));
  std::vector<uint64_t> load(workers, 0);  // KV blocks sent to each decode rank so far
  KvRoutePlan plan;
  plan.requests_per_decode.assign(workers, 0);
  plan.saved_per_decode.assign(workers, 0);
  static const std::vector<uint64_t> kNone;
  for (size_t i = 0; i < in.blocks.size(); ++i) {
    const auto& ids = i < in.hash_ids.size() ? in.hash_ids[i] : kNone;
    size_t d = 0;
    if (in.route == KvRoute::round_robin) {
      d = static_cast<size_t>(in.round_robin[i % in.round_robin.size()]);
    } else {
      // Most held prefix blocks (prefix only), then least loaded, then the lowest index.
      for (size_t w = 1; w < workers; ++w) {
        const size_t held_w = in.route == KvRoute::prefix ? caches[w].held_prefix(ids) : 0;
        const size_t held_d = in.route == KvRoute::prefix ? caches[d].held_prefix(ids) : 0;
        if (held_w > held_d || (held_w == held_d && load[w] < load[d])) d = w;
      }
    }
    const uint64_t held_tokens = caches[d].held_prefix(ids) * in.hash_block_tokens;
    const uint64_t blocks = in.blocks[i];
    const uint64_t skip = std::min(held_tokens / std::max<uint64_t>(in.block_tokens, 1), blocks > 0 ? blocks - 1 : 0);
    caches[d].use(ids);
    load[d] += blocks - skip;
    plan.decode.push_back(static_cast<int>(d));
    plan.skip.push_back(skip);
    plan.blocks += blocks;
    plan.saved += skip;
    ++plan.requests_per_decode[d];
    plan.saved_per_decode[d] += skip;
  }
  return plan;
}

}  // namespace railbench
