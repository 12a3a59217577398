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

KvRouter::KvRouter(const KvRouteInput& in)
    : route_(in.route),
      round_robin_(in.round_robin),
      hash_block_tokens_(in.hash_block_tokens),
      block_tokens_(std::max<uint64_t>(in.block_tokens, 1)),
      caches_(static_cast<size_t>(std::max(in.decode_ranks, 1)), KvBlockLru(in.cache_blocks)),
      load_(caches_.size(), 0) {}

KvRouter::Choice KvRouter::next(uint64_t blocks, const std::vector<uint64_t>& ids) {
  const size_t workers = caches_.size();
  size_t d = 0;
  if (route_ == KvRoute::round_robin) {
    d = round_robin_.empty() ? i_ % workers : static_cast<size_t>(round_robin_[i_ % round_robin_.size()]);
  } else {
    // Most held prefix blocks (prefix only), then least loaded, then the lowest index.
    for (size_t w = 1; w < workers; ++w) {
      const size_t held_w = route_ == KvRoute::prefix ? caches_[w].held_prefix(ids) : 0;
      const size_t held_d = route_ == KvRoute::prefix ? caches_[d].held_prefix(ids) : 0;
      if (held_w > held_d || (held_w == held_d && load_[w] < load_[d])) d = w;
    }
  }
  ++i_;
  const uint64_t held_tokens = caches_[d].held_prefix(ids) * hash_block_tokens_;
  const uint64_t skip = std::min(held_tokens / block_tokens_, blocks > 0 ? blocks - 1 : 0);
  caches_[d].use(ids);
  load_[d] += blocks - skip;
  return Choice{static_cast<int>(d), skip};
}

KvRoutePlan route_requests(const KvRouteInput& in) {
  KvRouter router(in);
  const auto workers = static_cast<size_t>(std::max(in.decode_ranks, 1));
  KvRoutePlan plan;
  plan.requests_per_decode.assign(workers, 0);
  plan.saved_per_decode.assign(workers, 0);
  static const std::vector<uint64_t> kNone;
  for (size_t i = 0; i < in.blocks.size(); ++i) {
    const KvRouter::Choice c = router.next(in.blocks[i], i < in.hash_ids.size() ? in.hash_ids[i] : kNone);
    const auto d = static_cast<size_t>(c.decode);
    plan.decode.push_back(c.decode);
    plan.skip.push_back(c.skip);
    plan.blocks += in.blocks[i];
    plan.saved += c.skip;
    ++plan.requests_per_decode[d];
    plan.saved_per_decode[d] += c.skip;
  }
  return plan;
}

}  // namespace railbench
