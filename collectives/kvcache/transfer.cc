#include "collectives/kvcache/transfer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <span>
#include <thread>

#include <fmt/format.h>

#include "collectives/kvcache/geometry.h"
#include "lib/core/clock.h"
#include "lib/core/errors.h"
#include "lib/core/sizes.h"

namespace railbench {

const char* to_string(KvMode mode) {
  switch (mode) {
    case KvMode::per_block: return "per-block";
    case KvMode::coalesced: return "coalesced";
    case KvMode::staged: return "staged";
    case KvMode::contiguous: return "contiguous";
  }
  return "?";
}

KvMode parse_kv_mode(const std::string& name) {
  for (KvMode m : {KvMode::per_block, KvMode::coalesced, KvMode::staged, KvMode::contiguous})
    if (name == to_string(m)) return m;
  throw UsageError(fmt::format("unknown --mode '{}': use per-block, coalesced, staged or contiguous", name));
}

std::vector<KvPair> kv_pairs(const KvOptions& o) {
  std::vector<KvPair> out;
  const size_t n = std::max(o.prefill.size(), o.decode.size());
  if (o.prefill.empty() || o.decode.empty()) return out;
  if (o.mesh) {
    for (int p : o.prefill)
      for (int d : o.decode) out.push_back(KvPair{p, d});
    return out;
  }
  for (size_t k = 0; k < n; ++k) out.push_back(KvPair{o.prefill[k % o.prefill.size()], o.decode[k % o.decode.size()]});
  return out;
}

namespace {

// The pairs `rank` takes part in, in pair order; a pair's slots on that rank start at
// its position here times the concurrency.
std::vector<int> pairs_of(const std::vector<KvPair>& pairs, int rank) {
  std::vector<int> out;
  for (size_t k = 0; k < pairs.size(); ++k)
    if (pairs[k].prefill == rank || pairs[k].decode == rank) out.push_back(static_cast<int>(k));
  return out;
}

int slots_of(const KvOptions& o, int rank) {
  return static_cast<int>(pairs_of(kv_pairs(o), rank).size()) * o.concurrency;
}

uint64_t pool_seed(int rank) {
  return 0x6b76636163686500ULL + static_cast<uint64_t>(rank);
}

}  // namespace

namespace {

// Blocks of one request over all layers and planes (KvShape::units()), saturating.
uint64_t units_sat(const KvShape& s) {
  return mul_sat(mul_sat(static_cast<uint64_t>(s.layers), static_cast<uint64_t>(s.planes)), s.blocks());
}

}  // namespace

uint64_t kv_rank_bytes(const KvOptions& o, int rank) {
  const auto slots = static_cast<uint64_t>(slots_of(o, rank));
  const KvShape& s = o.shape;
  // KvPool::bytes() (slots x blocks per tensor, every tensor, whole blocks) plus staging.
  const uint64_t pool = mul_sat(mul_sat(units_sat(s), slots), mul_sat(s.block_tokens, s.token_bytes));
  const uint64_t request =
      mul_sat(mul_sat(static_cast<uint64_t>(s.layers) * static_cast<uint64_t>(s.planes), s.tokens), s.token_bytes);
  return add_sat(pool, mul_sat(slots, request));
}

uint64_t kv_rank_bookkeeping_bytes(const KvOptions& o, int rank) {
  const uint64_t blocks = o.shape.blocks();
  uint64_t all_slots = 0, max_slots = 0;
  const auto pairs = kv_pairs(o);
  std::vector<int> seen;
  for (const KvPair& p : pairs) {
    for (int r : {p.prefill, p.decode}) {
      if (std::find(seen.begin(), seen.end(), r) != seen.end()) continue;
      seen.push_back(r);
      const auto n = static_cast<uint64_t>(slots_of(o, r));
      all_slots += n;
      max_slots = std::max(max_slots, n);
    }
  }
  // Every rank's KvPool ids (8 B per block and slot), and the run shuffle of the largest.
  const uint64_t tables = mul_sat(mul_sat(blocks, add_sat(all_slots, max_slots)), sizeof(uint64_t));
  // Copy plans: a prefill rank keeps one transfer list and one pack list per slot, and
  // builds one more to count the ops; a decode rank builds two at a time.
  const auto slots = static_cast<uint64_t>(slots_of(o, rank));
  const bool prefill = std::find(o.prefill.begin(), o.prefill.end(), rank) != o.prefill.end();
  const uint64_t lists = slots == 0 ? 0 : prefill ? add_sat(mul_sat(2, slots), 1) : 2;
  return add_sat(tables, mul_sat(mul_sat(lists, units_sat(o.shape)), sizeof(KvCopy)));
}

bool KvListSource::next(KvServeRequest& out) {
  if (at_ >= n_) return false;
  out = KvServeRequest{};
  out.id = static_cast<uint32_t>(at_);
  out.pair = static_cast<int>(at_ % static_cast<size_t>(std::max(pairs_, 1)));
  out.arrival_s = out.ready_s = arrivals_.empty() ? 0 : arrivals_[at_];
  ++at_;
  return true;
}

struct KvTransfer::Impl {
  Impl(Progress& progress, Bootstrap& bootstrap, const KvOptions& options)
      : p(progress), b(bootstrap), o(options), pairs(kv_pairs(options)), rank(bootstrap.rank()) {}

