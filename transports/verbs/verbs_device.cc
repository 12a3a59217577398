#include "transports/verbs/verbs_device.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "transports/verbs/verbs_transport.h"

namespace railbench::verbs {

std::string errno_text(int err) {
  return fmt::format("{}", ErrnoText{err});
}

const char* link_layer_name(uint8_t link_layer) {
  switch (link_layer) {
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    default: return "unspecified";
  }
}

namespace {

// IB devices report "unspecified" on old kernels; everything not Ethernet is IB here.
bool is_ethernet(const ibv_port_attr& attr) {
  return attr.link_layer == IBV_LINK_LAYER_ETHERNET;
}

GidType from_ibv_type(uint32_t type, bool ethernet) {
  switch (type) {
    case IBV_GID_TYPE_IB: return ethernet ? GidType::roce_v1 : GidType::ib;
    case IBV_GID_TYPE_ROCE_V1: return GidType::roce_v1;
    case IBV_GID_TYPE_ROCE_V2: return GidType::roce_v2;
    default: return GidType::unknown;
  }
}

Gid to_gid(const ibv_gid& g) {
  Gid out;
  std::memcpy(out.data(), g.raw, out.size());
  return out;
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

#ifdef RAILBENCH_VERBS_HAVE_QUERY_GID_TABLE
// One call for every port's valid entries; nullopt when the kernel lacks it.
std::optional<std::vector<GidEntry>> gid_table_at_once(ibv_context* context, int port, bool ethernet) {
  ibv_device_attr dev{};
  if (ibv_query_device(context, &dev) != 0) return std::nullopt;
  size_t capacity = 0;
  for (int p = 1; p <= dev.phys_port_cnt; ++p) {
    ibv_port_attr a{};
    if (ibv_query_port(context, static_cast<uint8_t>(p), &a) == 0) capacity += static_cast<size_t>(a.gid_tbl_len);
  }
  std::vector<ibv_gid_entry> raw(std::max<size_t>(capacity, 1));
  const ssize_t n = ibv_query_gid_table(context, raw.data(), raw.size(), 0);
  if (n < 0) return std::nullopt;
  std::vector<GidEntry> out;
  for (ssize_t i = 0; i < n; ++i) {
    const auto& e = raw[static_cast<size_t>(i)];
    if (static_cast<int>(e.port_num) != port) continue;
    GidEntry g{static_cast<int>(e.gid_index), to_gid(e.gid), from_ibv_type(e.gid_type, ethernet)};
    if (!is_zero(g.gid)) out.push_back(g);
  }
  std::sort(out.begin(), out.end(), [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
  return out;
}
#endif

#ifdef RAILBENCH_VERBS_HAVE_QUERY_GID_EX
// Per index; nullopt when the library or kernel cannot answer for types.
std::optional<std::vector<GidEntry>> gid_table_by_index(ibv_context* context, int port, int len, bool ethernet) {
  std::vector<GidEntry> out;
  for (int i = 0; i < len; ++i) {
    ibv_gid_entry e{};
    const int rc = ibv_query_gid_ex(context, static_cast<uint32_t>(port), static_cast<uint32_t>(i), &e, 0);
    if (rc == ENODATA || rc == EINVAL) continue;  // an empty entry
    if (rc != 0) return std::nullopt;
    GidEntry g{i, to_gid(e.gid), from_ibv_type(e.gid_type, ethernet)};
    if (!is_zero(g.gid)) out.push_back(g);
  }
  return out;
}
#endif

std::vector<GidEntry> gid_table_sysfs(ibv_context* context, int port, int len, bool ethernet) {
  std::vector<GidEntry> out;
  const std::string base =
      fmt::format("/sys/class/infiniband/{}/ports/{}/gid_attrs/types/", ibv_get_device_name(context->device), port);
  for (int i = 0; i < len; ++i) {
    ibv_gid gid{};
    if (ibv_query_gid(context, static_cast<uint8_t>(port), i, &gid) != 0) continue;
    GidEntry g{i, to_gid(gid), GidType::unknown};
    if (is_zero(g.gid)) continue;
    g.type = parse_gid_type(read_line(base + std::to_string(i)), ethernet);
    if (g.type == GidType::unknown && !ethernet) g.type = GidType::ib;
    out.push_back(g);
  }
  return out;
}

}  // namespace

VerbsPtr<ibv_context> open_device(const std::string& name) {
  DeviceList list;
  for (int i = 0; i < list.size(); ++i) {
    if (name != ibv_get_device_name(list[i])) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) {
      const int err = errno;
      throw TransportError(fmt::format(
          "ibv_open_device({}) failed: {}: can this user open /dev/infiniband/uverbs* (permissions, container "
          "device mounts)?",
          name, errno_text(err)));
    }
    return VerbsPtr<ibv_context>(ctx);
  }
  throw UsageError(fmt::format("RDMA device '{}' disappeared: run ibv_devinfo to see what is there", name));
}

std::vector<PortSummary> scan_ports() {
  DeviceList list;
  std::vector<std::string> names;
  for (int i = 0; i < list.size(); ++i) names.emplace_back(ibv_get_device_name(list[i]));
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) { return natural_less(a, b); });
  std::vector<PortSummary> out;
  for (const auto& name : names) {
    VerbsPtr<ibv_context> ctx;
    try {
      ctx = open_device(name);
    } catch (const Error&) {
      continue;
    }
    ibv_device_attr dev{};
    if (ibv_query_device(ctx.get(), &dev) != 0) continue;
    // IBV_TRANSPORT_IB covers InfiniBand and RoCE (rxe too); iWARP and EFA differ.
    const ibv_transport_type transport = ctx->device->transport_type;
    for (int p = 1; p <= dev.phys_port_cnt; ++p) {
      ibv_port_attr a{};
      if (ibv_query_port(ctx.get(), static_cast<uint8_t>(p), &a) != 0) continue;
      PortSummary s{name, p, a.state == IBV_PORT_ACTIVE, port_state_name(a.state), link_layer_name(a.link_layer)};
      s.supported = transport == IBV_TRANSPORT_IB;
      if (transport == IBV_TRANSPORT_IWARP) s.link_layer = "iWARP";
      if (!s.supported && transport != IBV_TRANSPORT_IWARP) s.link_layer = "non-IB (e.g. EFA)";
      out.push_back(s);
    }
  }
  return out;
}

std::vector<GidEntry> read_gid_table(ibv_context* context, int port, const ibv_port_attr& attr) {
  const bool ethernet = is_ethernet(attr);
#ifdef RAILBENCH_VERBS_HAVE_QUERY_GID_TABLE
  if (auto t = gid_table_at_once(context, port, ethernet)) return *t;
#endif
#ifdef RAILBENCH_VERBS_HAVE_QUERY_GID_EX
  if (auto t = gid_table_by_index(context, port, attr.gid_tbl_len, ethernet)) return *t;
#endif
  return gid_table_sysfs(context, port, attr.gid_tbl_len, ethernet);
}

std::optional<int> ipv4_prefix_len(const std::string& ipv4) {
  in_addr want{};
  if (inet_pton(AF_INET, ipv4.c_str(), &want) != 1) return std::nullopt;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  std::optional<int> out;
  for (ifaddrs* i = list; i != nullptr && !out; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_netmask == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    const auto* m = reinterpret_cast<const sockaddr_in*>(i->ifa_netmask);
    if (a->sin_addr.s_addr == want.s_addr) out = __builtin_popcount(ntohl(m->sin_addr.s_addr));
  }
  freeifaddrs(list);
  return out;
}

std::vector<PortDescription> list_devices() {
  std::vector<PortDescription> out;
  for (const auto& summary : scan_ports()) {
    PortDescription d;
    d.device = summary.device;
    d.port = summary.port;
    d.state = summary.state;
    d.link_layer = summary.link_layer;
    try {
      auto ctx = open_device(summary.device);
      ibv_port_attr a{};
      if (ibv_query_port(ctx.get(), static_cast<uint8_t>(summary.port), &a) == 0) {
        d.active_mtu = mtu_bytes(a.active_mtu);
        d.link_gbps = lane_gbps(a.active_speed) * width_lanes(a.active_width);
        d.gid_table_len = a.gid_tbl_len;
        const auto table = read_gid_table(ctx.get(), summary.port, a);
        for (const auto& g : table) d.gids.push_back(GidDescription{g.index, to_string(g.gid), to_string(g.type)});
        if (is_ethernet(a)) d.default_gid = choose_roce_gid(table).value_or(-1);
      }
    } catch (const Error&) {
      // Listed with what scan_ports saw; the device vanished or cannot be opened.
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace railbench::verbs
