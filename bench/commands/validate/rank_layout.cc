#include "bench/commands/validate/rank_layout.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

namespace {

// "node01.cluster.local" -> "node01"; an IPv4 address (a launcher's node name may be
// one) stays whole.
std::string short_host(const std::string& h) {
  if (h.find_first_not_of("0123456789.") == std::string::npos) return h;
  return h.substr(0, h.find('.'));
}

}  // namespace

SuLayout map_ranks(const SuConfig& c, const std::vector<std::string>& hosts, const std::vector<int>& local_ranks) {
  std::map<std::string, std::vector<int>> by_host;
  for (size_t r = 0; r < hosts.size(); ++r) {
    const std::string h = short_host(hosts[r]);
    if (std::find(c.nodes.begin(), c.nodes.end(), h) == c.nodes.end()) {
      throw UsageError(
          fmt::format("rank {} runs on host '{}', which is not among the config's nodes ({}): fix "
                      "\"nodes\" in {} or the hostfile",
                      r, h, c.nodes_expr, c.path));
    }
    by_host[h].push_back(static_cast<int>(r));
  }
  SuLayout L;
  L.node_of.resize(hosts.size());
  L.slot_of.resize(hosts.size());
  for (const auto& name : c.nodes) {
    auto it = by_host.find(name);
    if (it == by_host.end()) {
      L.missing.push_back(name);
      continue;
    }
    if (static_cast<int>(it->second.size()) != c.gpus_per_node) {
      throw UsageError(
          fmt::format("node {} has {} ranks but the config has {} GPUs per node: launch one rank per GPU, "
                      "e.g. mpirun -np {} --map-by ppr:{}:node",
                      name, it->second.size(), c.gpus_per_node, by_host.size() * c.gpus_per_node, c.gpus_per_node));
    }
    // The launcher's slot numbering when it is a permutation of 0..G-1 on this node (a
    // launcher may place rank r+1 before rank r on a node: cyclic distributions).
    std::vector<int>& ranks = it->second;
    if (local_ranks.size() == hosts.size()) {
      std::vector<int> by_slot(ranks.size(), -1);
      bool usable = true;
      for (int r : ranks) {
        const int l = local_ranks[static_cast<size_t>(r)];
        if (l < 0 || l >= static_cast<int>(ranks.size()) || by_slot[static_cast<size_t>(l)] >= 0) {
          usable = false;
          break;
        }
        by_slot[static_cast<size_t>(l)] = r;
      }
      if (usable) ranks = std::move(by_slot);
    }
    const int node = static_cast<int>(L.node_names.size());
    L.node_names.push_back(name);
    L.rank_of.push_back(it->second);
    for (int s = 0; s < c.gpus_per_node; ++s) {
      L.node_of[it->second[s]] = node;
      L.slot_of[it->second[s]] = s;
    }
  }
  if (L.node_names.size() < 2) {
    throw UsageError(
        fmt::format("validate needs ranks on at least 2 nodes of the SU to measure links, got {}: "
                    "launch across nodes with a hostfile",
                    L.node_names.size()));
  }
  return L;
}

}  // namespace railbench
