// The one all-reduce factory (as gloo's allreduce.cc): algorithm names, the automatic
// choice, and node-layout facts the choice needs.
#include "collectives/allreduce.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

int NodeLayout::nodes() const {
  return static_cast<int>(std::set<int>(node_of.begin(), node_of.end()).size());
}

bool NodeLayout::uniform() const {
  std::map<int, int> per;
  for (int node : node_of) ++per[node];
  return std::all_of(per.begin(), per.end(), [&](const auto& p) { return p.second == per.begin()->second; });
}

const char* to_string(AllReduceAlgo algo) {
  switch (algo) {
    case AllReduceAlgo::ring: return "ring";
    case AllReduceAlgo::rhd: return "rhd";
    case AllReduceAlgo::hier: return "hier";
    case AllReduceAlgo::automatic: return "auto";
  }
  return "?";
}

AllReduceAlgo parse_allreduce_algo(const std::string& name) {
  for (auto a : {AllReduceAlgo::ring, AllReduceAlgo::rhd, AllReduceAlgo::hier, AllReduceAlgo::automatic})
    if (name == to_string(a)) return a;
  throw UsageError(fmt::format("unknown --algo '{}' for allreduce: use ring, rhd, hier or auto", name));
}

namespace {

// --algo auto: the algorithms the choice can make on this layout, built once at the
// largest size, and the choice made again for every call's size.
class AutoAllReduce : public AllReduce {
 public:
  AutoAllReduce(Progress& progress, const AllReduceSetup& setup)
      : ranks_(progress.transport().world_size()), nodes_(setup.layout.nodes()), uniform_(setup.layout.uniform()) {
    const bool hier = nodes_ > 1 && nodes_ < ranks_ && uniform_;
    for (auto a : {AllReduceAlgo::ring, AllReduceAlgo::rhd, AllReduceAlgo::hier})
      if (a != AllReduceAlgo::hier || hier) algos_[a] = make_allreduce(a, progress, setup);
  }

  std::string name() const override { return "auto"; }
  std::string algo_for(size_t bytes) const override { return to_string(choose(bytes)); }
  void run(const CollectiveBuffers& buffers, size_t count, DataType type, ReduceOp op) override {
    algos_.at(choose(count * size_of(type)))->run(buffers, count, type, op);
  }

 private:
  AllReduceAlgo choose(size_t bytes) const { return choose_allreduce(bytes, ranks_, nodes_, uniform_); }

  int ranks_, nodes_;
  bool uniform_;
  std::map<AllReduceAlgo, std::unique_ptr<AllReduce>> algos_;
};

}  // namespace

std::unique_ptr<AllReduce> make_allreduce(AllReduceAlgo algo, Progress& progress, const AllReduceSetup& setup) {
  const RingOptions& r = setup.ring;
  switch (algo) {
    case AllReduceAlgo::ring: return make_ring_allreduce(progress, r);
    case AllReduceAlgo::rhd: return make_rhd_allreduce(progress, r.max_bytes, r.rails, r.memory);
    case AllReduceAlgo::hier: return make_hier_allreduce(progress, r.max_bytes, r.rails, setup.layout, r.memory);
    case AllReduceAlgo::automatic: return std::make_unique<AutoAllReduce>(progress, setup);
  }
  throw UsageError("unknown all-reduce algorithm");
}

}  // namespace railbench
