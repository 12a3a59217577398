// Where railbench congestion puts its victims and aggressors on a rail-optimized SU.
// A rank is a (node, slot); slot s's NIC is on rail s, and rail s's leaf switch joins
// the slot-s NICs of every node. Two ranks of the same slot talk inside their leaf;
// ranks of different slots talk through the spine (both leaves' uplinks). So a victim
// pair of one slot shares only its leaf with the aggressors, and a pair of two slots
// shares the spine with every aggressor flow that crosses rails.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace railbench::congestion {

struct RankSpot {
  int node = 0;  // index of the node, in order of first appearance
  int slot = 0;  // index among the node's ranks: the rail its NIC is on
  bool operator==(const RankSpot&) const = default;
};

// Per rank: consecutive blocks of `ranks_per_node` (> 0; it must divide the ranks), or
// (0) ranks that share a host name share a node, slots in rank order. Throws UsageError.
std::vector<RankSpot> layout_ranks(const std::vector<std::string>& hosts, int ranks_per_node);

enum class VictimPath { same_leaf, cross_spine };
const char* to_string(VictimPath p);                 // "same-leaf", "cross-spine"
VictimPath parse_victim_path(const std::string& s);  // throws UsageError naming both

struct Placement {
  VictimPath path = VictimPath::same_leaf;
  std::pair<int, int> victims;  // the victim pair's ranks: node 0 and node 1 of the job
  std::vector<int> aggressors;  // every other rank, in rank order
};

// The victim pair for `path`: node 0 slot 0 with node 1 slot 0 (same leaf), or node 0
// slot 0 with node 1 slot 1 (cross spine: needs 2 or more slots). Every other rank is
// an aggressor; at least 2 are needed. Throws UsageError naming what to launch instead.
Placement place(const std::vector<RankSpot>& spots, VictimPath path);

// Aggressor patterns (GPCNeT's congestors, plus the rail-optimized fabric's worst case).
enum class Pattern { incast, broadcast, alltoall, cross_rail };
const char* to_string(Pattern p);             // "incast", "broadcast", "alltoall", "cross-rail"
Pattern parse_pattern(const std::string& s);  // throws UsageError listing the patterns

// cross-rail: aggressors paired so that each pair is on two nodes and, wherever the
// ranks allow, two slots (its traffic crosses the spine both ways); pairs that cannot
// differ in slot stay on two nodes; a rank left over (odd count) sits the round out.
std::vector<std::pair<int, int>> cross_rail_pairs(const std::vector<int>& aggressors,
                                                  const std::vector<RankSpot>& spots);

// What one aggressor rank does in a pattern: the peers it sends to and receives from.
struct AggressorRole {
  std::vector<int> send_to, recv_from;
};
// incast: every aggressor sends to the first (many to one); broadcast: the first sends
// to every other (one to many); alltoall: every aggressor to every other; cross-rail: to and from its partner. A rank
// not in `aggressors` gets none.
AggressorRole aggressor_role(Pattern p, int rank, const std::vector<int>& aggressors,
                             const std::vector<RankSpot>& spots);

}  // namespace railbench::congestion
