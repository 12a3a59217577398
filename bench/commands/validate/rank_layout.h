// Which rank is which GPU slot of which node of the SU: ranks sharing a host name are a
// node; their slots 0..gpus_per_node-1 are the launcher's local ranks when it gives them
// (SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK), else rank order (what --map-by ppr:G:node
// gives).
#pragma once

#include <string>
#include <vector>

#include "bench/commands/validate/su_config.h"

namespace railbench {

struct SuLayout {
  std::vector<std::string> node_names;    // the run's nodes, in config order
  std::vector<std::vector<int>> rank_of;  // [node][slot]
  std::vector<int> node_of, slot_of;      // per rank
  std::vector<std::string> missing;       // config nodes not in this run
};

// Throws UsageError for a host the config does not list, a node with the wrong number
// of ranks, or fewer than 2 nodes (nothing to measure).
// `local_ranks` (per rank, -1 unknown) is used for a node only when its ranks' local ranks
// are exactly 0..gpus_per_node-1.
SuLayout map_ranks(const SuConfig& config, const std::vector<std::string>& hosts,
                   const std::vector<int>& local_ranks = {});

}  // namespace railbench
