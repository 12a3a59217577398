// The rhd and hier all-reduce algorithms, made of the group building blocks.
#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "collectives/allreduce.h"
#include "collectives/group_ops.h"
#include "collectives/reduce.h"
#include "lib/core/errors.h"
#include "lib/transport/gpu.h"

namespace railbench {

namespace {

void check_setup(const Transport& t, int rails, const char* what) {
  if (!t.caps().send_recv) {
    throw UnsupportedError(
        fmt::format("{} all-reduce needs send/recv, which {} ({}) lacks", what, t.name(), t.provider()));
  }
  if (rails < 1 || rails > t.num_rails()) {
    throw UsageError(fmt::format("{} all-reduce asked for {} rails, transport has {}", what, rails, t.num_rails()));
  }
}

// Out of place: the result buffer starts as a copy of the input, then everything
// happens in place there.
Vec start(const CollectiveBuffers& b, size_t count, DataType type, size_t max_bytes, const char* what) {
  const MemoryKind kind = b.recv->kind();
  const size_t bytes = count * size_of(type);
  if (bytes > max_bytes) {
    throw UsageError(
        fmt::format("{} all-reduce of {} bytes exceeds the {} bytes it was built for", what, bytes, max_bytes));
  }
  if (!b.in_place()) copy_bytes(kind, b.recv->at(b.recv_offset), b.send->at(b.send_offset), bytes);
  return Vec{b.recv, b.recv_offset, count};
}

class RhdAllReduce final : public AllReduce {
 public:
  RhdAllReduce(Progress& p, size_t max_bytes, int rails, MemoryKind memory)
      : p_(p), max_bytes_(max_bytes), rails_(rails) {
    check_setup(p_.transport(), rails_, "rhd");
    scratch_ = std::make_unique<gpu::Buffer>(memory, std::max<size_t>(max_bytes_, 64));
    scratch_mr_ = p_.transport().register_memory(scratch_->data(), scratch_->size(), memory);
  }
  std::string name() const override { return "rhd"; }
  void run(const CollectiveBuffers& b, size_t count, DataType type, ReduceOp op) override {
    const Vec v = start(b, count, type, max_bytes_, "rhd");
    rhd_allreduce(p_, Group::world(p_.transport()), rails_, v, type, op, scratch_mr_.get());
  }

 private:
  Progress& p_;
  size_t max_bytes_;
  int rails_;
  std::unique_ptr<gpu::Buffer> scratch_;
  std::unique_ptr<MemoryRegion> scratch_mr_;
};

class HierAllReduce final : public AllReduce {
 public:
  HierAllReduce(Progress& p, size_t max_bytes, int rails, const NodeLayout& layout, MemoryKind memory)
      : p_(p), max_bytes_(max_bytes), rails_(rails) {
    const Transport& t = p_.transport();
    check_setup(t, rails_, "hier");
    make_groups(layout, t.rank(), t.world_size());
    // Scratch: the largest intra-node block for the reduce-scatter, which is also the
    // whole vector of the cross-node rhd.
    const size_t local = static_cast<size_t>(node_.size());
    scratch_ = std::make_unique<gpu::Buffer>(
        memory, std::max(max_bytes_ / local + 64, ring_scratch_bytes(max_bytes_, static_cast<int>(local), 1) + 128));
    scratch_mr_ = p_.transport().register_memory(scratch_->data(), scratch_->size(), memory);
  }
  std::string name() const override { return "hier"; }

  void run(const CollectiveBuffers& b, size_t count, DataType type, ReduceOp op) override {
    const Vec v = start(b, count, type, max_bytes_, "hier");
    const size_t es = size_of(type);
    // 1. reduce-scatter inside the node: local rank i ends with block i reduced over the node;
    ring_reduce_scatter_blocks(p_, node_, rails_, v, type, op, scratch_mr_.get());
    // 2. all-reduce of that block across nodes, among the ranks with the same local
    //    index, which on a rail-optimized fabric share a rail (one leaf, no spine hop);
    const int L = node_.size();
    const Vec mine{v.mr, v.offset + block_first(count, L, node_.me) * es, block_len(count, L, node_.me)};
    rhd_allreduce(p_, rail_, rails_, mine, type, op, scratch_mr_.get());
    // 3. all-gather inside the node.
    ring_all_gather_blocks(p_, node_, rails_, v, type);
  }

 private:
  void make_groups(const NodeLayout& layout, int rank, int n) {
    if (static_cast<int>(layout.node_of.size()) != n) {
      throw UsageError(
          fmt::format("hier all-reduce: node layout names {} ranks, the job has {}", layout.node_of.size(), n));
    }
    std::map<int, std::vector<int>> nodes;  // node -> its ranks in rank order
    for (int r = 0; r < n; ++r) nodes[layout.node_of[static_cast<size_t>(r)]].push_back(r);
    const size_t L = nodes.begin()->second.size();
    for (const auto& [node, ranks] : nodes) {
      if (ranks.size() != L) {
        throw UsageError(fmt::format(
            "--algo hier needs the same number of ranks on every node: node {} has {}, node {} has {} (use --algo "
            "ring or rhd, or launch the same number of ranks per node)",
            nodes.begin()->first, L, node, ranks.size()));
      }
    }
    const auto& mine = nodes.at(layout.node_of[static_cast<size_t>(rank)]);
    node_.ranks = mine;
    node_.me = static_cast<int>(std::find(mine.begin(), mine.end(), rank) - mine.begin());
    for (const auto& [node, ranks] : nodes) {
      if (ranks == mine) rail_.me = rail_.size();
      rail_.ranks.push_back(ranks[static_cast<size_t>(node_.me)]);
    }
  }

  Progress& p_;
  size_t max_bytes_;
  int rails_;
  Group node_, rail_;
  std::unique_ptr<gpu::Buffer> scratch_;
  std::unique_ptr<MemoryRegion> scratch_mr_;
};

}  // namespace

std::unique_ptr<AllReduce> make_rhd_allreduce(Progress& progress, size_t max_bytes, int rails, MemoryKind memory) {
  return std::make_unique<RhdAllReduce>(progress, max_bytes, rails, memory);
}

std::unique_ptr<AllReduce> make_hier_allreduce(Progress& progress, size_t max_bytes, int rails,
                                               const NodeLayout& layout, MemoryKind memory) {
  return std::make_unique<HierAllReduce>(progress, max_bytes, rails, layout, memory);
}

AllReduceAlgo choose_allreduce(size_t bytes, int ranks, int nodes, bool uniform_nodes) {
  // Measured on one host over ofi:shm (bench/commands/collectives/README.md, --algo): rhd leads the ring up to
  // this size, where the ring's pipelining takes over.
  constexpr size_t kCrossover = 256 << 10;
  if (ranks <= 2) return bytes < kCrossover ? AllReduceAlgo::rhd : AllReduceAlgo::ring;
  if (nodes > 1 && nodes < ranks && uniform_nodes && bytes >= kCrossover) return AllReduceAlgo::hier;
  return bytes < kCrossover ? AllReduceAlgo::rhd : AllReduceAlgo::ring;
}

}  // namespace railbench
