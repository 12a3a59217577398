// kvcache's option resolution, without ranks or a transport: every refusal names the
// option and the fix, and the defaults give the roles and shape the README describes.
#include <limits>

#include <catch2/catch.hpp>

#include "bench/commands/kvcache/kvcache_options.h"
#include "lib/core/errors.h"

using namespace railbench;

namespace {

KvCacheWorld world(int n, uint64_t mem = 64ULL << 30, std::string host_of_all = "h") {
  KvCacheWorld w;
  w.hosts.assign(static_cast<size_t>(n), host_of_all);
  w.mem_available = mem;
  return w;
}

KvCacheOptions small() {
  KvCacheOptions o;
  o.model = "llama-3.1-8b";
  o.tokens = {"64"};
  return o;
}

std::string usage_error(const KvCacheOptions& o, const KvCacheWorld& w) {
  try {
    resolve_kvcache(o, w);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("kvcache defaults: first half prefill, the rest decode, contiguous not repeated", "[kvcache][options]") {
  KvCacheOptions o = small();
  o.modes = {"per-block", "contiguous", "per-block", "staged"};
  const KvCachePlan p = resolve_kvcache(o, world(4));
  CHECK(p.base.prefill == std::vector<int>{0, 1});
  CHECK(p.base.decode == std::vector<int>{2, 3});
  CHECK(p.modes == std::vector<KvMode>{KvMode::per_block, KvMode::staged});
  CHECK(p.token_counts == std::vector<uint64_t>{64});
  CHECK(p.warmup == 1);
  CHECK(p.model.layers == 32);
  CHECK(p.base.shape.block_tokens == 16);
  CHECK(p.base.shape.layers == 32);
}

TEST_CASE("kvcache token lists take sizes and explicit roles", "[kvcache][options]") {
  KvCacheOptions o = small();
  o.tokens = {"1K", "4K"};
  o.prefill_ranks = "2-3";
  o.decode_ranks = "0,1";
  const KvCachePlan p = resolve_kvcache(o, world(4));
  CHECK(p.token_counts == std::vector<uint64_t>{1024, 4096});
  CHECK(p.base.prefill == std::vector<int>{2, 3});
  CHECK(p.base.decode == std::vector<int>{0, 1});
}

TEST_CASE("kvcache refuses bad options with the option and the fix", "[kvcache][options]") {
  KvCacheOptions o = small();
  CHECK_THAT(usage_error(o, world(1)), Catch::Contains("at least 2 ranks") && Catch::Contains("mpirun -np 2"));
  o.tokens = {"0"};
  CHECK_THAT(usage_error(o, world(2)), Catch::Contains("--tokens 0"));
  o = small();
  o.tokens = {"16"};
  o.block_tokens = 32;
  CHECK_THAT(usage_error(o, world(2)), Catch::Contains("--block-tokens 32 is larger than the request of --tokens 16"));
  o = small();
  o.protocol = "rdma";
  CHECK_THAT(usage_error(o, world(2)), Catch::Contains("unknown --protocol 'rdma'"));
  o = small();
  o.requests = 0;
  CHECK_THAT(usage_error(o, world(2)), Catch::Contains("--requests 0 must be 1 or more"));
  o = small();
  o.concurrency = 0;
  CHECK_THAT(usage_error(o, world(2)), Catch::Contains("--concurrency 0"));
  o = small();
  o.modes = {"paged"};
  CHECK_THAT(usage_error(o, world(2)), Catch::Contains("unknown --mode 'paged'"));
  o = small();
  o.model = "llama-9b";
  CHECK_THAT(usage_error(o, world(2)), Catch::Contains("unknown --model 'llama-9b'"));
}

TEST_CASE("kvcache roles: out of range, twice, none left", "[kvcache][options]") {
  KvCacheOptions o = small();
  o.prefill_ranks = "0-4";
  CHECK_THAT(usage_error(o, world(4)), Catch::Contains("rank 4 in --prefill-ranks/--decode-ranks: ranks are 0..3"));
  o.prefill_ranks = "0,1";
  o.decode_ranks = "1,2";
  CHECK_THAT(usage_error(o, world(4)), Catch::Contains("rank 1 is listed twice"));
  o.prefill_ranks = "0-3";
  o.decode_ranks = "";
  CHECK_THAT(usage_error(o, world(4)), Catch::Contains("no decode ranks left"));
  o.prefill_ranks = "a-b";
  CHECK_THAT(usage_error(o, world(4)), Catch::Contains("--prefill-ranks 'a-b': expected ranks such as 0,1 or 0-3"));
}

TEST_CASE("kvcache memory check counts every rank of this host before allocating", "[kvcache][options]") {
  KvCacheOptions o = small();
  o.model = "llama-3.1-405b";
  o.tokens = {"128K"};
  o.concurrency = 64;
  const std::string e = usage_error(o, world(2, 16ULL << 30));
  CHECK_THAT(e, Catch::Contains("--concurrency 64") && Catch::Contains("on host h (2 rank(s)") &&
                    Catch::Contains("90% of MemAvailable"));
  // The same request split over two hosts needs less on each, and --max-mem raises the limit.
  o.concurrency = 1;
  o.tokens = {"4K"};
  o.max_mem = "1T";
  CHECK_NOTHROW(resolve_kvcache(o, world(2, 1ULL << 30)));
}

TEST_CASE("kvcache keeps its pools in host memory for now", "[kvcache][options]") {
  KvCacheWorld w = world(2);
  w.mem = "cuda";
  CHECK_THAT(usage_error(small(), w), Catch::Contains("kvcache --mem cuda: the KV block pools are host memory only"));
  w.mem = "host";
  CHECK_NOTHROW(resolve_kvcache(small(), w));
}

TEST_CASE("kvcache's memory check counts the per-block bookkeeping, not only the payload",
          "[kvcache][options][robustness]") {
  // --tokens 1000000000 --layers 1 --kv-heads 1 --head-dim 1: 8 GB of payload per rank
  // fit, but 62.5M blocks of block tables and copy plans (32 B each) took the host.
  KvCacheOptions o;
  o.tokens = {"1000000000"};
  o.layers = 1;
  o.kv_heads = 1;
  o.head_dim = 1;
  const std::string what = usage_error(o, world(2, 24ULL << 30));
  CHECK_THAT(what, Catch::Contains("block tables and copy plans") && Catch::Contains("--block-tokens"));
  // The same bytes in blocks of 64K tokens need little bookkeeping and fit.
  o.block_tokens = 65536;
  CHECK(usage_error(o, world(2, 24ULL << 30)).empty());
}

TEST_CASE("kvcache's memory check does not wrap on absurd sizes", "[kvcache][options][robustness]") {
  KvCacheOptions o;
  o.tokens = {"4G"};
  o.layers = 4096;
  o.kv_heads = 8;
  o.head_dim = 128;
  o.concurrency = 1 << 20;
  CHECK_THAT(usage_error(o, world(2, 1ULL << 40)), Catch::Contains("needs more than 18 EB"));
  o.tokens = {"5G"};
  CHECK_THAT(usage_error(o, world(2)), Catch::Contains("more than 4294967296"));
}

TEST_CASE("kvcache --serve: request count per pair, and every refusal before a transfer", "[kvcache][options][serve]") {
  KvCacheOptions o = small();
  o.serve = true;
  o.rate = 100;
  o.duration_s = 2.5;  // 250 requests over 2 pairs: 125 each
  KvCachePlan p = resolve_kvcache(o, world(4));
  CHECK(p.serve_requests_per_pair == 125);
  CHECK_FALSE(p.has_slo);
  o.duration_s = 0;
  o.requests = 5;  // in all, rounded up to a multiple of the pairs
  CHECK(resolve_kvcache(o, world(4)).serve_requests_per_pair == 3);
  o.slo = "p99:50ms";
  p = resolve_kvcache(o, world(4));
  CHECK(p.has_slo);
  CHECK(p.slo.limit_us == 50000);

  KvCacheOptions bad = o;
  bad.rate = 0;
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--rate 0 must be"));
  bad = o;
  bad.burstiness = -1;
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--burstiness -1 must be"));
  bad = o;
  bad.tokens = {"16", "32"};
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--serve takes one --tokens value"));
  bad = o;
  bad.duration_s = std::numeric_limits<double>::quiet_NaN();
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--duration nan must be"));
  bad = o;
  bad.slo = "p99";
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--slo 'p99': expected"));
  bad = o;
  bad.slo = "";
  bad.find_max_rate = true;
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--find-max-rate needs --slo"));
  // Each probe's length: refused naming the option; a p99.9 SLO raises the request count.
  bad = o;
  bad.slo = "p99:1s";
  bad.find_max_rate = true;
  bad.probe_duration_s = 0;
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--probe-duration 0 must be seconds above 0"));
  bad.probe_duration_s = 3;
  bad.probe_warmup_s = -1;
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--probe-warmup -1 must be"));
  bad.probe_warmup_s = 1;
  bad.probe_requests = 0;
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--probe-requests 0 must be 1 or more"));
  bad.probe_requests = 300;
  bad.slo = "p99.9:1s";
  CHECK(resolve_kvcache(bad, world(2)).probe.requests == 1000);
  bad = o;
  bad.rate = 1e6;
  bad.duration_s = 3600;
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("more than 2,147,483,647 in one run"));
  // An hour at 50,000 req/s (180M requests) is planned without a per-request vector.
  KvCacheOptions hour = o;
  hour.rate = 5e4;
  hour.duration_s = 3600;
  const KvCachePlan hp = resolve_kvcache(hour, world(2));
  CHECK(hp.serve_requests == 180000000);
  CHECK(hp.request_tokens.empty());
}

TEST_CASE("kvcache --serve --route, --decode-cache, --prefill-us-per-token, --decode-memory: pools and refusals",
          "[kvcache][options][serve][route]") {
  KvCacheOptions o = small();
  o.serve = true;
  o.requests = 8;
  // least-loaded pairs every prefill rank with every decode rank: 2 x 2 pairs on 4 ranks.
  o.route = "least-loaded";
  KvCachePlan p = resolve_kvcache(o, world(4));
  CHECK(p.route == KvRoute::least_loaded);
  CHECK(p.base.mesh);
  CHECK(kv_pairs(p.base).size() == 4);
  CHECK(p.serve_requests_per_pair == 2);
  o.route = "round-robin";
  CHECK_FALSE(resolve_kvcache(o, world(4)).base.mesh);
  // The Mooncake fixture's hash ids come with the trace.
  KvCacheOptions reuse = o;
  reuse.trace = std::string(RAILBENCH_KV_FIXTURES) + "/mooncake.jsonl";
  reuse.tokens = {"trace"};
  reuse.decode_cache = 8;
  reuse.route = "prefix";
  reuse.layers = 2;  // small: the fixture's longest prompt is 5,398 tokens
  reuse.kv_heads = 1;
  reuse.head_dim = 8;
  p = resolve_kvcache(reuse, world(4));
  REQUIRE(p.trace_hash_ids.size() == p.trace_arrivals.size());
  CHECK(p.trace_hash_ids[0] == std::vector<uint64_t>{0});

  KvCacheOptions bad = o;
  bad.route = "random";
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("unknown --route 'random'"));
  bad = o;
  bad.route = "prefix";
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("with --decode-cache 0 none holds any"));
  bad = o;
  bad.decode_cache = -1;
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--decode-cache -1 must be"));
  bad = o;
  bad.decode_cache = 4;
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--decode-cache needs each request's prompt blocks"));
  bad = reuse;
  bad.trace = std::string(RAILBENCH_KV_FIXTURES) + "/azure.csv";
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("has no hash_ids"));
  bad = o;
  bad.prefill_us_per_token = -1;
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("--prefill-us-per-token -1 must be"));
  bad = o;
  bad.decode_memory = "1K";
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("more than --decode-memory 1K"));
  bad = reuse;
  bad.decode_memory = "4K";  // the first prompt, 382 tokens: 24 blocks of 16 x 64 B
  CHECK_THAT(usage_error(bad, world(2)), Catch::Contains("its request 1: 382 tokens are 24,576 B of KV"));
}
