// All-reduce algorithms written only against lib/ (Transport through Progress).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "lib/core/datatype.h"
#include "lib/transport/progress.h"
#include "lib/transport/transport.h"

namespace railbench {

// Registered buffers of one collective call. In-place when send and recv are the same
// region and offset.
struct CollectiveBuffers {
  const MemoryRegion* send = nullptr;
  size_t send_offset = 0;
  const MemoryRegion* recv = nullptr;
  size_t recv_offset = 0;

  bool in_place() const { return send == recv && send_offset == recv_offset; }
};

class AllReduce {
 public:
  virtual ~AllReduce() = default;
  virtual std::string name() const = 0;
  // The algorithm that runs a call of `bytes` (an automatic choice answers per size).
  virtual std::string algo_for(size_t /*bytes*/) const { return name(); }
  // Blocking; throws TimeoutError naming the peer when a neighbour stops answering.
  virtual void run(const CollectiveBuffers& buffers, size_t count, DataType type, ReduceOp op) = 0;
};

// How ring steps move data. send: two-sided, the receiver pulls into its scratch.
// write: the sender pushes each slice with write-with-imm into the neighbour's scratch
// (reduce-scatter) or result buffer (all-gather); the imm tells the neighbour it landed,
// and credits sent back keep a scratch half from being overwritten while in use.
// send is the default: over libfabric shm 1.17, writes with data go through the same
// target-side copy as sends plus a key exchange, and measured no faster.
enum class RingProtocol : uint8_t { send, write };
RingProtocol parse_ring_protocol(const std::string& s);  // "send" or "write"; else UsageError
const char* to_string(RingProtocol p);

struct RingOptions {
  size_t max_bytes = 0;  // largest buffer this instance will reduce
  // Pipeline unit: transfers and reductions overlap per slice. 16 MiB because over
  // libfabric shm each message is one CMA copy by the receiver, and fewer, larger ones
  // measured faster (1 MiB slices 1.5x slower at 16 MiB messages, with no gain over
  // tcp; the time is the copy, not the provider's locks: scripts/bench/README.md); real NICs pipeline well at this size
  // too.
  size_t slice_bytes = 16 << 20;
  int rails = 1;  // slices go round-robin over rails
  RingProtocol protocol = RingProtocol::send;
  MemoryKind memory = MemoryKind::host;  // of the caller's buffers; scratch is allocated alike
};

// Ring all-reduce: reduce-scatter then all-gather, 2(n-1) steps, each step's slices
// forwarded as soon as they are reduced. Needs caps().send_recv (and write with
// immediate for the write protocol).
std::unique_ptr<AllReduce> make_ring_allreduce(Progress& progress, const RingOptions& options);

// Recursive halving-doubling for any rank count (non-powers of two fold the first
// 2(n-p) ranks pairwise): 2 log2(p) steps instead of 2(n-1), so fewer latencies at
// small sizes, the same bytes per rank as the ring at large ones (for powers of two).
// `memory`: the kind of the caller's buffers (scratch is allocated alike).
std::unique_ptr<AllReduce> make_rhd_allreduce(Progress& progress, size_t max_bytes, int rails,
                                              MemoryKind memory = MemoryKind::host);

// Which node each rank is on (any ids; equal id = same node).
struct NodeLayout {
  std::vector<int> node_of;

  int nodes() const;     // distinct nodes
  bool uniform() const;  // every node has the same number of ranks
};

// Rail-aware hierarchical all-reduce: reduce-scatter among the L ranks of a node,
// rhd all-reduce of each block across nodes among the ranks with the same local index
// (the same rail on a rail-optimized fabric), all-gather within the node. Needs the
// same L on every node.
std::unique_ptr<AllReduce> make_hier_allreduce(Progress& progress, size_t max_bytes, int rails,
                                               const NodeLayout& layout, MemoryKind memory = MemoryKind::host);

// The all-reduce algorithms, and the one factory every command goes through (the
// allreduce command and validate's collectives phase alike), so a change to the choice
// reaches both.
enum class AllReduceAlgo : uint8_t { ring, rhd, hier, automatic };
const char* to_string(AllReduceAlgo algo);  // "ring", "rhd", "hier", "auto"
// "ring", "rhd", "hier" or "auto"; else UsageError listing them.
AllReduceAlgo parse_allreduce_algo(const std::string& name);

// --algo auto: which all-reduce to run for `bytes` on this shape. One host: rhd below
// the crossover (its log2 steps win while latency dominates), ring above; several
// hosts with several ranks each: hier above the crossover.
AllReduceAlgo choose_allreduce(size_t bytes, int ranks, int nodes, bool uniform_nodes);

struct AllReduceSetup {
  RingOptions ring;   // max_bytes, slice, rails, protocol, memory kind (all algorithms)
  NodeLayout layout;  // hier, and auto's choice
};

// The all-reduce `algo` names; `automatic` builds the algorithms its choice can make on
// this layout and picks one per call (AllReduce::algo_for says which). Throws what the
// algorithms throw on setup (e.g. hier on uneven nodes).
std::unique_ptr<AllReduce> make_allreduce(AllReduceAlgo algo, Progress& progress, const AllReduceSetup& setup);

}  // namespace railbench
