// railbench reducescatter: nccl-tests' reduce_scatter_perf over any transport (ring).
#include "bench/commands/collectives/collective_sweep.h"
#include "collectives/check.h"
#include "collectives/gather_scatter.h"

namespace railbench {

namespace {

class ReduceScatterRunner : public CollectiveRunner {
 public:
  explicit ReduceScatterRunner(const CollectiveSetup& s) : ring_(make_ring_reducescatter(*s.progress, s.ring)) {}
  std::string algo_for(size_t) const override { return "ring"; }
  void run(const CollectiveBuffers& b, size_t count, DataType type, ReduceOp op) override {
    ring_->run(b, count, type, op);
  }

 private:
  std::unique_ptr<ReduceScatter> ring_;
};

const CollectiveSpec kReduceScatter{
    "reducescatter",
    "Reduce-scatter (ring) with nccl-tests columns",
    40,
    Pattern::reduce_scatter,
    "(n-1)/n",
    CollectiveKind::reduce_scatter,
    true,
    true,
    {"ring"},
    "ring (the only one)",
    // In place: each rank's result lands in its own block of the input.
    [](const MemoryRegion* buf, size_t own) {
      return CollectiveBuffers{buf, 0, buf, own};
    },
    [](size_t count, int n) { return count * static_cast<size_t>(n); },
    [](size_t count, int) { return count; },
    [](DataType type, ReduceOp op, int rank, int n, uint32_t seed, void* in, size_t count) {
      fill_input(type, op, rank, seed, in, count * static_cast<size_t>(n));
    },
    [](DataType type, ReduceOp op, int rank, int n, uint32_t seed, const void* out, size_t count) {
      return count_wrong_allreduce(type, op, n, seed, out, count, static_cast<size_t>(rank) * count);
    },
    [](const CollectiveSetup& s) -> std::unique_ptr<CollectiveRunner> {
      return std::make_unique<ReduceScatterRunner>(s);
    },
    [](CLI::App& sub, CollectiveOptions& o) {
      sub.add_option("--slice-bytes", o.slice_bytes, "Pipeline slice of the ring")->capture_default_str();
    },
};

const bool cmd_reducescatter_registered = register_collective(kReduceScatter);

}  // namespace
}  // namespace railbench
