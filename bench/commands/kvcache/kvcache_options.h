// railbench kvcache's options and their resolution into a run: pure logic (no ranks,
// no transport), so every refusal is unit-tested (tests/kvcache/test_options.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/commands/kvcache/kvserve_load.h"
#include "bench/commands/kvcache/kvserve_search.h"
#include "collectives/kvcache/geometry.h"
#include "collectives/kvcache/routing.h"
#include "collectives/kvcache/transfer.h"

namespace railbench {

// The most tokens one request may have (bench/cli/README.md, "Limits"); the memory check refuses far
// fewer on any real host, this keeps its block arithmetic far from overflow.
inline constexpr uint64_t kMaxKvTokens = 1ULL << 32;

struct KvCacheOptions {
  std::string model = "llama-3.1-8b";  // preset name (configs/models), unless --layers is given
  int layers = 0;                      // custom geometry
  int kv_heads = 0;
  int head_dim = 0;
  int latent_dim = 0;  // custom MLA: latent width per token per layer
  int rope_dim = 0;
  std::string kv_dtype = "fp16";
  std::vector<std::string> tokens{"4096"};  // one or more token counts (4K = 4096)
  int block_tokens = 16;
  std::vector<std::string> modes{"per-block", "coalesced", "staged"};
  std::string prefill_ranks;      // "0,1" or "0-1"; default: the first half of the ranks
  std::string decode_ranks;       // default: the other ranks
  int requests = 8;               // timed requests per prefill/decode pair and mode
  int concurrency = 1;            // requests in flight per pair
  int alloc_run = 4;              // block ids the pool allocator hands out in one run
  std::string protocol = "auto";  // auto, write, send
  std::string max_mem;            // per host; default 90% of MemAvailable
  // --serve: open-loop arrivals (bench/commands/kvcache/kvserve_load.h) instead of the sweep.
  bool serve = false;
  double rate = 100;      // requests per second over all pairs
  double burstiness = 1;  // gamma shape of the gaps; 1 = Poisson
  double duration_s = 0;  // > 0: rate x duration requests; else --requests in all
  uint64_t seed = 1;
  std::string slo;                    // "p99:50ms"; empty: no goodput
  std::string trace;                  // --serve: arrival times from this request trace
  double time_scale = 1;              // --trace: divides its gaps
  bool find_max_rate = false;         // search the highest rate meeting --slo
  double probe_warmup_s = 1;          // --find-max-rate: seconds of each probe not judged
  double probe_duration_s = 3;        // --find-max-rate: judged seconds of each probe, at least
  int probe_requests = 300;           // --find-max-rate: judged requests of each probe, at least
  double line_rate_gbps = 0;          // per rail, for the analytical capacity; 0: not printed
  std::string route = "round-robin";  // --serve: which decode rank takes each request
  int decode_cache = 0;               // --serve: prefix blocks each decode rank's LRU holds; 0: off
  double prefill_us_per_token = 0;    // --serve: prefill compute before a request's KV is ready
  std::string decode_memory;          // --serve: a decode rank's KV memory; a larger request is refused
  bool pin_rails = false;             // each request on one rail (its slot's)
  bool stragglers = false;            // record every transfer and name a slow link
  std::string straggler_threshold;    // TIME%,ITERS%; given: --stragglers on
};

// What the run needs from the job: its ranks' hosts, this rank, --mem, -w, and the
// memory the kernel says this host can allocate.
struct KvCacheWorld {
  std::vector<std::string> hosts;  // per rank
  int rank = 0;
  std::string mem;        // --mem as given ("" or "host" accepted)
  int warmup_iters = -1;  // -w; < 0: 1 warm-up request
  uint64_t mem_available = 0;
};

struct KvCachePlan {
  KvModel model;
  int dtype_bytes = 2;
  std::vector<uint64_t> token_counts;
  std::vector<KvMode> modes;  // without contiguous, which always runs first
  KvOptions base;             // roles, shape (tokens set per count), concurrency, alloc run
  int warmup = 1;
  // --serve: requests per pair (the total rounded up to a multiple of the pairs) and the SLO.
  int serve_requests_per_pair = 0;
  size_t serve_requests = 0;           // in all: per pair x pairs (or the trace's whole rounds)
  std::vector<double> trace_arrivals;  // --trace: the arrival times replayed, per_pair x pairs
  std::string trace_note;              // what the trace held, for the header
  bool has_slo = false;
  Slo slo;
  ProbePlan probe;  // --find-max-rate: each probe's warm-up, window and requests
  // --serve --tokens as a distribution (or trace): with trace, every request's tokens,
  // indexed like the arrivals; empty when every request moves token_counts[0] and when they
  // are drawn (again as the run goes, kvserve_source.h). token_counts[0] is then the
  // largest, rounded up to whole blocks, which sizes the pools.
  TokenDist token_dist;
  std::vector<uint64_t> request_tokens;
  std::vector<uint64_t> trace_tokens;  // --trace: its prompt lengths, per_pair x pairs
  // --route (least-loaded and prefix pair every prefill rank with every decode rank:
  // base.mesh) and, with --decode-cache or --route prefix, each replayed request's hash ids.
  KvRoute route = KvRoute::round_robin;
  std::vector<std::vector<uint64_t>> trace_hash_ids;
};

// Throws UsageError (UnsupportedError for --mem cuda) naming the option and the fix.
// The memory check counts every rank of this host at the largest token count.
KvCachePlan resolve_kvcache(const KvCacheOptions& options, const KvCacheWorld& world);

// "0,1", "2-3", "0,2-3"; UsageError naming `option` otherwise.
std::vector<int> parse_ranks(const std::string& text, const char* option);

// Bytes the kernel says can be allocated without swapping (/proc/meminfo MemAvailable).
uint64_t mem_available();

}  // namespace railbench
