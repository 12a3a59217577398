#include "lib/transport/pci_topology.h"

#include <algorithm>
#include <fstream>
#include <system_error>

namespace railbench {

namespace fs = std::filesystem;

namespace {

std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

int read_int(const fs::path& p, int fallback) {
  const std::string s = first_line(p);
  if (s.empty()) return fallback;
  try {
    return std::stoi(s, nullptr, 0);
  } catch (const std::exception&) {
    return fallback;
  }
}

// The PCI path of a device directory: its real location split into components from
// the "pci0000:xx" host bridge down to the device itself.
bool endpoint_of(const fs::path& device_link, const std::string& name, PciEndpoint& out) {
  std::error_code ec;
  const fs::path real = fs::canonical(device_link, ec);
  if (ec) return false;
  std::vector<std::string> parts;
  bool in_pci = false;
  for (const auto& c : real) {
    const std::string s = c.string();
    if (!in_pci && s.rfind("pci", 0) == 0) in_pci = true;
    if (in_pci) parts.push_back(s);
  }
  if (parts.size() < 2) return false;  // virtual devices (lo, veth, rxe on them) have no PCI path
  out.name = name;
  out.bus_id = parts.back();
  out.path = std::move(parts);
  out.numa_node = read_int(real / "numa_node", -1);
  return true;
}

std::vector<PciEndpoint> nics_in(const fs::path& class_dir) {
  std::vector<PciEndpoint> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(class_dir, ec)) {
    PciEndpoint e;
    if (endpoint_of(entry.path() / "device", entry.path().filename().string(), e)) out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

size_t common_prefix(const PciEndpoint& a, const PciEndpoint& b) {
  size_t n = 0;
  while (n < a.path.size() && n < b.path.size() && a.path[n] == b.path[n]) ++n;
  return n;
}

}  // namespace

PciTopology read_pci_topology(const fs::path& sysfs_root) {
  PciTopology topo;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(sysfs_root / "bus/pci/devices", ec)) {
    const fs::path dev = entry.path();
    if (read_int(dev / "vendor", 0) != 0x10de) continue;
    const int cls = read_int(dev / "class", 0) >> 8;  // 0xCCSSPP: class and subclass
    if (cls != 0x0300 && cls != 0x0302) continue;
    PciEndpoint e;
    if (endpoint_of(dev, dev.filename().string(), e)) topo.gpus.push_back(std::move(e));
  }
  std::sort(topo.gpus.begin(), topo.gpus.end(), [](const auto& a, const auto& b) { return a.bus_id < b.bus_id; });
  topo.nics = nics_in(sysfs_root / "class/infiniband");
  if (topo.nics.empty()) topo.nics = nics_in(sysfs_root / "class/net");
  return topo;
}

const char* to_string(PciRelation r) {
  switch (r) {
    case PciRelation::pix: return "PIX";
    case PciRelation::pxb: return "PXB";
    case PciRelation::phb: return "PHB";
    case PciRelation::node: return "NODE";
    case PciRelation::sys: return "SYS";
  }
  return "?";
}

PciRelation relation(const PciEndpoint& a, const PciEndpoint& b) {
  const size_t common = common_prefix(a, b);
  if (common == 0) return a.numa_node >= 0 && a.numa_node == b.numa_node ? PciRelation::node : PciRelation::sys;
  // path = host bridge, root port, [switch upstream port, downstream port]..., device.
  // Sharing only the host bridge or the root port means crossing the root complex.
  if (common <= 2) return PciRelation::phb;
  // Below the shared bridge, each side passes its own downstream port and maybe more
  // switches; one switch on each side (the shared one) is PIX.
  const size_t below = std::max(a.path.size(), b.path.size()) - common;
  return below <= 2 ? PciRelation::pix : PciRelation::pxb;
}

std::vector<GpuNic> nearest_nics(const PciTopology& topo) {
  std::vector<GpuNic> out;
  std::vector<int> given(topo.nics.size(), 0);
  for (size_t g = 0; g < topo.gpus.size(); ++g) {
    GpuNic best{static_cast<int>(g), -1, PciRelation::sys};
    size_t best_prefix = 0;
    bool best_numa = false;
    for (size_t n = 0; n < topo.nics.size(); ++n) {
      const auto& gpu = topo.gpus[g];
      const auto& nic = topo.nics[n];
      const size_t prefix = common_prefix(gpu, nic);
      const bool numa = gpu.numa_node >= 0 && gpu.numa_node == nic.numa_node;
      const bool better =
          best.nic < 0 || prefix > best_prefix ||
          (prefix == best_prefix &&
           ((numa && !best_numa) || (numa == best_numa && given[n] < given[static_cast<size_t>(best.nic)])));
      if (better) {
        best.nic = static_cast<int>(n);
        best_prefix = prefix;
        best_numa = numa;
      }
    }
    if (best.nic >= 0) {
      best.rel = relation(topo.gpus[g], topo.nics[static_cast<size_t>(best.nic)]);
      ++given[static_cast<size_t>(best.nic)];
    }
    out.push_back(best);
  }
  return out;
}

}  // namespace railbench
