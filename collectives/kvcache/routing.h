// Which decode rank serves each request of a KV-cache serving load, and which of the
// request's leading KV blocks that rank holds already (prefix reuse), so they are not
// sent again. Pure logic over the request sequence (no ranks, no transport), so every rank
// computes the same plan before the run and it is unit-tested on its own
// (tests/kvcache/test_routing.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace railbench {

// round_robin: request i to the decode rank of pair i mod pairs. least_loaded: the decode
// rank sent the fewest KV blocks so far. prefix: the decode rank holding the longest prefix
// of the request's blocks (ties: least loaded, then the lowest index).
enum class KvRoute : uint8_t { round_robin, least_loaded, prefix };
const char* to_string(KvRoute route);
KvRoute parse_kv_route(const std::string& name);  // UsageError listing the routes

// The prefix blocks one decode rank holds: at most `capacity` hash ids, the least recently
// used evicted first; capacity 0 holds nothing.
class KvBlockLru {
 public:
  explicit KvBlockLru(size_t capacity) : capacity_(capacity) {}
  bool holds(uint64_t id) const { return where_.count(id) > 0; }
  // How many of `ids`, from the first, are held, up to the first that is not.
  size_t held_prefix(const std::vector<uint64_t>& ids) const;
  // Every id of `ids` becomes the most recently used, in order, the missing ones
  // inserted, the least recently used evicted past the capacity.
  void use(const std::vector<uint64_t>& ids);
  size_t size() const { return order_.size(); }

 private:
  size_t capacity_;
  std::list<uint64_t> order_;  // most recently used first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

struct KvRouteInput {
  KvRoute route = KvRoute::round_robin;
  int decode_ranks = 1;
  // Under round_robin, request i goes to decode rank round_robin[i % size()] (the pairs').
  std::vector<int> round_robin;
  // Per request: KV blocks per (layer, plane), and (may be empty) the hash ids of its
  // prompt, one per `hash_block_tokens` tokens, as Mooncake's traces give them.
  std::vector<uint64_t> blocks;
  std::vector<std::vector<uint64_t>> hash_ids;
  uint64_t hash_block_tokens = 512;
  uint64_t block_tokens = 16;
  size_t cache_blocks = 0;  // hash blocks each decode rank's LRU holds; 0: no reuse
};

struct KvRoutePlan {
  std::vector<int> decode;     // per request: index into the decode ranks
  std::vector<uint64_t> skip;  // per request: leading KV blocks per (layer, plane) not sent
  uint64_t blocks = 0;         // KV blocks per (layer, plane) of every request
  uint64_t saved = 0;          // of those, not sent
  std::vector<uint64_t> requests_per_decode, saved_per_decode;
};

// The same choices one request at a time, in arrival order, for a run that routes its
// requests as it generates them rather than holding a plan per request. Uses `in`'s
// settings (route, decode ranks, round_robin, block sizes, cache_blocks), not its
// per-request blocks and hash ids.
class KvRouter {
 public:
  explicit KvRouter(const KvRouteInput& in);
  struct Choice {
    int decode = 0;     // index into the decode ranks
    uint64_t skip = 0;  // leading KV blocks per (layer, plane) not sent
  };
  // Request i (the count of calls so far) of `blocks` KV blocks with these prompt hash ids.
  Choice next(uint64_t blocks, const std::vector<uint64_t>& hash_ids);

 private:
  KvRoute route_;
  std::vector<int> round_robin_;
  uint64_t hash_block_tokens_, block_tokens_;
  std::vector<KvBlockLru> caches_;
  std::vector<uint64_t> load_;  // KV blocks sent to each decode rank so far
  size_t i_ = 0;
};

// The plan for every request, in arrival order: the choice for request i sees the caches
// and loads left by requests 0..i-1. A held prefix of h hash blocks saves the KV blocks
// wholly inside its h x hash_block_tokens tokens, but never the request's last block: the
// engine recomputes at least the last token, and that block carries the completion.
KvRoutePlan route_requests(const KvRouteInput& in);

}  // namespace railbench
