// What a NIC looks like from the host, read from sysfs before any traffic runs: does
// it exist, is the port up, at what speed and MTU, with which address. Used by
// `validate` to name a missing NIC, a down port or a wrong speed before it sends a
// byte, and (its link-down counters, read again later) a link that went down and came
// back while it ran. The sysfs root is a parameter so tests read fixture trees.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace railbench {

// The kernel's count of a link's losses so far; -1 where the NIC does not keep it. Only
// differences between two readings mean anything.
struct LinkCounters {
  long long carrier_changes = -1;  // netdev (also the netdev under a RoCE port): carrier up + down events
  long long link_downed = -1;      // rdma: the port's counters/link_downed (IB link-down events)
  bool operator==(const LinkCounters&) const = default;
};

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
  LinkCounters counters;             // at the inventory: the start of the run's count
  // rdma on InfiniBand: the port's P_Key table (ports/P/pkeys/N), the empty (0) entries
  // left out; bit 15 is full membership. Tenants' partitions are checked against it.
  std::vector<int> pkeys;
};

void to_json(nlohmann::json& j, const NicReport& r);
void from_json(const nlohmann::json& j, NicReport& r);

// Reads /sys/class/infiniband/DEV/ports/PORT (`nic` is "dev" or "dev:port"); the GID
// is `gid_index`, or the port's RoCE v2 IPv4 GID when it is -1 (the first GID on IB).
NicReport probe_rdma_nic(const std::string& nic, int gid_index, const std::string& sysfs_root = "/sys");
// Reads /sys/class/net/NAME; the IPv4 address only when sysfs_root is the live /sys.
NicReport probe_netdev_nic(const std::string& nic, const std::string& sysfs_root = "/sys");

// The counters of a NIC probe_*_nic found, read again (the rest is not re-read).
LinkCounters read_link_counters(const NicReport& nic, const std::string& sysfs_root = "/sys");

// How many times the link went down between two readings: link_downed counts downs,
// carrier_changes counts downs and ups (a link that went down and came back is 2);
// the larger of the two, 0 where neither was read twice.
int link_downs(const LinkCounters& before, const LinkCounters& after);

// The active MTU RoCE gets from an Ethernet MTU (the largest IB MTU that fits after
// the RoCE v2 headers, as the kernel computes it).
int roce_active_mtu(int netdev_mtu);

}  // namespace railbench
