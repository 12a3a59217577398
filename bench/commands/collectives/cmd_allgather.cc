// railbench allgather: nccl-tests' all_gather_perf over any transport (ring).
#include "bench/commands/collectives/collective_sweep.h"
#include "collectives/check.h"
#include "collectives/gather_scatter.h"

namespace railbench {

namespace {

class AllGatherRunner : public CollectiveRunner {
 public:
  explicit AllGatherRunner(const CollectiveSetup& s) : ring_(make_ring_allgather(*s.progress, s.ring)) {}
  std::string algo_for(size_t) const override { return "ring"; }
  void run(const CollectiveBuffers& b, size_t count, DataType type, ReduceOp) override { ring_->run(b, count, type); }

 private:
  std::unique_ptr<AllGather> ring_;
};

const CollectiveSpec kAllGather{
    "allgather",
    "All-gather (ring) with nccl-tests columns",
    30,
    Pattern::all_gather,
    "(n-1)/n",
    CollectiveKind::all_gather,
    false,
    true,
    {"ring"},
    "ring (the only one)",
    // In place: each rank sends from its own block of the result.
    [](const MemoryRegion* buf, size_t own) {
      return CollectiveBuffers{buf, own, buf, 0};
    },
    [](size_t count, int) { return count; },
    [](size_t count, int n) { return count * static_cast<size_t>(n); },
    [](DataType type, ReduceOp, int rank, int, uint32_t seed, void* in, size_t count) {
      fill_block(type, rank, 0, seed, in, count);
    },
    [](DataType type, ReduceOp, int, int n, uint32_t seed, const void* out, size_t count) {
      return count_wrong_allgather(type, n, seed, out, count);
    },
    [](const CollectiveSetup& s) -> std::unique_ptr<CollectiveRunner> { return std::make_unique<AllGatherRunner>(s); },
    [](CLI::App& sub, CollectiveOptions& o) {
      sub.add_option("--slice-bytes", o.slice_bytes, "Pipeline slice of the ring")->capture_default_str();
    },
};

const bool cmd_allgather_registered = register_collective(kAllGather);

}  // namespace
}  // namespace railbench
