// Internal to transports/verbs: the pure decisions of device and GID selection (no
// verbs calls), so they are unit-tested without an RDMA device: rail names, GID types
// and the RoCE v2 GID choice, MTU and link-speed codes, and which ports become rails.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace railbench::verbs {

// ---- rails: "mlx5_0" or "mlx5_0:1" ----

struct RailSpec {
  std::string device;
  int port = 0;  // 0: the device's first active port
  bool operator==(const RailSpec&) const = default;
};

// Throws UsageError for "", ":1", "mlx5_0:", "mlx5_0:x", "mlx5_0:0".
RailSpec parse_rail_spec(std::string_view text);

// What discovery saw of one port, enough to choose rails and explain the choice.
struct PortSummary {
  std::string device;
  int port = 1;
  bool active = false;
  std::string state;       // "ACTIVE", "DOWN", ...
  std::string link_layer;  // "Ethernet", "InfiniBand"
  // Reliable connection with write-with-imm: InfiniBand and RoCE devices (not iWARP or
  // EFA). Unsupported ports are passed over with a warning, or refused by name.
  bool supported = true;
  bool operator==(const PortSummary&) const = default;
};

struct PortChoice {
  std::vector<PortSummary> ports;     // one per rail, in rail order
  std::vector<std::string> warnings;  // ports passed over because they are not active
};

// Named rails resolve against `all`; without names, the first `num_rails` active and
// supported ports in `all`'s order. Throws UsageError naming every port and its state when a name does
// not exist, a named port is not active, too few ports are active, or `all` is empty.
PortChoice choose_ports(const std::vector<PortSummary>& all, const std::vector<RailSpec>& named, int num_rails);

// "mlx5_2" before "mlx5_10": the order rails are taken in when only a count is given.
bool natural_less(std::string_view a, std::string_view b);

// "rxe0 port 1 (ACTIVE, Ethernet), rxe1 port 1 (DOWN, Ethernet)".
std::string describe_ports(const std::vector<PortSummary>& all);

// ---- GIDs ----

using Gid = std::array<uint8_t, 16>;

enum class GidType : uint8_t { unknown, ib, roce_v1, roce_v2 };
const char* to_string(GidType type);  // "IB", "RoCE v1", "RoCE v2", "unknown"

// The text of sysfs gid_attrs/types/<index>: "IB/RoCE v1" (IB on an InfiniBand port,
// RoCE v1 on Ethernet) or "RoCE v2"; anything else is unknown.
GidType parse_gid_type(std::string_view sysfs_text, bool ethernet);

struct GidEntry {
  int index = 0;
  Gid gid{};
  GidType type = GidType::unknown;
};

bool is_zero(const Gid& gid);
bool is_ipv4_mapped(const Gid& gid);    // ::ffff:a.b.c.d
bool is_link_local(const Gid& gid);     // fe80::/10
std::string to_string(const Gid& gid);  // "::ffff:10.0.0.15", "fe80::5054:ff:fe4b:0"
// "10.0.0.15" for an IPv4-mapped GID, nullopt otherwise.
std::optional<std::string> ipv4_of(const Gid& gid);
// Parses "fe80::1" or "::ffff:10.0.0.15"; nullopt when it is no IPv6 address.
std::optional<Gid> parse_gid(std::string_view text);

// The index a RoCE port should use: a RoCE v2 GID holding an IPv4 address (routable,
// what every switch config assumes), then a RoCE v2 global IPv6, then a RoCE v2
// link-local, then RoCE v1 in the same order. Zero GIDs never count. nullopt: nothing
// usable (the netdev has no address).
std::optional<int> choose_roce_gid(std::span<const GidEntry> table);

// "0: fe80::... (RoCE v1), 1: ::ffff:10.0.0.15 (RoCE v2)"; "empty" for no entries.
std::string describe_gids(std::span<const GidEntry> table);

// "10.0.0.0/24" for IPv4 10.0.0.15 and prefix 24.
std::string ipv4_subnet(const std::string& ipv4, int prefix_len);
// "fe80::/64" style: the first 64 bits of an IPv6 GID (RoCE) or IB subnet prefix.
std::string gid_prefix64(const Gid& gid);

// ---- RoCE v2 flows: the UDP source port of a queue pair ----
// A RoCE v2 packet is UDP to port 4791; the switches' ECMP hashes its source port, so a
// QP's port decides its path through the fabric. Drivers that honour the address
// vector's GRH flow label (rxe from Linux 5.18, mlx5 from 5.9, irdma) take the port from
// it, and without one derive the label from the two QP numbers; the verbs transport
// gives the derived label explicitly, so the port is the same on every such driver and
// known to railbench (--paths traces it).

// The label derived from the QP numbers when none is given: their product folded to
// 20 bits (the kernel's rdma_calc_flow_label, include/rdma/ib_verbs.h).
uint32_t roce_flow_label(uint32_t local_qpn, uint32_t remote_qpn);
// The UDP source port of a flow label: its low 14 bits XOR its high 6, in 0xC000..0xFFFF
// (rdma_flow_label_to_udp_sport). A label below 0x4000 gives 0xC000 | label.
uint16_t roce_udp_source_port(uint32_t flow_label);
inline constexpr uint16_t kRoceV2Port = 4791;

// ---- port attributes ----

// ibv_mtu code (1..5) to bytes (256..4096); 0 for anything else.
int mtu_bytes(int ibv_mtu);
// Bytes to ibv_mtu code; 0 unless exactly 256, 512, 1024, 2048 or 4096.
int mtu_code(int bytes);
// Per-lane data rate in Gb/s of an ibv_port_attr active_speed code; 0 when unknown.
double lane_gbps(int active_speed);
// Lanes of an active_width code (1x, 4x, 8x, 12x, 2x); 0 when unknown.
int width_lanes(int active_width);
// "ACTIVE", "DOWN", "INIT", "ARMED", "ACTIVE_DEFER", "NOP", or "state N".
std::string port_state_name(int state);

}  // namespace railbench::verbs