  Progress& p;
  Bootstrap& b;
  KvOptions o;
  std::vector<KvPair> pairs;
  int rank;
  std::vector<int> mine;      // my pairs, in order
  std::vector<KvPool> pools;  // every rank's pool (empty for ranks without pairs)
  std::vector<std::byte> pool_mem, staging_mem, ack_mem;
  std::unique_ptr<MemoryRegion> pool_mr, staging_mr, ack_mr;
  std::vector<RemoteKey> pool_keys, staging_keys;
  std::vector<uint64_t> ack_sends;  // decode: last ack send per slot

  // A request of this rank's pairs as read from the run's source: its position in its pair
  // (request j of a pair uses slot j % concurrency) and, on the decode side, the
  // immediates seen for it.
  struct Request {
    KvServeRequest r;
    int pos = 0;
    int seen = 0;
    bool finished = false;
  };
  // The run's schedule, read as the run goes: each pair's count from a first pass, the
  // positions handed out so far, and which of this rank's pairs a pair is (-1: none).
  KvRequestSource* source = nullptr;
  std::vector<int> count, handed, q_of;
  uint64_t read = 0;  // requests read so far (ids below it)
  bool exhausted = false;
  double last_arrival = -std::numeric_limits<double>::infinity();

  // Counts every pair's requests and checks the ids, then rewinds for the run.
  void begin(KvRequestSource& src) {
    source = &src;
    count.assign(pairs.size(), 0);
    handed.assign(pairs.size(), 0);
    q_of.assign(pairs.size(), -1);
    for (size_t q = 0; q < mine.size(); ++q) q_of[static_cast<size_t>(mine[q])] = static_cast<int>(q);
    read = 0;
    exhausted = false;
    last_arrival = -std::numeric_limits<double>::infinity();
    src.rewind();
    KvServeRequest r;
    uint64_t n = 0;
    // Request ids ride in a 32-bit immediate and positions in an int.
    constexpr uint64_t kMaxRequests = std::numeric_limits<int32_t>::max();
    while (src.next(r)) {
      if (n >= kMaxRequests)
        throw UsageError(fmt::format(
            "kvcache: more than {} requests in one run (a request's id rides in a 32-bit immediate): lower --rate "
            "or --duration",
            with_commas(kMaxRequests)));
      if (r.id != n)
        throw UsageError(fmt::format("kvcache open loop: request {} has id {}: ids run 0, 1, 2, ...", n, r.id));
      if (r.pair < 0 || r.pair >= npairs())
        throw UsageError(fmt::format("kvcache open loop: request {} to pair {} of {} pairs", n, r.pair, npairs()));
      ++count[static_cast<size_t>(r.pair)];
      ++n;
    }
    src.rewind();
  }
  // Reads the next request of the schedule; one of this rank's pairs goes to to[q].
  bool read_next(std::vector<std::deque<Request>>& to) {
    KvServeRequest r;
    if (exhausted || !source->next(r)) {
      exhausted = true;
      return false;
    }
    ++read;
    last_arrival = r.arrival_s;
    const auto k = static_cast<size_t>(r.pair);
    const int pos = handed[k]++;
    if (q_of[k] >= 0) to[static_cast<size_t>(q_of[k])].push_back(Request{r, pos, 0, false});
    return true;
  }
  static bool whole(const KvServeRequest& r) { return r.blocks == kKvAllBlocks && r.skip == 0; }

  // Bytes of blocks [first, n) of a request (whole blocks, but the shape's partly filled
  // last block when n reaches it).
  uint64_t bytes_of(uint64_t n, uint64_t first) const {
    const uint64_t unit =
        static_cast<uint64_t>(o.shape.layers) * static_cast<uint64_t>(o.shape.planes) * o.shape.block_bytes();
    if (n >= o.shape.blocks()) return o.shape.request_bytes() - first * unit;
    return (n - first) * unit;
  }

  int npairs() const { return static_cast<int>(pairs.size()); }
  int slot(int who, int k, int j) const {
    const auto list = pairs_of(pairs, who);
    const auto pos = std::find(list.begin(), list.end(), k) - list.begin();
    return static_cast<int>(pos) * o.concurrency + j % o.concurrency;
  }
  bool block_mode(KvMode m) const { return m == KvMode::per_block || m == KvMode::coalesced; }
  uint64_t staging_offset(int s) const { return static_cast<uint64_t>(s) * o.shape.request_bytes(); }

