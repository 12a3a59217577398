// The one interface every transport (ofi, verbs, nccl) implements.
//
// The contract has two halves, and the compiler holds the first to it:
//   Data path (post_*, post_collective, poll) is noexcept: it never throws, never
//     blocks, and allocates nothing on the way to ok. A post answers Status::ok (one
//     Completion will come back from poll()), Status::retry (no resources now: nothing
//     was posted; call poll() and post again) or Status::error (nothing was posted;
//     last_error() names the peer and rail and says why). Progress happens only inside
//     poll(), as in UCX uct. Blocking helpers with deadlines live in lib/transport/progress.h.
//   Control path (constructors, connect, connect_all, register_memory, local_address,
//     rail_info) may throw railbench::Error subclasses (UsageError, TransportError,
//     UnsupportedError, ...) whose message says what was wrong and what to do.
// Batched writes (post_write_batch): a list of local/remote spans to one (peer, rail),
// posted as ONE operation that completes with ONE Completion (the caller's wr_id, op
// write, bytes the sum) once every write in it has landed, as NIXL posts a prepared
// descriptor list. Same contract as every post: ok (the whole batch is accepted),
// retry (nothing was posted) or error (nothing was posted). A batch holds at most
// caps().max_batch writes (callers split longer lists; a longer one is an error), and
// each write at most caps().max_msg_size bytes. With caps().ordered_writes the writes
// land in list order, and an immediate, when given, rides on the last one, so it never
// overtakes the data. A write of the batch that fails completes the batch with
// status error. What it saves is per-write cost: verbs chains the work requests into
// one ibv_post_send with one signaled; ofi packs the spans into fi_writemsg calls of up
// to iov_limit local and remote iovecs each, posted with FI_MORE.
//
// A throw on the data path would unwind through a caller mid-batch with operations in
// flight that nobody then polls; noexcept turns such a bug into an immediate abort.
//
// Send/recv matching is FIFO per (peer, rail): the n-th send from A to B on a rail
// lands in the n-th receive B posted for A on that rail. This is what an RC queue pair
// gives, what NCCL send/recv gives, and what ofi gives with the sender's rank as tag.
// A receive must be at least as large as the message it matches.
//
// Threading: one transport is driven by one thread at a time (as FI_THREAD_DOMAIN and
// a verbs CQ poller want); ranks-as-threads tests give each thread its own transport.
// Every completion poll() returns is real, including those returned while a caller
// polls to get past Status::retry: dropping one loses an operation (Progress keeps them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/core/clock.h"
#include "lib/core/datatype.h"

namespace railbench {

class Bootstrap;

// Data-path outcome. `retry` means "no resources now": call poll() and post again.
enum class Status : uint8_t { ok, retry, error };

enum class MemoryKind : uint8_t { host, cuda, cuda_host };
const char* to_string(MemoryKind kind);

// What a transport offers. Algorithms check these, never the transport's name.
struct Capabilities {
  bool send_recv = false;           // two-sided, FIFO per (peer, rail)
  bool write = false;               // one-sided RDMA write
  bool read = false;                // one-sided RDMA read
  bool write_with_imm = false;      // write that raises a completion with 32-bit data at the target
  bool native_collectives = false;  // e.g. NCCL: all-reduce etc. run inside the transport
  bool device_memory = false;       // can register GPU memory
  bool ordered_writes = false;      // writes (and a trailing write-with-imm) land in post order
  size_t max_msg_size = 0;          // larger transfers must be split by the caller
  size_t inject_size = 0;           // sends up to this size are copied at post time
  // Operations (sends, or receives) one (peer, rail) can have posted at once: the
  // provider's queue depth. Beyond it a post answers retry until one completes, and a
  // receive never completes before its peer sends: callers that post a window of
  // receives first post it in chunks of at most this many. 0: no fixed limit.
  size_t max_outstanding = 0;
  // The "NIC" is this host's CPU (soft-RoCE rxe, siw): the transfer runs in the kernel on
  // the same cores as the ranks, so a rank that spins through a long wait takes the
  // cycles its own transfer needs. Progress then sleeps through long waits (never
  // inside a latency test), as perftest's bandwidth server does.
  bool cpu_driven_nic = false;
  // The data crosses this host's kernel TCP/IP stack (libfabric's tcp, sockets, udp): the
  // kernel's share of it needs these cores too, but the provider moves data only inside
  // poll, so a waiting rank neither spins long (it yields after 20 us) nor sleeps.
  bool kernel_sockets = false;
  // Writes one post_write_batch may hold; 1 for a transport without a batch form of its
  // own, 0 without one-sided writes.
  size_t max_batch = 0;
  // ping_pong() runs a send/recv latency test inside the transport, on its own progress
  // engine, as native_collectives run a collective there: the round trip then carries
  // none of the post/poll layering, which costs a fast transport (UCX over shared memory)
  // a measurable share of a sub-microsecond round trip.
  bool ping_pong = false;
};

// One NIC / libfabric domain / verbs port.
struct RailInfo {
  std::string name;      // domain or device name, e.g. "eth0", "mlx5_0:1", "shm"
  std::string fabric;    // fabric or subnet, e.g. "192.0.2.0/24"
  std::string address;   // human-readable local address on this rail
  double link_gbps = 0;  // link speed in Gb/s, 0 when the transport cannot tell
  int mtu = 0;           // active MTU in bytes, 0 when unknown
};

// The remote view of one registered buffer: base address and key per rail, serialized
// to bytes for the out-of-band exchange.
struct RailKey {
  uint64_t addr = 0;  // what the target expects as remote address for offset 0
  uint64_t key = 0;
  // A key that does not fit 64 bits (UCX's packed rkey); empty for verbs and ofi. `key`
  // then names the region, so the transport can cache what it unpacked from these bytes.
  std::vector<uint8_t> packed;
  bool operator==(const RailKey&) const = default;
};

struct RemoteKey {
  uint64_t length = 0;
  std::vector<RailKey> rails;

