// kvcache --serve's routing (collectives/kvcache/routing.h): the decode ranks' prefix LRU,
// and each route's choice, with the KV blocks a held prefix saves.
#include <catch2/catch.hpp>

#include "collectives/kvcache/routing.h"
#include "lib/core/errors.h"

using namespace railbench;

TEST_CASE("prefix LRU: holds up to its capacity, evicts the least recently used", "[kvcache][route]") {
  KvBlockLru lru(3);
  lru.use({1, 2, 3});
  CHECK(lru.size() == 3);
  CHECK(lru.held_prefix({1, 2, 3, 4}) == 3);
  lru.use({1});  // 1 is now the most recent: 2 goes next
  lru.use({4});
  CHECK(lru.size() == 3);
  CHECK_FALSE(lru.holds(2));
  CHECK(lru.holds(1));
  CHECK(lru.holds(3));
  CHECK(lru.holds(4));
  // The prefix stops at the first id not held, even when later ones are.
  CHECK(lru.held_prefix({1, 2, 3}) == 1);
  CHECK(lru.held_prefix({2, 1}) == 0);
  KvBlockLru off(0);
  off.use({1, 2});
  CHECK(off.size() == 0);
  CHECK(off.held_prefix({1}) == 0);
}

namespace {

// Two decode ranks, blocks of 16 tokens (32 KV blocks per 512-token hash block).
KvRouteInput input(KvRoute route, size_t cache) {
  KvRouteInput in;
  in.route = route;
  in.decode_ranks = 2;
  in.round_robin = {0, 1};
  in.block_tokens = 16;
  in.cache_blocks = cache;
  return in;
}

}  // namespace

TEST_CASE("round-robin: request i to the pairs' decode rank i mod pairs, a held prefix saves blocks",
          "[kvcache][route]") {
  KvRouteInput in = input(KvRoute::round_robin, 8);
  in.blocks = {64, 64, 64, 64};
  in.hash_ids = {{7, 8}, {7, 8}, {7, 9}, {5}};
  const KvRoutePlan plan = route_requests(in);
  CHECK(plan.decode == std::vector<int>{0, 1, 0, 1});
  // Request 2 finds 7 (not 9) on rank 0: one hash block, 32 KV blocks; the others find nothing there.
  CHECK(plan.skip == std::vector<uint64_t>{0, 0, 32, 0});
  CHECK(plan.blocks == 256);
  CHECK(plan.saved == 32);
  CHECK(plan.requests_per_decode == std::vector<uint64_t>{2, 2});
  CHECK(plan.saved_per_decode == std::vector<uint64_t>{32, 0});
}

TEST_CASE("least-loaded: the decode rank sent the fewest KV blocks, ties to the lowest", "[kvcache][route]") {
  KvRouteInput in = input(KvRoute::least_loaded, 0);
  in.blocks = {100, 10, 10, 10, 100};
  const KvRoutePlan plan = route_requests(in);
  // 0 takes 100; 1 takes 10, 10, 10 (30 < 100); then 1 again (30 < 100).
  CHECK(plan.decode == std::vector<int>{0, 1, 1, 1, 1});
  CHECK(plan.saved == 0);
}

TEST_CASE("prefix: the decode rank holding the longest prefix, ties least loaded", "[kvcache][route]") {
  KvRouteInput in = input(KvRoute::prefix, 8);
  in.blocks = {64, 64, 64, 96, 40};
  in.hash_ids = {{1, 2}, {3, 4}, {1, 2}, {3, 4, 5}, {1, 2}};
  const KvRoutePlan plan = route_requests(in);
  // 0: nothing held, both empty -> 0. 1: nothing held, 1 is less loaded -> 1. 2: rank 0
  // holds 1,2 -> 0, and sends only its last block (64 - 1: the whole prompt is held). 3:
  // rank 1 holds 3,4 -> 1. 4: 40 blocks (< 2 hash blocks) on rank 0: all but the last saved.
  CHECK(plan.decode == std::vector<int>{0, 1, 0, 1, 0});
  CHECK(plan.skip == std::vector<uint64_t>{0, 0, 63, 64, 39});
  CHECK(plan.saved == 63 + 64 + 39);
  // Without the cache, the same requests are only balanced by load.
  KvRouteInput cold = in;
  cold.cache_blocks = 0;
  const KvRoutePlan none = route_requests(cold);
  CHECK(none.saved == 0);
  CHECK(none.decode == std::vector<int>{0, 1, 0, 1, 0});
}

TEST_CASE("prefix beats round-robin on shared prefixes, the same input gives the same plan", "[kvcache][route]") {
  KvRouteInput in = input(KvRoute::prefix, 4);
  for (uint64_t i = 0; i < 20; ++i) {
    in.blocks.push_back(64);
    in.hash_ids.push_back({i % 2 == 0 ? 100u : 200u, 1000 + i});  // two system prompts, alternating in pairs
  }
  // Shift so that round-robin sends each prompt to both ranks.
  std::swap(in.hash_ids[1], in.hash_ids[2]);
  const KvRoutePlan prefix = route_requests(in);
  KvRouteInput rr = in;
  rr.route = KvRoute::round_robin;
  const KvRoutePlan robin = route_requests(rr);
  CHECK(prefix.saved > robin.saved);
  CHECK(route_requests(in).decode == prefix.decode);
}

TEST_CASE("route names: an unknown --route lists the routes", "[kvcache][route]") {
  CHECK(parse_kv_route("prefix") == KvRoute::prefix);
  CHECK(std::string(to_string(KvRoute::least_loaded)) == "least-loaded");
  CHECK_THROWS_WITH(parse_kv_route("random"), "unknown --route 'random': use round-robin, least-loaded or prefix");
}
