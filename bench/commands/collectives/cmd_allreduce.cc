// railbench allreduce: nccl-tests' all_reduce_perf over any transport, with railbench's
// ring, rhd, rail-aware hier or automatic choice (collectives/allreduce.h).
#include "bench/commands/collectives/collective_sweep.h"
#include "collectives/check.h"

namespace railbench {

namespace {

class AllReduceRunner : public CollectiveRunner {
 public:
  explicit AllReduceRunner(const CollectiveSetup& s)
      : algo_(make_allreduce(parse_allreduce_algo(s.algo), *s.progress, AllReduceSetup{s.ring, s.layout})) {}
  std::string algo_for(size_t bytes) const override { return algo_->algo_for(bytes); }
  void run(const CollectiveBuffers& b, size_t count, DataType type, ReduceOp op) override {
    algo_->run(b, count, type, op);
  }

 private:
  std::unique_ptr<AllReduce> algo_;
};

const CollectiveSpec kAllReduce{
    "allreduce",
    "All-reduce with nccl-tests columns (size, time, algbw, busbw)",
    20,
    Pattern::all_reduce,
    "2(n-1)/n",
    CollectiveKind::all_reduce,
    true,
    false,
    {"ring", "rhd", "hier", "auto"},
    "ring (default), rhd (recursive halving-doubling), hier (rail-aware), auto",
    [](const MemoryRegion* buf, size_t) {
      return CollectiveBuffers{buf, 0, buf, 0};
    },
    [](size_t count, int) { return count; },
    [](size_t count, int) { return count; },
    [](DataType type, ReduceOp op, int rank, int, uint32_t seed, void* in, size_t count) {
      fill_input(type, op, rank, seed, in, count);
    },
    [](DataType type, ReduceOp op, int, int n, uint32_t seed, const void* out, size_t count) {
      return count_wrong_allreduce(type, op, n, seed, out, count);
    },
    [](const CollectiveSetup& s) -> std::unique_ptr<CollectiveRunner> { return std::make_unique<AllReduceRunner>(s); },
    [](CLI::App& sub, CollectiveOptions& o) {
      sub.add_option("--ranks-per-node", o.ranks_per_node,
                     "hier/auto: consecutive ranks per node (default: group by host name)");
      sub.add_option("--slice-bytes", o.slice_bytes, "Pipeline slice of the ring")->capture_default_str();
      sub.add_option("--protocol", o.protocol, "Ring steps: send (two-sided) or write (RDMA write with immediate)")
          ->capture_default_str();
    },
};

const bool cmd_allreduce_registered = register_collective(kAllReduce);

}  // namespace
}  // namespace railbench