  std::vector<uint8_t> serialize() const;
  static RemoteKey deserialize(std::span<const uint8_t> bytes);  // throws on a short blob
  bool operator==(const RemoteKey&) const = default;
};

// A registered buffer, released when destroyed (RAII). Transports subclass it to keep
// their per-rail handles (fid_mr, ibv_mr).
class MemoryRegion {
 public:
  MemoryRegion(void* data, size_t length, MemoryKind kind) : data_(data), length_(length), kind_(kind) {}
  virtual ~MemoryRegion() = default;
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  void* data() const { return data_; }
  size_t length() const { return length_; }
  MemoryKind kind() const { return kind_; }
  std::byte* at(size_t offset) const { return static_cast<std::byte*>(data_) + offset; }

  virtual RemoteKey remote_key() const = 0;

 private:
  void* data_;
  size_t length_;
  MemoryKind kind_;
};

enum class OpKind : uint8_t { send, recv, write, read, remote_write_imm, collective };
const char* to_string(OpKind kind);

// One finished operation, as returned by poll().
struct Completion {
  uint64_t wr_id = 0;  // the caller's id from post_*; 0 for remote_write_imm
  int peer = -1;       // -1 when the transport cannot tell (remote_write_imm on some providers)
  int rail = 0;
  OpKind op = OpKind::send;
  Status status = Status::ok;
  size_t bytes = 0;  // received bytes for recv
  uint32_t imm = 0;  // immediate data for remote_write_imm
};

// Local side of a transfer: a registered region and a byte range in it.
struct LocalSpan {
  const MemoryRegion* mr = nullptr;
  size_t offset = 0;
  size_t length = 0;
};

// Remote side of a one-sided transfer.
struct RemoteSpan {
  const RemoteKey* key = nullptr;
  size_t offset = 0;
};

// One write of a batch (post_write_batch): src.length bytes from src to dst.
struct WriteSpan {
  LocalSpan src;
  RemoteSpan dst;
};

// Traffic one channel (a verbs queue pair, an ofi endpoint) carried, so a run can show
// that connections really were spread, e.g. over --qps-per-peer queue pairs.
struct ChannelCounters {
  int peer = -1;
  int rail = 0;
  int channel = 0;           // index among this (peer, rail)'s channels
  uint64_t posted = 0;       // work requests posted (sends, receives, writes, reads)
  uint64_t completions = 0;  // local completions reaped, including unsignaled ones they cover
  uint64_t bytes = 0;        // payload bytes posted
};

// One IP flow under a channel, as the fabric's switches see it: a RoCE v2 queue pair is
// UDP from its own source port to 4791. ECMP hashes these header fields, so they decide
// which spine the channel's packets cross; --paths traces each with probes that carry
// the same fields (lib/observe/flow_trace.h).
struct NetworkFlow {
  int peer = -1;
  int rail = 0;
  int channel = 0;
  std::string role;  // which of the channel's flows: "data" (sends), "rma" (writes, reads)
  uint32_t qpn = 0, dest_qpn = 0;
  std::string src_ip, dst_ip;  // dotted IPv4
  uint16_t src_port = 0, dst_port = 0;
  std::string protocol = "udp";
};

// A send/recv ping-pong run by Transport::ping_pong: `iters` round trips of src.length
// bytes with `peer` on `rail`. The leader sends first; the other rank answers each
// message it receives. Messages are tagged sends as post_send's, so no receive of this
// rank for `peer` on `rail` may be posted meanwhile (it would take a message).
struct PingPong {
  int peer = -1;
  int rail = 0;
  LocalSpan src;  // what this rank sends each time
  LocalSpan dst;  // where the peer's messages land
  int iters = 0;
  bool leader = false;
  // Leader only, iters + 1 entries: stamps[i] is read once round trip i's message has
  // been handed over (one clock read per round trip, off its critical path), the last
  // once the final reply has arrived; round trip i lasts stamps[i + 1] - stamps[i].
  Clock::time_point* stamps = nullptr;
  double timeout_s = 0;  // a wait without any completion for this long fails
  double spin_s = 0;     // then a waiting rank yields its core on every idle poll
};

enum class CollectiveKind : uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all };

