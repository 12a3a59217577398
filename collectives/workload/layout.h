// How a training job's parallel groups sit on the ranks, the way Megatron-style
// launchers place them: tensor parallel (TP) innermost, inside a node; then pipeline
// (PP); data parallel (DP) outermost, so the DP group of a GPU slot spans nodes on the
// same slot and its traffic stays on that slot's rail. Expert parallel (EP) groups are
// carved out of DP: ep consecutive DP replicas exchange tokens; experts' own gradients
// are reduced over the DP replicas that hold the same experts (expert-data-parallel).
#pragma once

#include <array>
#include <string>
#include <vector>

namespace railbench::workload {

enum class GroupKind { tp, pp, dp, ep, edp };
inline constexpr int kGroupKinds = 5;
const char* to_string(GroupKind k);

struct ParallelShape {
  int tp = 1, pp = 1, dp = 1, ep = 1;
  // Dimensions from innermost to outermost: "tp-pp-dp" (default) or any permutation.
  std::string order = "tp-pp-dp";
};

// One rank's coordinates.
struct Coords {
  int tp = 0, pp = 0, dp = 0;
};

struct GroupDef {
  std::string name;  // "tp3", "dp0", ...: unique, stable across ranks
  GroupKind kind = GroupKind::tp;
  std::vector<int> ranks;  // member order
};

struct RankMap {
  ParallelShape shape;
  std::vector<Coords> coords;    // per rank
  std::vector<GroupDef> groups;  // every group of every kind
  // Per rank, per kind, its group's index in groups (-1: none), filled by map_ranks so
  // that every rank's schedule finds its groups in constant time at thousands of ranks.
  std::vector<std::array<int, kGroupKinds>> member_of;
  int world() const { return static_cast<int>(coords.size()); }
  int rank_of(const Coords& c) const;
  // The group of `kind` that `rank` belongs to (its index in groups), -1 if none (pp=1 etc.).
  int group_of(GroupKind kind, int rank) const;
};

// Checks the shape against the world (product, order, ep dividing dp, tp dividing the
// ranks of a node) and builds the map. `ranks_per_node` <= 0 skips the node check.
// Throws UsageError with the field and the fix.
RankMap map_ranks(const ParallelShape& shape, int world, int ranks_per_node);

}  // namespace railbench::workload
