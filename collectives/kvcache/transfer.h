// The KV-cache transfer of prefill/decode disaggregation, written only against lib/:
// prefill ranks write requests' paged KV blocks into decode ranks' block pools, and
// the decode rank learns a request is complete from a write with immediate (or, over
// send/recv, from its last receive), then answers with a small ack that ends the
// request's time on the prefill rank.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/kvcache/layout.h"
#include "lib/runtime/bootstrap.h"
#include "lib/transport/progress.h"

namespace railbench {

// per_block: one write per block, posted as a batch. coalesced: blocks adjacent on
// both sides merged. staged: pack into a contiguous buffer, one write, unpack.
// contiguous: one write of the same bytes between contiguous buffers (the reference).
enum class KvMode : uint8_t { per_block, coalesced, staged, contiguous };
const char* to_string(KvMode mode);
KvMode parse_kv_mode(const std::string& name);  // UsageError listing the modes

// write: one-sided writes and a write with immediate; send: two-sided, for transports
// without one-sided writes.
enum class KvProtocol : uint8_t { write, send };

// Prefill/decode pair k is (prefill[k % P], decode[k % D]), k < max(P, D), or, with
// `mesh`, (prefill[k / D], decode[k % D]) for every one of the P x D combinations (so a
// router may send any prefill rank's request to any decode rank). Request j of pair k is
// the (j * pairs + k)-th request unless run_open_loop is given each request's pair, and
// uses slot j % concurrency of the pair.
struct KvOptions {
  KvShape shape;
  std::vector<int> prefill;
  std::vector<int> decode;
  int concurrency = 1;  // requests in flight per pair
  int alloc_run = 4;    // consecutive block ids the pool allocator hands out at once
  int rails = 1;
  KvProtocol protocol = KvProtocol::write;
  bool mesh = false;
  // Each request on one rail instead of striped over all: slot s of pair k on rail
  // (k x concurrency + s) mod rails, as a deployment binding a request's transfer to one
  // NIC does; a request's time is then one rail's.
  bool pin_rails = false;
};

struct KvPair {
  int prefill = 0;
  int decode = 0;
};
std::vector<KvPair> kv_pairs(const KvOptions& o);

// Bytes one rank allocates and registers: its block pool and staging buffers. Computed
// without building anything; saturates at UINT64_MAX instead of wrapping.
uint64_t kv_rank_bytes(const KvOptions& o, int rank);
// Bytes one rank spends on bookkeeping beside the payload, which grows with the blocks
// rather than the bytes: every rank's block table (KvPool ids, and the shuffle while one
// is built) and the per-(pair, slot) copy plans the prefill side keeps (KvCopy per block,
// for the transfer and for staged packing). Saturates like kv_rank_bytes.
uint64_t kv_rank_bookkeeping_bytes(const KvOptions& o, int rank);

// What one rank measured in one run().
struct KvRunResult {
  std::vector<double> request_us;  // prefill: each timed request, start to ack
  double wall_s = 0;               // prefill: first timed start to last ack
  uint64_t wrong = 0;              // decode, with check: bytes off the pattern
  uint64_t ops_per_request = 0;    // writes (or sends) per request, the final one included
  // Open loop (run() with arrivals), prefill, index-aligned with request_us: arrival until
  // the transfer started (waiting for a free slot of the pair) and arrival until the ack.
  std::vector<double> queue_us, total_us;
  std::vector<uint32_t> request_ids;  // open loop, prefill: which request each record is
  std::vector<int> request_rails;     // open loop, prefill, with pin_rails: the rail each record used
  uint64_t resent_blocks = 0;         // decode, with check: held (skipped) blocks that arrived anyway
};

// kvcache --serve's requests beyond their arrival times, each vector indexed like the
// arrivals and empty when it does not apply.
struct KvServeRequests {
  std::vector<uint64_t> blocks;  // blocks per (layer, plane), at most the shape's; empty: all
  // The pair of each request (kvcache --serve --route); empty: request i to pair i mod
  // pairs, the same count on every pair.
  std::vector<int> pair;
  // Leading blocks per (layer, plane) the decode rank holds already (prefix reuse): not
  // sent, not checked; at most blocks - 1.
  std::vector<uint64_t> skip;
  // When the request's KV is ready on the prefill rank (its arrival plus its prefill
  // compute), seconds from the start; queueing counts from here, total from the arrival.
  // Empty: ready at arrival.
  std::vector<double> ready_s;
};

class KvTransfer {
 public:
  // Collective (every rank of the bootstrap calls it): allocates, touches and
  // registers this rank's pool and staging buffers and exchanges remote keys.
  KvTransfer(Progress& progress, Bootstrap& bootstrap, const KvOptions& options);
  ~KvTransfer();

  // Collective: `warmup` untimed then `requests` timed requests per pair in `mode`.
  // With `check`, prefill fills each request's blocks with its pattern before the
  // request starts and decode verifies them before it acks. Blocking; throws
  // TimeoutError naming the peer when one stops answering.
  KvRunResult run(KvMode mode, int warmup, int requests, bool check);

  // Collective, open loop, no warm-up: `requests` per pair (or, with `load.pair`, every
  // request of arrival_s); pair k's request j arrives `arrival_s[j * pairs + k]` seconds
  // after the prefill rank's start (every rank passes the same times), is ready then (or at
  // load.ready_s) and starts once ready and a slot of its pair is free. Never blocks past
  // the progress deadline while waiting for an ack. With load.blocks it moves (and, with
  // `check`, verifies) only blocks [skip, blocks) of every (layer, plane) of its slot.
  KvRunResult run_open_loop(KvMode mode, int requests, const std::vector<double>& arrival_s, bool check,
                            const KvServeRequests& load = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace railbench
