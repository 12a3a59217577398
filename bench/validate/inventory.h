// What a NIC looks like from the host, read from sysfs before any traffic runs: does
// it exist, is the port up, at what speed and MTU, with which address. Used by
// `validate` to name a missing NIC, a down port or a wrong speed before it sends a
// byte. The sysfs root is a parameter so tests read fixture trees.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace railbench {

struct NicReport {
  std::string nic;   // as the config names it: "mlx5_0", "mlx5_0:1", "eth2"
  std::string kind;  // "rdma" or "netdev"
  bool found = false;
  bool up = false;                   // rdma: port ACTIVE; netdev: operstate up
  std::string state;                 // as sysfs says it: "ACTIVE", "DOWN", "up", "lowerlayerdown"
  double speed_gbps = 0;             // 0 when the port does not say
  int mtu = 0;                       // rdma: active IB MTU (RoCE: from the netdev MTU); netdev: link MTU
  std::string link_layer;            // rdma: "Ethernet" or "InfiniBand"
  std::string netdev;                // rdma over Ethernet: the netdev under the port
  std::string address;               // rdma: the GID used; netdev: its IPv4 address
  std::vector<std::string> present;  // NICs of this kind the host has (for the error)
};

void to_json(nlohmann::json& j, const NicReport& r);
void from_json(const nlohmann::json& j, NicReport& r);

// Reads /sys/class/infiniband/DEV/ports/PORT (`nic` is "dev" or "dev:port"); the GID
// is `gid_index`, or the port's RoCE v2 IPv4 GID when it is -1 (the first GID on IB).
NicReport probe_rdma_nic(const std::string& nic, int gid_index, const std::string& sysfs_root = "/sys");
// Reads /sys/class/net/NAME; the IPv4 address only when sysfs_root is the live /sys.
NicReport probe_netdev_nic(const std::string& nic, const std::string& sysfs_root = "/sys");

// The active MTU RoCE gets from an Ethernet MTU (the largest IB MTU that fits after
// the RoCE v2 headers, as the kernel computes it).
int roce_active_mtu(int netdev_mtu);

}  // namespace railbench
