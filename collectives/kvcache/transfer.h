// The KV-cache transfer of prefill/decode disaggregation, written only against lib/:
// prefill ranks write requests' paged KV blocks into decode ranks' block pools, and
// the decode rank learns a request is complete from a write with immediate (or, over
// send/recv, from its last receive), then answers with a small ack that ends the
// request's time on the prefill rank.
#pragma once

#include <cstdint>
#include <functional>
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
  std::vector<double> request_us;  // prefill, closed loop: each timed request, start to ack
  double wall_s = 0;               // prefill: first timed start (open loop: the run's start) to last ack
  uint64_t wrong = 0;              // decode, with check: bytes off the pattern
  uint64_t ops_per_request = 0;    // writes (or sends) per request, the final one included
  uint64_t requests = 0;           // prefill: timed requests acked
  // prefill: bytes of the timed requests posted on each rail (index = rail), the KV each
  // rail carried from this rank.
  std::vector<uint64_t> rail_bytes;
  uint64_t resent_blocks = 0;  // decode, with check: held (skipped) blocks that arrived anyway
};

// One request of an open-loop run.
struct KvServeRequest {
  uint32_t id = 0;                 // 0, 1, 2, ... in arrival order; the completion immediate carries it
  int pair = 0;                    // index into kv_pairs()
  double arrival_s = 0;            // seconds from the prefill rank's start
  double ready_s = 0;              // at or after arrival_s: when its KV is ready (prefill compute)
  uint64_t blocks = kKvAllBlocks;  // per (layer, plane), at most the shape's; kKvAllBlocks: all
  uint64_t skip = 0;               // leading blocks per (layer, plane) the decode rank holds: not sent
};

// The requests of an open-loop run in id order, generated as the run reads them rather
// than held, so a long run's schedule takes no memory per request. Every rank reads its
// own source and all must yield the same sequence; rewind() starts it over (the transfer
// reads it once to count each pair's requests, then again as the run goes).
class KvRequestSource {
 public:
  virtual ~KvRequestSource() = default;
  virtual void rewind() = 0;
  virtual bool next(KvServeRequest& out) = 0;
};

// Request i at arrival_s[i] (every one at 0 with a count instead), to pair i mod pairs,
// whole: the closed loop's schedule and the simplest open loop.
class KvListSource : public KvRequestSource {
 public:
  KvListSource(std::vector<double> arrival_s, int pairs)
      : arrivals_(std::move(arrival_s)), n_(arrivals_.size()), pairs_(pairs) {}
  KvListSource(size_t n, int pairs) : n_(n), pairs_(pairs) {}
  void rewind() override { at_ = 0; }
  bool next(KvServeRequest& out) override;

 private:
  std::vector<double> arrivals_;
  size_t n_ = 0, at_ = 0;
  int pairs_ = 1;
};

// An open-loop request's times, handed to the run's sink as its ack arrives on the prefill
// rank instead of kept, so the caller decides what to keep (kvcache --serve: histograms).
struct KvServeRecord {
  uint32_t id = 0;
  int pair = 0;
  int rail = -1;           // with pin_rails: the one rail it used
  double arrival_s = 0;    // its arrival, seconds from the prefill rank's start (the schedule's time)
  double queue_us = 0;     // ready until the transfer started (a slot of its pair free)
  double transfer_us = 0;  // start until the decode rank's ack
  double total_us = 0;     // arrival until the ack
};
using KvRecordSink = std::function<void(const KvServeRecord&)>;

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

  // Collective, open loop, no warm-up: every request of `source` (each rank reads its own,
  // all the same sequence) arrives at its arrival_s after the prefill rank's start, is ready
  // at ready_s and starts once ready and a slot of its pair is free (position j of pair k
  // uses slot j % concurrency). Moves (and, with `check`, verifies) blocks [skip, blocks)
  // of every (layer, plane). `sink` gets each request's times on its prefill rank. Never
  // blocks past the progress deadline while waiting for an ack. Memory does not grow with
  // the requests: only those arrived and not yet acked are held.
  KvRunResult run_open_loop(KvMode mode, KvRequestSource& source, bool check, const KvRecordSink& sink);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace railbench