  // Pool blocks of `s` to its staging slot (pack) or back (unpack).
  std::vector<KvCopy> pack_copies(int s, bool unpack, uint64_t blocks = kKvAllBlocks, uint64_t first = 0) const {
    auto copies = kv_pack_copies(pools[static_cast<size_t>(rank)], s, blocks, first);
    for (KvCopy& c : copies) {
      c.dst += staging_offset(s);
      if (unpack) std::swap(c.src, c.dst);
    }
    return copies;
  }

  // The transfers of blocks [first, blocks) of pair k's request in slot j % C, as both
  // sides compute them.
  std::vector<KvCopy> transfer_copies(KvMode mode, int k, int j, uint64_t blocks, uint64_t first) const {
    const KvPair& pr = pairs[static_cast<size_t>(k)];
    const int ss = slot(pr.prefill, k, j), ds = slot(pr.decode, k, j);
    const size_t max_msg = std::max<size_t>(p.transport().caps().max_msg_size, 64);
    if (!block_mode(mode))
      return pin(
          kv_contiguous_copies(staging_offset(ss), staging_offset(ds), bytes_of(blocks, first), max_msg, o.rails), k,
          j);
    auto copies = kv_block_copies(pools[static_cast<size_t>(pr.prefill)], ss, pools[static_cast<size_t>(pr.decode)], ds,
                                  mode == KvMode::coalesced, o.rails, blocks, first);
    kv_split_copies(copies, max_msg);
    return pin(std::move(copies), k, j);
  }
  // --pin-rails: every copy of pair k's slot j % C on that slot's one rail. Both sides
  // compute it alike, so the decode rank's receives and immediates follow.
  int pinned_rail(int k, int j) const { return (k * o.concurrency + j % o.concurrency) % o.rails; }
  std::vector<KvCopy> pin(std::vector<KvCopy> copies, int k, int j) const {
    if (o.pin_rails)
      for (KvCopy& c : copies) c.rail = pinned_rail(k, j);
    return copies;
  }
  // Pair k's request as it runs: its own size and held prefix.
  std::vector<KvCopy> request_copies(KvMode mode, int k, const Request& req) const {
    return transfer_copies(mode, k, req.pos, req.r.blocks, req.r.skip);
  }

