// --mem and --gpu-map: which memory the benchmark buffers live in, which GPU each rank
// drives, and the NIC nearest that GPU (the default rail of the slot).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/transport/pci_topology.h"
#include "lib/transport/transport.h"

namespace railbench {

// "host", "cuda" or "cuda-host"; throws UsageError naming the valid values.
MemoryKind parse_memory_kind(const std::string& s);

// "--gpu-map 0,1,2,3": local rank i drives GPU map[i]. Empty: the identity. Throws
// UsageError for anything but non-negative integers. A GPU named twice is shared by
// those local ranks (the GPU paths on a machine with fewer GPUs than ranks), unless
// `exclusive_for` names what refuses that ("-t nccl": NCCL wants one GPU per rank).
std::vector<int> parse_gpu_map(const std::string& s, const std::string& exclusive_for = {});

// Whether the map names some GPU more than once.
bool gpu_map_shares(const std::vector<int>& map);

// The GPU local rank `local_rank` drives: map[local_rank], or local_rank without a
// map. Throws UsageError when the map is too short or names a GPU past `devices`.
int gpu_for_local_rank(const std::vector<int>& map, int local_rank, int devices);

// This rank's memory and GPU, as recorded in the results.
struct MemoryPlacement {
  MemoryKind kind = MemoryKind::host;
  int local_rank = 0;
  int gpu = -1;              // -1: no GPU involved
  bool shared_gpu = false;   // --gpu-map gives some GPU to several local ranks
  std::string gpu_name;      // "NVIDIA H100 80GB HBM3"
  std::string gpu_bus_id;    // "0000:18:00.0"
  std::string nic;           // nearest NIC ("mlx5_0"), empty when unknown
  std::string nic_bus_id;    // its PCI address
  std::string nic_relation;  // PIX, PXB, PHB, NODE, SYS
  nlohmann::json to_json() const;
};

// Resolves --mem/--gpu-map for this rank: checks that a device is visible (one-line
// UnsupportedError otherwise), selects the GPU, and finds its nearest NIC in `topo`.
// `default_kind` applies when `mem` is empty (cuda for -t nccl, else host);
// `exclusive_for` as for parse_gpu_map.
MemoryPlacement place_memory(const std::string& mem, const std::string& gpu_map, MemoryKind default_kind,
                             int local_rank, const PciTopology& topo, const std::string& exclusive_for = {});

// The node's GPU -> NIC table, one line per GPU, for the start of a run.
std::vector<std::string> describe_affinity(const PciTopology& topo);

}  // namespace railbench