// Arguments of a native collective, in nccl-tests terms: `count` is elements per rank
// of the all-reduce buffer, of each all-gather contribution, of each reduce-scatter
// result, and of each all-to-all block.
struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::all_reduce;
  LocalSpan send;
  LocalSpan recv;
  size_t count = 0;
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string name() const = 0;      // "ofi", "verbs", "nccl"
  virtual std::string provider() const = 0;  // "tcp;ofi_rxm", "shm", "rxe0", ...
  virtual const Capabilities& caps() const = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual int num_rails() const = 0;
  virtual RailInfo rail_info(int rail) const = 0;

  // ---- control path (may throw) ----

  // Opaque bytes a peer needs to reach this rank on `rail`.
  virtual std::vector<uint8_t> local_address(int rail) const = 0;
  // Makes `peer` reachable on `rail` from its address blob.
  virtual void connect(int peer, int rail, std::span<const uint8_t> remote_address) = 0;
  // Exchanges address blobs over the bootstrap and connects every peer on every rail.
  // Transports with a handshake of their own (NCCL) override it.
  virtual void connect_all(Bootstrap& bootstrap);
  // Registers [data, data+length) on every rail for local and remote access.
  virtual std::unique_ptr<MemoryRegion> register_memory(void* data, size_t length, MemoryKind kind) = 0;

  // ---- data path (never throws, never blocks) ----
  // Unsupported operations (see caps()) answer Status::error.

  virtual Status post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept = 0;
  virtual Status post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept = 0;
  virtual Status post_write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst,
                            uint64_t wr_id) noexcept = 0;
  virtual Status post_write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm,
                                uint64_t wr_id) noexcept = 0;
  virtual Status post_read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src,
                           uint64_t wr_id) noexcept = 0;
  // Writes every span of `ops` (1..caps().max_batch of them) to `peer` on `rail` as one
  // operation: one Completion with `wr_id` when all have landed (see the file comment).
  // With `imm`, the last write is a write-with-imm carrying it (caps().write_with_imm).
  // The default serves a batch of one through post_write/post_write_imm and answers
  // error for more: transports with a batch form override it.
  virtual Status post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                                  uint64_t wr_id) noexcept;

  // A whole collective run inside the transport (caps().native_collectives, e.g. NCCL).
  // Completes through poll() with op == OpKind::collective.
  virtual Status post_collective(const CollectiveOp& op, uint64_t wr_id) noexcept;

  // The ping-pong of `pp` (caps().ping_pong), blocking until it ends: ok, or error with
  // last_error() naming the peer and rail (its deadline passed, its endpoint failed). A
  // measurement helper like Progress's waits, not a data-path post; it throws nothing.
  // Transports without one answer error.
  virtual Status ping_pong(const PingPong& pp) noexcept;
  // Drives progress on every rail and returns up to out.size() finished operations.
  // Failed operations come back with status == error; last_error() says why.
  virtual size_t poll(std::span<Completion> out) noexcept = 0;

  // Human-readable reason for the most recent Status::error, naming peer and rail.
  // Not noexcept: it hands out an owned copy, read by callers that are about to throw a
  // typed error of their own (lib/transport/progress.h), never inside a post/poll loop.
  virtual std::string last_error() const = 0;

  // Per-channel traffic counters since the transport opened; empty when the transport
  // keeps none. Control path: call it between measurements, not inside them.
  virtual std::vector<ChannelCounters> channel_counters() const { return {}; }

  // The IP flows under this rank's channels, where the transport puts the header fields
  // on the wire itself and knows them (verbs over RoCE v2 with IPv4 GIDs); empty
  // otherwise (a provider's sockets, InfiniBand, shared memory). Control path.
  virtual std::vector<NetworkFlow> network_flows() const { return {}; }

  // Microseconds the most recently completed batch of operations took on the device,
  // timed with CUDA events on the transport's stream; < 0 when the transport does not
  // time on a device (host transports: the caller's clock is the measure).
  virtual double device_time_us() const { return -1; }

 protected:
  // Data-path argument check every transport shares: false, with the reason in `why`,
  // when `rail` or `peer` is out of range for this transport. Never throws.
  bool valid_target(const char* what, int peer, int rail, std::string& why) const noexcept;
};

}  // namespace railbench