  struct Prefill;
  KvRunResult run(KvMode mode, int warmup, bool check, KvRequestSource& src, const KvRecordSink* sink);
  void run_prefill(KvMode mode, int warmup, bool check, const KvRecordSink* sink, KvRunResult& out);
  void run_decode(KvMode mode, bool check, KvRunResult& out);
  void run_decode_writes(KvMode mode, bool check, KvRunResult& out);
  void run_decode_sends(KvMode mode, bool check, KvRunResult& out);
  void finish_request(KvMode mode, int k, const Request& req, bool check, KvRunResult& out);
};

KvTransfer::KvTransfer(Progress& progress, Bootstrap& bootstrap, const KvOptions& options)
    : impl_(std::make_unique<Impl>(progress, bootstrap, options)) {
  Impl& m = *impl_;
  Transport& t = progress.transport();
  const int n = t.world_size();
  auto bad_rank = [&](int r) { return r < 0 || r >= n; };
  for (const auto* list : {&options.prefill, &options.decode}) {
    if (list->empty()) throw UsageError("KV-cache transfer needs at least one prefill and one decode rank");
    for (int r : *list)
      if (bad_rank(r)) throw UsageError(fmt::format("rank {} in the prefill/decode lists: ranks are 0..{}", r, n - 1));
  }
  for (int r : options.prefill) {
    if (std::count(options.decode.begin(), options.decode.end(), r) ||
        std::count(options.prefill.begin(), options.prefill.end(), r) > 1)
      throw UsageError(
          fmt::format("rank {} appears twice in --prefill-ranks/--decode-ranks: each rank has one role", r));
  }
  for (int r : options.decode)
    if (std::count(options.decode.begin(), options.decode.end(), r) > 1)
      throw UsageError(fmt::format("rank {} appears twice in --decode-ranks", r));
  if (options.concurrency < 1) throw UsageError(fmt::format("--concurrency {} must be 1 or more", options.concurrency));
  if (options.rails < 1 || options.rails > t.num_rails())
    throw UsageError(
        fmt::format("KV-cache transfer asked for {} rails, transport has {}", options.rails, t.num_rails()));
  const auto& caps = t.caps();
  if (options.protocol == KvProtocol::write && !(caps.write && caps.write_with_imm))
    throw UnsupportedError(
        fmt::format("{} ({}) has no RDMA write with immediate: use the send protocol", t.name(), t.provider()));
  if (options.protocol == KvProtocol::send && !caps.send_recv)
    throw UnsupportedError(fmt::format("{} ({}) has no send/recv", t.name(), t.provider()));

  m.mine = pairs_of(m.pairs, m.rank);
  for (int r = 0; r < n; ++r)
    m.pools.emplace_back(options.shape, slots_of(options, r), options.alloc_run, pool_seed(r));
  const int slots = slots_of(options, m.rank);
  // Zero-filled, so every page is touched before anything is timed.
  m.pool_mem.resize(std::max<uint64_t>(m.pools[static_cast<size_t>(m.rank)].bytes(), 64));
  m.staging_mem.resize(std::max<uint64_t>(static_cast<uint64_t>(slots) * options.shape.request_bytes(), 64));
  m.ack_mem.resize(static_cast<size_t>(std::max(slots, 1)) * 8);
  m.ack_sends.assign(static_cast<size_t>(std::max(slots, 1)), 0);
  m.pool_mr = t.register_memory(m.pool_mem.data(), m.pool_mem.size(), MemoryKind::host);
  m.staging_mr = t.register_memory(m.staging_mem.data(), m.staging_mem.size(), MemoryKind::host);
  m.ack_mr = t.register_memory(m.ack_mem.data(), m.ack_mem.size(), MemoryKind::host);
  for (const auto& blob : bootstrap.all_gather_v(m.pool_mr->remote_key().serialize()))
    m.pool_keys.push_back(RemoteKey::deserialize(blob));
  for (const auto& blob : bootstrap.all_gather_v(m.staging_mr->remote_key().serialize()))
    m.staging_keys.push_back(RemoteKey::deserialize(blob));
}

KvTransfer::~KvTransfer() = default;

KvRunResult KvTransfer::run(KvMode mode, int warmup, int requests, bool check) {
  // Request j of pair k is the (j * pairs + k)-th, all at once.
  KvListSource all(static_cast<size_t>(warmup + requests) * impl_->pairs.size(), impl_->npairs());
  return impl_->run(mode, warmup, check, all, nullptr);
}

KvRunResult KvTransfer::run_open_loop(KvMode mode, KvRequestSource& source, bool check, const KvRecordSink& sink) {
  return impl_->run(mode, 0, check, source, &sink);
}

KvRunResult KvTransfer::Impl::run(KvMode mode, int warmup, bool check, KvRequestSource& src, const KvRecordSink* sink) {
  Impl& m = *this;
  KvRunResult out;
  m.begin(src);
  // Reset on every way out: the source is the caller's and lives only for this call.
  struct Reset {
    Impl& m;
    ~Reset() { m.source = nullptr; }
  } reset{m};
  const bool prefill = std::count(m.o.prefill.begin(), m.o.prefill.end(), m.rank) > 0;
  if (!m.mine.empty()) out.ops_per_request = m.transfer_copies(mode, m.mine.front(), 0, kKvAllBlocks, 0).size();
  m.b.barrier();
  if (!m.mine.empty()) {
    if (prefill) {
      m.run_prefill(mode, warmup, check, sink, out);
    } else {
      m.run_decode(mode, check, out);
    }
  }
  m.p.wait_all("the last KV-cache transfers and acks");
  m.b.barrier();  // runs must not overlap
  return out;
}

// The prefill side of one run(): per (pair, slot) plans computed before anything is
// timed, up to `concurrency` requests in flight per pair, each request's time from its
// first post until the decode rank's ack arrives. Only the requests read and not yet
// acked are held: those waiting for their pair's slot and those in a slot.
struct KvTransfer::Impl::Prefill {
  struct Ack {
    uint64_t id;
    size_t buf;
  };
  struct Slot {
    bool busy = false;
    Request req;
    Clock::time_point started;
  };

  Prefill(Impl& impl, KvMode mode_, int warmup_, bool check_, const KvRecordSink* sink_, KvRunResult& out_)
      : m(impl),
        sink(sink_),
        mode(mode_),
        warmup(warmup_),
        check(check_),
        out(out_),
        ordered(impl.p.transport().caps().ordered_writes),
        plans(impl.mine.size()),
        packs(impl.mine.size()),
        queued(impl.mine.size()),
        slots(impl.mine.size()) {
    out.rail_bytes.assign(static_cast<size_t>(m.o.rails), 0);
    for (size_t q = 0; q < m.mine.size(); ++q) {
      need += static_cast<size_t>(m.count[static_cast<size_t>(m.mine[q])]);
      slots[q].resize(static_cast<size_t>(m.o.concurrency));
      for (int c = 0; c < m.o.concurrency; ++c) {
        plans[q].push_back(m.transfer_copies(mode, m.mine[q], c, kKvAllBlocks, 0));
        packs[q].push_back(m.block_mode(mode) ? std::vector<KvCopy>{}
                                              : m.pack_copies(m.slot(m.rank, m.mine[q], c), false));
      }
    }
    for (size_t i = 0; i < m.ack_mem.size() / 8; ++i) free_bufs.push_back(i);
  }

