#include "bench/runner/memory_setup.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/gpu.h"

namespace railbench {

MemoryKind parse_memory_kind(const std::string& s) {
  if (s == "host") return MemoryKind::host;
  if (s == "cuda") return MemoryKind::cuda;
  if (s == "cuda-host" || s == "cuda_host") return MemoryKind::cuda_host;
  throw UsageError(fmt::format("unknown --mem '{}': use host, cuda (GPU memory) or cuda-host (pinned host memory)", s));
}

std::vector<int> parse_gpu_map(const std::string& s, const std::string& exclusive_for) {
  std::vector<int> map;
  if (s.empty()) return map;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int v = -1;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 0) {
      throw UsageError(fmt::format(
          "--gpu-map '{}': '{}' is not a GPU index; give one index per local rank, e.g. --gpu-map 0,1,2,3", s, item));
    }
    if (!exclusive_for.empty() && std::find(map.begin(), map.end(), v) != map.end()) {
      throw UsageError(fmt::format("--gpu-map '{}' names GPU {} twice: {} needs a GPU of its own for each local rank",
                                   s, v, exclusive_for));
    }
    map.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return map;
}

int gpu_for_local_rank(const std::vector<int>& map, int local_rank, int devices) {
  int gpu = local_rank;
  if (!map.empty()) {
    if (local_rank >= static_cast<int>(map.size())) {
      throw UsageError(fmt::format("--gpu-map has {} entries but this node runs local rank {}: give one per local rank",
                                   map.size(), local_rank));
    }
    gpu = map[static_cast<size_t>(local_rank)];
  }
  if (gpu >= devices) {
    throw UsageError(fmt::format(
        "local rank {} would drive GPU {} but this node shows {} GPU(s) (0..{}): {}", local_rank, gpu, devices,
        devices - 1,
        map.empty() ? "run at most one rank per GPU, or give --gpu-map (0,0 shares GPU 0)" : "fix --gpu-map"));
  }
  return gpu;
}

nlohmann::json MemoryPlacement::to_json() const {
  nlohmann::json j{{"memory", railbench::to_string(kind)}, {"local_rank", local_rank}};
  if (gpu >= 0) {
    j["gpu"] = gpu;
    j["gpu_name"] = gpu_name;
    j["gpu_pci_bus_id"] = gpu_bus_id;
    j["nic"] = nic;
    j["nic_pci_bus_id"] = nic_bus_id;
    j["gpu_nic_relation"] = nic_relation;
  }
  return j;
}

bool gpu_map_shares(const std::vector<int>& map) {
  auto sorted = map;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
}

MemoryPlacement place_memory(const std::string& mem, const std::string& gpu_map, MemoryKind default_kind,
                             int local_rank, const PciTopology& topo, const std::string& exclusive_for) {
  MemoryPlacement p;
  p.kind = mem.empty() ? default_kind : parse_memory_kind(mem);
  p.local_rank = local_rank;
  const auto map = parse_gpu_map(gpu_map, exclusive_for);
  p.shared_gpu = gpu_map_shares(map);
  if (p.kind == MemoryKind::host && default_kind == MemoryKind::host) return p;
  const int devices = gpu::require_devices(mem.empty() ? "-t nccl" : fmt::format("--mem {}", mem));
  p.gpu = gpu_for_local_rank(map, local_rank, devices);
  gpu::set_device(p.gpu);
  const gpu::DeviceInfo info = gpu::device_info(p.gpu);
  p.gpu_name = info.name;
  p.gpu_bus_id = info.pci_bus_id;
  const auto pairs = nearest_nics(topo);
  for (const auto& gn : pairs) {
    if (topo.gpus[static_cast<size_t>(gn.gpu)].bus_id != p.gpu_bus_id || gn.nic < 0) continue;
    const auto& nic = topo.nics[static_cast<size_t>(gn.nic)];
    p.nic = nic.name;
    p.nic_bus_id = nic.bus_id;
    p.nic_relation = to_string(gn.rel);
  }
  return p;
}

std::vector<std::string> describe_affinity(const PciTopology& topo) {
  std::vector<std::string> out;
  for (const auto& gn : nearest_nics(topo)) {
    const auto& g = topo.gpus[static_cast<size_t>(gn.gpu)];
    if (gn.nic < 0) {
      out.push_back(fmt::format("GPU {} {} (NUMA {}) -> no NIC", gn.gpu, g.bus_id, g.numa_node));
      continue;
    }
    const auto& n = topo.nics[static_cast<size_t>(gn.nic)];
    out.push_back(fmt::format("GPU {} {} (NUMA {}) -> {} {} (NUMA {}), {}", gn.gpu, g.bus_id, g.numa_node, n.name,
                              n.bus_id, n.numa_node, to_string(gn.rel)));
  }
  return out;
}

}  // namespace railbench
