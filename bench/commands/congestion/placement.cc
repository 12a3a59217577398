#include "bench/commands/congestion/placement.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::congestion {

std::vector<RankSpot> layout_ranks(const std::vector<std::string>& hosts, int ranks_per_node) {
  const int size = static_cast<int>(hosts.size());
  std::vector<RankSpot> spots(hosts.size());
  if (ranks_per_node < 0) {
    throw UsageError(
        fmt::format("--ranks-per-node {} must be 1 or more (0: group ranks by host name)", ranks_per_node));
  }
  if (ranks_per_node > 0) {
    if (size % ranks_per_node != 0) {
      throw UsageError(
          fmt::format("--ranks-per-node {} does not divide the {} ranks of this job: launch a multiple "
                      "of it, or leave it out to group ranks by host name",
                      ranks_per_node, size));
    }
    for (int r = 0; r < size; ++r) spots[r] = RankSpot{r / ranks_per_node, r % ranks_per_node};
    return spots;
  }
  std::map<std::string, int> node_of, next_slot;
  for (int r = 0; r < size; ++r) {
    const auto [it, added] = node_of.emplace(hosts[r], static_cast<int>(node_of.size()));
    spots[r] = RankSpot{it->second, next_slot[hosts[r]]++};
  }
  return spots;
}

const char* to_string(VictimPath p) {
  return p == VictimPath::same_leaf ? "same-leaf" : "cross-spine";
}

VictimPath parse_victim_path(const std::string& s) {
  if (s == "same-leaf") return VictimPath::same_leaf;
  if (s == "cross-spine") return VictimPath::cross_spine;
  throw UsageError(fmt::format("unknown victim placement '{}': use same-leaf or cross-spine", s));
}

namespace {
int rank_at(const std::vector<RankSpot>& spots, RankSpot want) {
  for (size_t r = 0; r < spots.size(); ++r)
    if (spots[r] == want) return static_cast<int>(r);
  return -1;
}
}  // namespace

Placement place(const std::vector<RankSpot>& spots, VictimPath path) {
  int nodes = 0, max_slots = 0;
  for (const auto& s : spots) {
    nodes = std::max(nodes, s.node + 1);
    max_slots = std::max(max_slots, s.slot + 1);
  }
  if (nodes < 2) {
    throw UsageError(fmt::format(
        "congestion needs ranks on 2 or more nodes (this job has {} rank(s) on {} node): launch across nodes, or "
        "give --ranks-per-node to split one host's ranks into nodes",
        spots.size(), nodes));
  }
  Placement p;
  p.path = path;
  const int other_slot = path == VictimPath::same_leaf ? 0 : 1;
  const int a = rank_at(spots, {0, 0}), b = rank_at(spots, {1, other_slot});
  if (a < 0 || b < 0) {
    throw UsageError(fmt::format(
        "{} victims need node 0 slot 0 and node 1 slot {}, and the job has {} rank(s) per node at most: {}",
        to_string(path), other_slot, max_slots,
        path == VictimPath::cross_spine ? "launch 2 or more ranks per node (one per rail), or use --victims same-leaf"
                                        : "launch 1 or more ranks on each node"));
  }
  p.victims = {a, b};
  for (int r = 0; r < static_cast<int>(spots.size()); ++r)
    if (r != a && r != b) p.aggressors.push_back(r);
  if (p.aggressors.size() < 2) {
    throw UsageError(
        fmt::format("congestion needs 2 or more aggressor ranks besides the victim pair, and this job "
                    "has {} rank(s): launch 4 or more ranks",
                    spots.size()));
  }
  return p;
}

const char* to_string(Pattern p) {
  switch (p) {
    case Pattern::incast: return "incast";
    case Pattern::broadcast: return "broadcast";
    case Pattern::alltoall: return "alltoall";
    case Pattern::cross_rail: return "cross-rail";
  }
  return "unknown";
}

Pattern parse_pattern(const std::string& s) {
  if (s == "incast") return Pattern::incast;
  if (s == "broadcast") return Pattern::broadcast;
  if (s == "alltoall") return Pattern::alltoall;
  if (s == "cross-rail") return Pattern::cross_rail;
  throw UsageError(fmt::format("unknown aggressor '{}': use incast, broadcast, alltoall or cross-rail", s));
}

std::vector<std::pair<int, int>> cross_rail_pairs(const std::vector<int>& aggressors,
                                                  const std::vector<RankSpot>& spots) {
  std::vector<std::pair<int, int>> pairs;
  std::vector<bool> taken(aggressors.size(), false);
  // Two passes: first only partners on another node and slot, then any other node.
  for (const bool need_other_slot : {true, false}) {
    for (size_t i = 0; i < aggressors.size(); ++i) {
      if (taken[i]) continue;
      const RankSpot& si = spots[aggressors[i]];
      for (size_t j = i + 1; j < aggressors.size(); ++j) {
        const RankSpot& sj = spots[aggressors[j]];
        if (taken[j] || sj.node == si.node || (need_other_slot && sj.slot == si.slot)) continue;
        taken[i] = taken[j] = true;
        pairs.emplace_back(aggressors[i], aggressors[j]);
        break;
      }
    }
  }
  return pairs;
}

AggressorRole aggressor_role(Pattern p, int rank, const std::vector<int>& aggressors,
                             const std::vector<RankSpot>& spots) {
  AggressorRole role;
  if (std::find(aggressors.begin(), aggressors.end(), rank) == aggressors.end()) return role;
  switch (p) {
    case Pattern::incast: {
      const int target = aggressors.front();
      if (rank == target) {
        role.recv_from.assign(aggressors.begin() + 1, aggressors.end());
      } else {
        role.send_to.push_back(target);
      }
      break;
    }
    case Pattern::broadcast: {
      const int root = aggressors.front();
      if (rank == root) {
        role.send_to.assign(aggressors.begin() + 1, aggressors.end());
      } else {
        role.recv_from.push_back(root);
      }
      break;
    }
    case Pattern::alltoall: {
      // Pairwise-exchange order (rank + k), so the senders do not all start on one peer.
      const auto n = aggressors.size();
      const auto me = static_cast<size_t>(std::find(aggressors.begin(), aggressors.end(), rank) - aggressors.begin());
      for (size_t k = 1; k < n; ++k) {
        role.send_to.push_back(aggressors[(me + k) % n]);
        role.recv_from.push_back(aggressors[(me + n - k) % n]);
      }
      break;
    }
    case Pattern::cross_rail:
      for (const auto& [x, y] : cross_rail_pairs(aggressors, spots)) {
        if (x == rank || y == rank) {
          role.send_to.push_back(x == rank ? y : x);
          role.recv_from.push_back(x == rank ? y : x);
        }
      }
      break;
  }
  return role;
}

}  // namespace railbench::congestion