  void run();
  void run_open_loop();
  bool reap_ready_acks();
  Slot& slot_of(size_t q, const Request& r) { return slots[q][static_cast<size_t>(r.pos % m.o.concurrency)]; }
  // Pair q's oldest request not started has its slot free.
  bool startable(size_t q) { return !queued[q].empty() && !slot_of(q, queued[q].front()).busy; }
  void start(size_t q);
  void post_writes(int peer, const std::vector<KvCopy>& copies, const MemoryRegion* src, const RemoteKey* key,
                   uint32_t req);
  void reap_acks();
  void retire(size_t q, Slot& s, Clock::time_point now);

  Impl& m;
  const KvRecordSink* sink;  // open loop; null: closed loop
  Clock::time_point t0;      // open loop: arrival times count from here
  const KvMode mode;
  const int warmup;
  const bool check;
  KvRunResult& out;
  const bool ordered;
  std::vector<std::vector<std::vector<KvCopy>>> plans, packs;  // [pair][slot]
  std::vector<std::deque<Request>> queued;                     // [pair]: read, not started
  std::vector<std::vector<Slot>> slots;                        // [pair][slot]
  std::vector<Ack> acks;
  std::vector<size_t> free_bufs;
  std::vector<uint64_t> unordered_ids, wait_ids;
  std::vector<std::vector<WriteSpan>> rail_ops;  // post_writes' batches per rail, reused
  std::vector<KvCopy> sized_plan, sized_pack;    // start()'s plans with per-request sizes
  Clock::time_point first = Clock::time_point::max(), last = Clock::time_point::min();
  size_t done = 0, need = 0;
};

void KvTransfer::Impl::Prefill::start(size_t q) {
  const Request req = queued[q].front();
  queued[q].pop_front();
  const int k = m.mine[q];
  const int j = req.pos;
  const int peer = m.pairs[static_cast<size_t>(k)].decode;
  const int s = m.slot(m.rank, k, j);
  const uint32_t id = req.r.id;
  const auto c = static_cast<size_t>(j % m.o.concurrency);
  // Per-request sizes and held prefixes: this request's own plans, built before its time starts.
  const bool whole = Impl::whole(req.r);
  if (!whole) {
    sized_plan = m.request_copies(mode, k, req);
    sized_pack = m.block_mode(mode) ? std::vector<KvCopy>{} : m.pack_copies(s, false, req.r.blocks, req.r.skip);
  }
  const auto& copies = whole ? plans[q][c] : sized_plan;
  const auto& pack = whole ? packs[q][c] : sized_pack;
  if (check) {
    kv_fill(m.pools[static_cast<size_t>(m.rank)], s, m.pool_mem.data(), id, req.r.blocks, req.r.skip);
    if (mode == KvMode::contiguous) kv_apply_copies(pack, m.pool_mem.data(), m.staging_mem.data());
  }
  const Clock::time_point posted = Clock::now();
  Slot& slot = slots[q][c];
  slot.busy = true;
  slot.req = req;
  slot.started = posted;
  if (j >= warmup) {
    first = std::min(first, posted);
    for (const KvCopy& copy : copies) out.rail_bytes[static_cast<size_t>(copy.rail)] += copy.len;
  }
  const size_t buf = free_bufs.back();
  free_bufs.pop_back();
  acks.push_back(Ack{m.p.recv(peer, 0, LocalSpan{m.ack_mr.get(), buf * 8, 8}), buf});
  if (mode == KvMode::staged) kv_apply_copies(pack, m.pool_mem.data(), m.staging_mem.data());
  const MemoryRegion* src = m.block_mode(mode) ? m.pool_mr.get() : m.staging_mr.get();
  const RemoteKey* key =
      m.block_mode(mode) ? &m.pool_keys[static_cast<size_t>(peer)] : &m.staging_keys[static_cast<size_t>(peer)];
  if (m.o.protocol == KvProtocol::send) {
    for (const KvCopy& cp : copies) m.p.send(peer, cp.rail, LocalSpan{src, cp.src, cp.len});
    return;
  }
  post_writes(peer, copies, src, key, id);
}

// Each rail's copies go out as batched writes (Transport::post_write_batch) of at most
// caps().max_batch, the rails taken in turn one batch each so that they run together:
// one post and one completion per batch instead of per block. The immediate must not
// overtake the data. Writes on one rail land in post order (caps().ordered_writes), so
// each rail's last batch carries the immediate on its last write and the decode rank
// waits for one per rail. Otherwise every other write must complete before the one
// that carries it, which goes alone.
void KvTransfer::Impl::Prefill::post_writes(int peer, const std::vector<KvCopy>& copies, const MemoryRegion* src,
                                            const RemoteKey* key, uint32_t req) {
  Progress& p = m.p;
  const size_t max_batch = std::max<size_t>(p.transport().caps().max_batch, 1);
  const size_t batched = ordered ? copies.size() : copies.size() - 1;
  rail_ops.resize(static_cast<size_t>(m.o.rails));
  for (auto& ops : rail_ops) ops.clear();
  for (size_t i = 0; i < batched; ++i) {
    const KvCopy& c = copies[i];
    rail_ops[static_cast<size_t>(c.rail)].push_back(WriteSpan{LocalSpan{src, c.src, c.len}, RemoteSpan{key, c.dst}});
  }
  unordered_ids.clear();
  for (size_t at = 0, left = batched; left > 0; at += max_batch) {
    for (int rail = 0; rail < m.o.rails; ++rail) {
      const auto& ops = rail_ops[static_cast<size_t>(rail)];
      if (at >= ops.size()) continue;
      const size_t n = std::min(max_batch, ops.size() - at);
      const bool final_batch = at + n == ops.size();
      const auto batch = std::span<const WriteSpan>(ops).subspan(at, n);
      const uint64_t id =
          p.write_batch(peer, rail, batch, ordered && final_batch ? std::optional<uint32_t>(req) : std::nullopt);
      if (!ordered) unordered_ids.push_back(id);
      left -= n;
    }
  }
  if (ordered) return;
  for (uint64_t id : unordered_ids) p.wait(id, "KV block writes before the completion write");
  const KvCopy& c = copies.back();
  p.write_imm(peer, c.rail, LocalSpan{src, c.src, c.len}, RemoteSpan{key, c.dst}, req);
}

// Waits for at least one ack and retires every request acked by now.
void KvTransfer::Impl::Prefill::reap_acks() {
  wait_ids.clear();
  for (const Ack& a : acks) wait_ids.push_back(a.id);
  m.p.wait_any(wait_ids, "the ack of a KV-cache request (decode rank saw it complete)");
  const Clock::time_point now = Clock::now();
  for (size_t i = 0; i < acks.size();) {
    if (!m.p.done(acks[i].id)) {
      ++i;
      continue;
    }
    uint64_t req = 0;
    std::memcpy(&req, m.ack_mem.data() + acks[i].buf * 8, 8);
    free_bufs.push_back(acks[i].buf);
    acks.erase(acks.begin() + static_cast<std::ptrdiff_t>(i));
    // The request is in one of this rank's busy slots (pairs x concurrency of them).
    Slot* hit = nullptr;
    size_t hq = 0;
    for (size_t q = 0; q < slots.size() && !hit; ++q)
      for (Slot& s : slots[q])
        if (s.busy && s.req.r.id == req) {
          hit = &s;
          hq = q;
        }
    if (!hit) throw TransportError(fmt::format("rank {}: ack for request {} that this rank did not send", m.rank, req));
    retire(hq, *hit, now);
  }
}

// An acked request frees its slot; a timed one is counted and, open loop, handed to the sink.
void KvTransfer::Impl::Prefill::retire(size_t q, Slot& s, Clock::time_point now) {
  s.busy = false;
  ++done;
  if (s.req.pos < warmup) return;
  ++out.requests;
  last = std::max(last, now);
  const double transfer_us = seconds_between(s.started, now) * 1e6;
  if (!sink) {
    out.request_us.push_back(transfer_us);
    return;
  }
  KvServeRecord rec;
  rec.id = s.req.r.id;
  rec.pair = m.mine[q];
  rec.rail = m.o.pin_rails ? m.pinned_rail(rec.pair, s.req.pos) : -1;
  rec.arrival_s = s.req.r.arrival_s;
  rec.queue_us = (seconds_between(t0, s.started) - s.req.r.ready_s) * 1e6;
  rec.transfer_us = transfer_us;
  rec.total_us = (seconds_between(t0, now) - s.req.r.arrival_s) * 1e6;
  (*sink)(rec);
}

void KvTransfer::Impl::Prefill::run() {
  // Closed loop: the whole schedule (warm-up and timed requests per pair) is small; read it now.
  while (m.read_next(queued)) {
  }
  while (done < need) {
    for (bool more = true; more;) {
      more = false;
      for (size_t q = 0; q < m.mine.size(); ++q) {
        if (startable(q)) {
          start(q);
          more = true;
        }
      }
    }
    reap_acks();
  }
  if (out.requests > 0) out.wall_s = seconds_between(first, last);
}

// Open loop: a request starts when its KV is ready (its arrival time, or after its prefill
// compute), or later when its pair has no free slot (that wait is its queueing). The
// schedule is read up to the first request not yet arrived, so only arrived requests are
// held. Between arrivals the loop polls rather than blocks in wait_any, so that an arrival
// is not held up behind an ack; an ack missing for longer than the progress timeout goes
// to the blocking reap, whose deadline names the peer.
void KvTransfer::Impl::Prefill::run_open_loop() {
  t0 = Clock::now();
  first = t0;
  Clock::time_point last_progress = t0;
  while (done < need) {
    const double now_s = seconds_between(t0, Clock::now());
    while (!m.exhausted && m.last_arrival <= now_s) m.read_next(queued);
    // The last request read has not arrived yet: it, or a ready time, is the next event.
    double next_s = m.exhausted ? std::numeric_limits<double>::infinity() : m.last_arrival;
    for (size_t q = 0; q < m.mine.size(); ++q) {
      while (startable(q)) {
        const double ready = queued[q].front().r.ready_s;
        if (ready > now_s) {
          next_s = std::min(next_s, ready);
          break;
        }
        start(q);
      }
    }
    if (!acks.empty()) {
      if (!std::isfinite(next_s) || seconds_between(last_progress, Clock::now()) > m.p.timeout()) {
        // Nothing can start before an ack (every slot busy, or all started): the blocking
        // wait, which spins then yields as Progress does and throws TimeoutError naming
        // the peer at its deadline.
        reap_acks();
        last_progress = Clock::now();
      } else if (reap_ready_acks()) {
        last_progress = Clock::now();
      } else {
        // An arrival is pending: poll again soon, but let the decode rank and the
        // provider's progress run on a shared host (over kernel sockets they need it).
        std::this_thread::yield();
      }
      continue;
    }
    // Nothing in flight: sleep until the next arrival, leaving the last 200 us to a spin
    // so that the start is not late by a scheduler tick.
    const double wait_s = next_s - seconds_between(t0, Clock::now());
    if (std::isfinite(wait_s) && wait_s > 200e-6)
      std::this_thread::sleep_for(std::chrono::duration<double>(wait_s - 200e-6));
  }
  if (out.requests > 0) out.wall_s = seconds_between(t0, last);
}

// Retires the requests acked by now without waiting; whether any was.
bool KvTransfer::Impl::Prefill::reap_ready_acks() {
  m.p.poll_once();
  for (const Ack& a : acks)
    if (m.p.done(a.id)) {
      reap_acks();  // at least one is done: returns without waiting
      return true;
    }
  return false;
}

void KvTransfer::Impl::run_prefill(KvMode mode, int warmup, bool check, const KvRecordSink* sink, KvRunResult& out) {
  Prefill prefill(*this, mode, warmup, check, sink, out);
  if (sink) {
    prefill.run_open_loop();
  } else {
    prefill.run();
  }
}

void KvTransfer::Impl::finish_request(KvMode mode, int k, const Request& req, bool check, KvRunResult& out) {
  const int s = slot(rank, k, req.pos);
  const uint64_t id = req.r.id;
  const uint64_t blocks = req.r.blocks, skip = req.r.skip;
  if (mode == KvMode::staged || (check && mode == KvMode::contiguous))
    kv_apply_copies(pack_copies(s, true, blocks, skip), staging_mem.data(), pool_mem.data());
  if (check) {
    const KvPool& pool = pools[static_cast<size_t>(rank)];
    out.wrong += kv_count_wrong(pool, s, pool_mem.data(), static_cast<uint32_t>(id), blocks, skip);
    if (skip > 0)
      out.resent_blocks += kv_count_patterned_blocks(pool, s, pool_mem.data(), static_cast<uint32_t>(id), skip);
  }
  uint64_t& last_ack = ack_sends[static_cast<size_t>(s)];
  if (last_ack) p.wait(last_ack, "the previous ack from this slot");
  std::memcpy(ack_mem.data() + static_cast<size_t>(s) * 8, &id, 8);
  last_ack = p.send(pairs[static_cast<size_t>(k)].prefill, 0, LocalSpan{ack_mr.get(), static_cast<size_t>(s) * 8, 8});
}

// Writes: each request completes with one immediate per rail it used when writes are
// ordered per rail, else with one. The schedule is read up to the newest request an
// immediate names, and a request is dropped once finished, so only those between the
// oldest unfinished and the newest seen are held.
void KvTransfer::Impl::run_decode_writes(KvMode mode, bool check, KvRunResult& out) {
  const bool ordered = p.transport().caps().ordered_writes;
  const int expected = mine.size() == 1 ? pairs[static_cast<size_t>(mine[0])].prefill : -1;
  const auto rails_used = [&](const std::vector<KvCopy>& copies) {
    std::vector<char> used(static_cast<size_t>(o.rails), 0);
    for (const KvCopy& copy : copies) used[static_cast<size_t>(copy.rail)] = 1;
    return ordered ? static_cast<int>(std::count(used.begin(), used.end(), 1)) : 1;
  };
  size_t need = 0;
  std::vector<std::vector<int>> needed(mine.size());
  std::vector<std::deque<Request>> upcoming(mine.size());  // [pair], by id
  for (size_t q = 0; q < mine.size(); ++q) {
    need += static_cast<size_t>(count[static_cast<size_t>(mine[q])]);
    for (int c = 0; c < o.concurrency; ++c)
      needed[q].push_back(rails_used(transfer_copies(mode, mine[q], c, kKvAllBlocks, 0)));
  }
  for (size_t done = 0; done < need;) {
    const uint32_t req = p.wait_imm(expected, "the write with immediate that completes a KV-cache request");
    while (read <= req && read_next(upcoming)) {
    }
    Request* hit = nullptr;
    size_t q = 0;
    for (; q < mine.size() && !hit; ++q) {
      auto& list = upcoming[q];
      const auto it =
          std::lower_bound(list.begin(), list.end(), req, [](const Request& a, uint32_t id) { return a.r.id < id; });
      if (it != list.end() && it->r.id == req && !it->finished) hit = &*it;
    }
    if (!hit)
      throw TransportError(fmt::format("rank {}: completion for request {}, not one of this rank's", rank, req));
    --q;
    const int k = mine[q];
    // Per-request sizes: a small request may use fewer rails than its slot's full plan.
    const int need_imms = whole(hit->r) ? needed[q][static_cast<size_t>(hit->pos % o.concurrency)]
                                        : rails_used(request_copies(mode, k, *hit));
    if (++hit->seen < need_imms) continue;
    finish_request(mode, k, *hit, check, out);
    hit->finished = true;
    while (!upcoming[q].empty() && upcoming[q].front().finished) upcoming[q].pop_front();
    ++done;
  }
}

void KvTransfer::Impl::run_decode(KvMode mode, bool check, KvRunResult& out) {
  std::fill(ack_sends.begin(), ack_sends.end(), 0);
  if (o.protocol == KvProtocol::write) {
    run_decode_writes(mode, check, out);
  } else {
    run_decode_sends(mode, check, out);
  }
}

// Two-sided: receives posted per request in the order the prefill rank sends, `concurrency`
// requests ahead per pair, the schedule read as far as the next request to post needs.
void KvTransfer::Impl::run_decode_sends(KvMode mode, bool check, KvRunResult& out) {
  struct Flight {
    size_t q;
    Request req;
    std::vector<uint64_t> ids;
  };
  std::vector<Flight> flights;
  std::vector<std::deque<Request>> upcoming(mine.size());  // [pair], by position
  const MemoryRegion* dst = block_mode(mode) ? pool_mr.get() : staging_mr.get();
  auto post = [&](size_t q, int pos) {
    const int k = mine[q];
    while (handed[static_cast<size_t>(k)] <= pos && read_next(upcoming)) {
    }
    auto& list = upcoming[q];
    Request& req = list[static_cast<size_t>(pos - list.front().pos)];
    req.finished = true;  // posted: the flight keeps it
    Flight f{q, req, {}};
    for (const KvCopy& c : request_copies(mode, k, req))
      f.ids.push_back(p.recv(pairs[static_cast<size_t>(k)].prefill, c.rail, LocalSpan{dst, c.dst, c.len}));
    flights.push_back(std::move(f));
    while (!list.empty() && list.front().finished) list.pop_front();
  };
  size_t need = 0;
  for (size_t q = 0; q < mine.size(); ++q) {
    const int n = count[static_cast<size_t>(mine[q])];
    need += static_cast<size_t>(n);
    for (int j = 0; j < std::min(o.concurrency, n); ++j) post(q, j);
  }
  std::vector<uint64_t> last_ids;
  for (size_t done = 0; done < need;) {
    last_ids.clear();
    for (const Flight& f : flights) last_ids.push_back(f.ids.back());
    p.wait_any(last_ids, "the KV blocks of a request from its prefill rank");
    for (size_t i = 0; i < flights.size();) {
      Flight& f = flights[i];
      if (!p.done(f.ids.back())) {
        ++i;
        continue;
      }
      for (uint64_t id : f.ids) p.wait(id, "the KV blocks of a request from its prefill rank");
      const size_t q = f.q;
      const Request req = f.req;
      flights.erase(flights.begin() + static_cast<std::ptrdiff_t>(i));
      finish_request(mode, mine[q], req, check, out);
      ++done;
      if (req.pos + o.concurrency < count[static_cast<size_t>(mine[q])]) post(q, req.pos + o.concurrency);
    }
  }
}

}  // namespace railbench
