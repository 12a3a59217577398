// GPU <-> NIC affinity from the PCI topology in sysfs: which NIC sits nearest each GPU,
// as rail-optimized nodes are cabled (on a DGX/HGX H100 each GPU shares a PCIe switch
// with its ConnectX-7). Transport-independent; the sysfs root is a parameter so tests
// run on fixture trees.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace railbench {

struct PciEndpoint {
  std::string name;               // "mlx5_0", "eth0", or the bus id for GPUs
  std::string bus_id;             // "0000:18:00.0"
  std::vector<std::string> path;  // "pci0000:15", "0000:15:01.0", ..., bus_id (root first)
  int numa_node = -1;             // -1 when the platform does not say
};

struct PciTopology {
  std::vector<PciEndpoint> gpus;  // NVIDIA display/3D controllers, in bus id order
  std::vector<PciEndpoint> nics;  // RDMA devices (class/infiniband), else network devices
};

// Reads `sysfs_root` (normally "/sys"): GPUs from bus/pci/devices (vendor 0x10de, class
// 0x0300xx or 0x0302xx), NICs from class/infiniband/*/device, or class/net/*/device
// when there are no RDMA devices. Missing directories give empty lists, never throw.
PciTopology read_pci_topology(const std::filesystem::path& sysfs_root = "/sys");

// How a GPU reaches a NIC, in nvidia-smi topo terms: PIX (one PCIe switch), PXB
// (several switches), PHB (through the root complex), NODE (another root complex on
// the same NUMA node), SYS (across the CPU interconnect).
enum class PciRelation { pix, pxb, phb, node, sys };
const char* to_string(PciRelation r);
PciRelation relation(const PciEndpoint& a, const PciEndpoint& b);

struct GpuNic {
  int gpu = -1;  // index into PciTopology::gpus
  int nic = -1;  // index into PciTopology::nics, -1 when the node has no NIC
  PciRelation rel = PciRelation::sys;
};

// For each GPU the nearest NIC (longest shared PCIe path, then same NUMA node); among
// equally near NICs the one fewest GPUs were given so far, so two GPUs behind one switch
// with two NICs get one each.
std::vector<GpuNic> nearest_nics(const PciTopology& topo);

}  // namespace railbench
