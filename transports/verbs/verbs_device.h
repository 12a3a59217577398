// Internal to transports/verbs: what the installed devices offer. Opens devices,
// lists their ports for rail selection and reads GID tables with their types.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "transports/verbs/verbs_common.h"
#include "transports/verbs/verbs_select.h"

namespace railbench::verbs {

// Opens the named device; throws UsageError when it is gone, TransportError when the
// open fails (with a hint about /dev/infiniband permissions).
VerbsPtr<ibv_context> open_device(const std::string& name);

// Every port of every device, devices in natural name order (mlx5_2 before mlx5_10).
// Empty when there are no devices. Devices that fail to open are left out.
std::vector<PortSummary> scan_ports();

// The port's populated GID entries with their types: ibv_query_gid_table when the
// library and kernel have it, else ibv_query_gid_ex per index, else ibv_query_gid
// plus the type from sysfs gid_attrs/types/<index>.
std::vector<GidEntry> read_gid_table(ibv_context* context, int port, const ibv_port_attr& attr);

// The prefix length of the local interface address `ipv4` (from getifaddrs).
std::optional<int> ipv4_prefix_len(const std::string& ipv4);

}  // namespace railbench::verbs
