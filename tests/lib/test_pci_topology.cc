// GPU -> NIC affinity on sysfs trees shaped like real nodes, built in a temp dir.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "lib/transport/pci_topology.h"
#include "tests/support/temp_tree.h"

using namespace railbench;
namespace fs = std::filesystem;

namespace {

// A fake /sys: devices/<pci path> directories with vendor/class/numa_node, and the
// bus/pci/devices and class/{infiniband,net} links real sysfs has.
class FakeSysfs : public railbench::testing::TempTree {
 public:
  FakeSysfs() : TempTree("sysfs") {}

  // `path` from the host bridge down, e.g. "pci0000:15/0000:15:01.0/0000:16:00.0/...".
  fs::path device(const std::string& path, unsigned vendor, unsigned cls, int numa) {
    const fs::path rel = fs::path("devices") / path;
    const fs::path dir = root() / rel;
    write(rel / "vendor", fmt::format("0x{:04x}", vendor));
    write(rel / "class", fmt::format("0x{:06x}", cls));
    write(rel / "numa_node", std::to_string(numa));
    fs::create_directories(root() / "bus/pci/devices");
    fs::create_symlink(dir, root() / "bus/pci/devices" / dir.filename());
    return dir;
  }
  void gpu(const std::string& path, int numa) { device(path, 0x10de, 0x030200, numa); }
  void nic(const std::string& cls_name, const std::string& name, const std::string& path, int numa) {
    const fs::path dir = device(path, 0x15b3, 0x020700, numa);
    fs::create_directories(root() / "class" / cls_name / name);
    fs::create_symlink(dir, root() / "class" / cls_name / name / "device");
  }
};

// HGX H100 as in a DGX H100: four PCIe switches, two per CPU socket, each with two
// H100s and two ConnectX-7s on its downstream ports; a GPU and its NIC share a switch.
void hgx_h100(FakeSysfs& s) {
  const int roots[4] = {0x15, 0x37, 0x9a, 0xba};
  for (int sw = 0; sw < 4; ++sw) {
    const int r = roots[sw];
    const std::string up = fmt::format("pci0000:{0:02x}/0000:{0:02x}:01.0/0000:{1:02x}:00.0", r, r + 1);
    const int numa = sw / 2;
    for (int k = 0; k < 2; ++k) {
      s.gpu(fmt::format("{}/0000:{:02x}:0{}.0/0000:{:02x}:00.0", up, r + 2, k, r + 3 + k), numa);
      s.nic("infiniband", fmt::format("mlx5_{}", 2 * sw + k),
            fmt::format("{}/0000:{:02x}:0{}.0/0000:{:02x}:00.0", up, r + 2, k + 2, r + 5 + k), numa);
    }
  }
  // A host NVMe and the BMC's display: neither is a GPU nor a NIC.
  s.device("pci0000:00/0000:00:01.0/0000:01:00.0", 0x144d, 0x010802, 0);
  s.device("pci0000:00/0000:00:02.0/0000:02:00.0", 0x1a03, 0x030000, 0);
}

}  // namespace

TEST_CASE("HGX H100: every GPU gets the ConnectX-7 behind its own PCIe switch", "[topology]") {
  FakeSysfs s;
  hgx_h100(s);
  const PciTopology topo = read_pci_topology(s.root());
  REQUIRE(topo.gpus.size() == 8);
  REQUIRE(topo.nics.size() == 8);
  const auto pairs = nearest_nics(topo);
  REQUIRE(pairs.size() == 8);
  for (int g = 0; g < 8; ++g) {
    INFO("GPU " << g << " at " << topo.gpus[g].bus_id);
    CHECK(topo.nics[static_cast<size_t>(pairs[g].nic)].name == fmt::format("mlx5_{}", g));
    CHECK(pairs[g].rel == PciRelation::pix);
  }
  CHECK(topo.gpus[0].numa_node == 0);
  CHECK(topo.gpus[7].numa_node == 1);
  CHECK(topo.gpus[0].path.front() == "pci0000:15");
}

TEST_CASE("fewer NICs than GPUs, on the other socket: same NUMA node first, then spread", "[topology]") {
  FakeSysfs s;
  // Eight GPUs, each on its own root port; two NICs on socket 1's root complexes.
  for (int g = 0; g < 8; ++g) {
    const int r = 0x10 + 0x20 * g;
    s.gpu(fmt::format("pci0000:{0:02x}/0000:{0:02x}:01.0/0000:{1:02x}:00.0", r, r + 1), g / 4);
  }
  s.nic("infiniband", "mlx5_0", "pci0000:f4/0000:f4:01.0/0000:f5:00.0", 1);
  s.nic("infiniband", "mlx5_1", "pci0000:f8/0000:f8:01.0/0000:f9:00.0", 1);
  const PciTopology topo = read_pci_topology(s.root());
  REQUIRE(topo.gpus.size() == 8);
  REQUIRE(topo.nics.size() == 2);
  const auto pairs = nearest_nics(topo);
  int per_nic[2] = {0, 0};
  for (int g = 0; g < 8; ++g) {
    INFO("GPU " << g);
    CHECK(pairs[g].rel == (g < 4 ? PciRelation::sys : PciRelation::node));
    ++per_nic[pairs[g].nic];
  }
  CHECK(per_nic[0] == 4);
  CHECK(per_nic[1] == 4);
}

TEST_CASE("Ethernet NICs count when there are no RDMA devices, virtual ones never", "[topology]") {
  FakeSysfs s;
  s.gpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", 0);
  s.nic("net", "eth0", "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", 0);
  fs::create_directories(s.root() / "class/net/lo");  // no device link, as for lo and veth
  const PciTopology topo = read_pci_topology(s.root());
  REQUIRE(topo.nics.size() == 1);
  CHECK(topo.nics[0].name == "eth0");
  CHECK(nearest_nics(topo).at(0).rel == PciRelation::pix);
}

TEST_CASE("relations follow nvidia-smi topo: PIX, PXB, PHB, NODE, SYS", "[topology]") {
  auto ep = [](std::vector<std::string> path, int numa) { return PciEndpoint{"", path.back(), path, numa}; };
  const auto gpu = ep({"pci0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"}, 0);
  CHECK(relation(gpu, ep({"pci0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:01.0", "0000:19:00.0"}, 0)) ==
        PciRelation::pix);
  CHECK(relation(gpu, ep({"pci0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:02.0", "0000:1a:00.0", "0000:1b:00.0",
                          "0000:1c:00.0"},
                         0)) == PciRelation::pxb);
  CHECK(relation(gpu, ep({"pci0000:15", "0000:15:02.0", "0000:20:00.0"}, 0)) == PciRelation::phb);
  CHECK(relation(gpu, ep({"pci0000:37", "0000:37:01.0", "0000:38:00.0"}, 0)) == PciRelation::node);
  CHECK(relation(gpu, ep({"pci0000:9a", "0000:9a:01.0", "0000:9b:00.0"}, 1)) == PciRelation::sys);
}

TEST_CASE("a missing sysfs gives an empty topology, not an error", "[topology]") {
  const PciTopology topo = read_pci_topology("/nonexistent/sys");
  CHECK(topo.gpus.empty());
  CHECK(topo.nics.empty());
  CHECK(nearest_nics(topo).empty());
}
