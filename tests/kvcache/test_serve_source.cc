// kvcache --serve's schedule generated one request at a time: it is the sequence the
// precomputed pieces give (arrival_times, draw_tokens, route_requests), the same again
// after a rewind, and its one-pass statistics are those of the whole sequence.
#include <catch2/catch.hpp>

#include "bench/commands/kvcache/kvserve_source.h"

using namespace railbench;

namespace {

ServeSourceSpec spec_of(size_t n, KvRoute route) {
  ServeSourceSpec s;
  s.requests = n;
  s.rate = 500;
  s.burstiness = 0.5;
  s.seed = 9;
  s.tokens = parse_token_dist("uniform:1-300", 1000);
  s.max_tokens = 1000;
  s.block_tokens = 16;
  s.shape_blocks = 19;
  s.route.route = route;
  s.route.decode_ranks = 3;
  s.route.round_robin = {0, 1, 2};
  s.route.block_tokens = 16;
  s.pairs = route == KvRoute::round_robin ? 3 : 6;
  s.prefill_ranks = 2;
  s.mesh = route != KvRoute::round_robin;
  return s;
}

}  // namespace

TEST_CASE("serve source: arrivals, sizes and routes as the precomputed schedule, again after a rewind",
          "[kvcache][serve]") {
  for (KvRoute route : {KvRoute::round_robin, KvRoute::least_loaded}) {
    DYNAMIC_SECTION(to_string(route)) {
      const size_t n = 3000;
      const ServeSourceSpec spec = spec_of(n, route);
      const auto arrivals = arrival_times(spec.rate, spec.burstiness, spec.seed, n);
      const auto tokens = draw_tokens(spec.tokens, spec.seed, n, spec.max_tokens);
      KvRouteInput in = spec.route;
      for (uint64_t t : tokens) in.blocks.push_back((t + 15) / 16);
      const KvRoutePlan plan = route_requests(in);
      ServeSource source(spec);
      for (int pass = 0; pass < 2; ++pass) {
        KvServeRequest r;
        size_t i = 0;
        while (source.next(r)) {
          REQUIRE(i < n);
          CHECK(r.id == i);
          CHECK(r.arrival_s == arrivals[i]);
          CHECK(r.ready_s == arrivals[i]);
          CHECK(r.blocks == in.blocks[i]);
          CHECK(source.decode() == plan.decode[i]);
          const int pair =
              route == KvRoute::round_robin ? static_cast<int>(i % 3) : static_cast<int>(i % 2) * 3 + plan.decode[i];
          CHECK(r.pair == pair);
          ++i;
        }
        CHECK(i == n);
        source.rewind();
      }
      const ServeScheduleStats st = schedule_stats(source, 3);
      CHECK(st.requests == n);
      CHECK(st.span_s == arrivals.back());
      CHECK(st.blocks == plan.blocks);
      CHECK(st.requests_per_decode == plan.requests_per_decode);
      uint64_t counted = 0;
      for (const auto& [blocks, count] : st.request_blocks) counted += count;
      CHECK(counted == n);
    }
  }
}

TEST_CASE("serve source: prefill compute makes a request ready after the one before on its prefill rank",
          "[kvcache][serve]") {
  ServeSourceSpec spec = spec_of(200, KvRoute::round_robin);
  spec.tokens = parse_token_dist("100", 1000);
  spec.fixed_tokens = 100;
  spec.prefill_us_per_token = 1000;  // 0.1 s a request, far above the 2 ms between arrivals
  ServeSource source(spec);
  KvServeRequest r;
  std::vector<double> busy(2, 0);
  while (source.next(r)) {
    CHECK(r.blocks == kKvAllBlocks);  // one size: every request moves its whole slot
    const size_t p = static_cast<size_t>(r.pair) % 2;
    const double expect = std::max(r.arrival_s, busy[p]) + 0.1;
    CHECK(r.ready_s == Approx(expect));
    busy[p] = r.ready_s;
  }
  const ServeScheduleStats st = schedule_stats(source, 3);
  CHECK(st.prefill_us.summary().min >= 1e5 * (1 - LatencyHistogram::kRelativeError));
  CHECK(st.prefill_us.summary().max > 1e6);  // the prefill ranks fall behind: the wait grows
}

TEST_CASE("serve source: exact summaries from counts per value", "[kvcache][serve]") {
  std::map<uint64_t, uint64_t> counts{{1, 50}, {2, 49}, {10, 1}};
  const Summary s = summarize_counts(counts, 2);
  std::vector<double> v(50, 2.0);
  v.insert(v.end(), 49, 4.0);
  v.push_back(20.0);
  const Summary x = summarize(v);
  CHECK(s.count == x.count);
  CHECK(s.min == x.min);
  CHECK(s.max == x.max);
  CHECK(s.mean == Approx(x.mean));
  CHECK(s.stdev == Approx(x.stdev));
  CHECK(s.p50 == x.p50);
  CHECK(s.p90 == x.p90);
  CHECK(s.p99 == x.p99);
  CHECK(s.p999 == x.p999);
}
