// The collective commands in nccl-tests' shape (src/common.h's per-collective table):
// each of allreduce, allgather, reducescatter and alltoall is a CollectiveSpec filled in
// by its own cmd_*.cc (byte counts, in-place layout, fill, check, bus factor, native
// kind, its own algorithms), and one generic sweep times, gathers and prints them all.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cli/cli.h"
#include "bench/runner/options.h"
#include "bench/runner/run_context.h"
#include "collectives/allreduce.h"
#include "lib/core/bandwidth.h"
#include "lib/core/datatype.h"
#include "lib/transport/transport.h"

namespace railbench {

// The collective commands' own options (one struct for all four; each registers only
// the ones that mean something to it).
struct CollectiveOptions {
  std::string datatype = "f32";
  std::string op = "sum";
  std::string algo;  // empty: the spec's default
  std::string slice_bytes = "16M";
  std::string protocol = "send";
  int window = 4;          // alltoall: steps (peers) in flight
  int ranks_per_node = 0;  // hier/auto: consecutive ranks per node; 0 groups by host name
  // alltoall --routing: each size an uneven MoE dispatch (collectives/moe_routing.h).
  std::string routing;              // empty: the even all-to-all
  int topk = 0;                     // K experts per token (0: unset, 2)
  int experts = 0;                  // E, spread evenly over the ranks (0: unset, 8)
  uint64_t tokens_per_rank = 0;     // fixed token count: the size sets the token's length
  uint64_t hidden = 0;              // elements per token (0: unset, 1024 unless --tokens-per-rank)
  bool stragglers = false;          // --stragglers: who made each slow iteration slow (lib/observe/stragglers.h)
  std::string straggler_threshold;  // empty: 10%,25%; given: --stragglers on
};

// What railbench's own implementation of a pattern needs, built once at the largest size.
struct CollectiveSetup {
  Progress* progress = nullptr;
  std::string algo;  // --algo as given, or the spec's default
  RingOptions ring;  // max_bytes, slice, rails, protocol, memory kind
  NodeLayout layout;
  int window = 4;
  const CollectiveOptions* options = nullptr;  // the command's own options
  std::vector<size_t> sizes;                   // the sweep's sizes in bytes
  DataType type = DataType::f32;
};

// A sweep size that is not n even blocks (alltoall --routing): the runner plans it,
// fills and checks its own buffers, and names the bytes algbw is computed from.
struct UnevenSize {
  uint64_t bytes = 0;     // the size column: bytes each rank sends
  uint64_t count = 0;     // the count column, elements; 0 skips the size
  uint64_t bw_bytes = 0;  // algbw = bw_bytes / time
  size_t in_bytes = 0;    // this rank's input and result, as laid out
  size_t out_bytes = 0;
  std::string columns;  // printed after the table's own
};

// One pattern's implementation as the sweep drives it.
class CollectiveRunner {
 public:
  virtual ~CollectiveRunner() = default;
  // The algorithm that runs a call of `bytes` (the table's algo column, the JSON's algo).
  virtual std::string algo_for(size_t bytes) const = 0;
  virtual void run(const CollectiveBuffers& buffers, size_t count, DataType type, ReduceOp op) = 0;
  // Hooks for per-link detail (all-to-all's step times). `keep`: this call is one of
  // the timed out-of-place iterations of the size (warm-ups are called too).
  virtual void begin_size(size_t /*size_index*/) {}
  virtual void after_call(bool /*keep*/, int /*timed_iters*/) {}
  // Collective over ranks: adds to the size's JSON entry (`block_bytes` per block).
  virtual void end_size(RunContext& /*ctx*/, uint64_t /*bytes*/, size_t /*block_bytes*/, nlohmann::json& /*entry*/) {}
  // Lines after the table.
  virtual void print_summary(const RunContext& /*ctx*/) const {}

  // Uneven sizes (the defaults keep the spec's even blocks): the size's plan, asked
  // before the size runs; the buffer bytes every size fits in, given the even ones;
  // fill and check of host memory laid out as the plan says; header lines and the
  // extra columns' heads (name, unit); what the results' config adds.
  virtual std::optional<UnevenSize> uneven(size_t /*size_index*/) const { return std::nullopt; }
  virtual size_t buffer_bytes(size_t even_bytes) const { return even_bytes; }
  virtual void fill(void* /*in*/, uint32_t /*seed*/) const {}
  virtual uint64_t count_wrong(const void* /*out*/, uint32_t /*seed*/) const { return 0; }
  virtual std::vector<std::string> header_lines() const { return {}; }
  virtual std::pair<std::string, std::string> columns_head() const { return {}; }
  virtual void add_config(nlohmann::json& /*config*/) const {}
};

struct CollectiveSpec {
  const char* name;                // the subcommand: "allreduce"
  const char* help;                // its --help line
  int order;                       // position among the subcommands
  Pattern pattern;                 // the bus factor (lib/core/bandwidth.h)
  const char* busbw_formula;       // printed in the header: "2(n-1)/n"
  CollectiveKind native;           // what a transport with its own collectives (NCCL) runs
  bool reduces;                    // takes -o (reduction op); the others print redop "none"
  bool per_rank_blocks;            // S = count x type x n (all but all-reduce, as nccl-tests)
  std::vector<std::string> algos;  // --algo values; the first is the default
  const char* algo_help;
  // nccl-tests' in-place layout: where send and recv start inside the one result buffer
  // (`own` = this rank's block offset, rank x count x type size).
  CollectiveBuffers (*in_place)(const MemoryRegion* buf, size_t own);
  size_t (*in_count)(size_t count, int n);   // elements of this rank's input
  size_t (*out_count)(size_t count, int n);  // elements of this rank's result
  void (*fill)(DataType type, ReduceOp op, int rank, int n, uint32_t seed, void* in, size_t count);
  uint64_t (*count_wrong)(DataType type, ReduceOp op, int rank, int n, uint32_t seed, const void* out, size_t count);
  std::unique_ptr<CollectiveRunner> (*make)(const CollectiveSetup& setup);
  // Registers the spec's own options beyond the shared ones (--algo values, --window...).
  void (*add_options)(CLI::App& sub, CollectiveOptions& options);
};

// The sweep: sizes x (out-of-place, in-place), timed by bench/runner/timing.h, checked with -c,
// printed with nccl-tests' columns and written to --json after every size.
int run_collective_sweep(Bootstrap& bootstrap, const CommonOptions& common, const CollectiveOptions& options,
                         const CollectiveSpec& spec);

// Registers `spec` as a subcommand (from each cmd_*.cc's static initializer).
bool register_collective(const CollectiveSpec& spec);

}  // namespace railbench
