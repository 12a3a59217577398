#include "transports/verbs/verbs_select.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/core/errors.h"

namespace railbench::verbs {

RailSpec parse_rail_spec(std::string_view text) {
  auto bad = [&](const char* why) {
    throw UsageError(
        fmt::format("--rails entry '{}' {}: use a device name or device:port, e.g. mlx5_0 or mlx5_0:1", text, why));
  };
  RailSpec spec;
  const auto colon = text.find(':');
  spec.device = std::string(text.substr(0, colon));
  if (spec.device.empty()) bad("names no device");
  if (colon == std::string_view::npos) return spec;
  std::string_view port = text.substr(colon + 1);
  if (port.empty()) bad("has no port number after ':'");
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), spec.port);
  if (ec != std::errc() || ptr != port.data() + port.size()) bad("has a port that is not a number");
  if (spec.port < 1 || spec.port > 255) bad("has a port outside 1..255 (verbs ports count from 1)");
  return spec;
}

bool natural_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei])) != 0) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej])) != 0) ++ej;
      // Compare the numbers by value: without leading zeros, the longer is larger.
      std::string_view na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

std::string describe_ports(const std::vector<PortSummary>& all) {
  std::vector<std::string> parts;
  parts.reserve(all.size());
  for (const auto& p : all)
    parts.push_back(fmt::format("{} port {} ({}, {})", p.device, p.port, p.state, p.link_layer));
  return fmt::format("{}", fmt::join(parts, ", "));
}

PortChoice choose_ports(const std::vector<PortSummary>& all, const std::vector<RailSpec>& named, int num_rails) {
  if (all.empty()) {
    throw UsageError(
        "no RDMA devices (ibv_get_device_list found none): load a driver, or use scripts/rxe-vm/run.sh / "
        "scripts/rxe-setup.sh for soft-RoCE");
  }
  PortChoice out;
  if (!named.empty()) {
    for (const auto& spec : named) {
      const PortSummary* found = nullptr;
      bool device_exists = false;
      for (const auto& p : all) {
        if (p.device != spec.device) continue;
        device_exists = true;
        if (spec.port != 0 ? p.port == spec.port : p.active) {
          found = &p;
          break;
        }
      }
      const std::string name = spec.port != 0 ? fmt::format("{}:{}", spec.device, spec.port) : spec.device;
      if (!device_exists) {
        throw UsageError(fmt::format("RDMA device '{}' (from --rails) does not exist: this host has {}", spec.device,
                                     describe_ports(all)));
      }
      if (found == nullptr && spec.port != 0) {
        throw UsageError(fmt::format("RDMA device {} has no port {} (from --rails {}): this host has {}", spec.device,
                                     spec.port, name, describe_ports(all)));
      }
      if (found == nullptr) {
        throw UsageError(fmt::format(
            "RDMA device {} (from --rails) has no active port: this host has {}; bring a link up (ibv_devinfo shows "
            "the state) or name another device",
            spec.device, describe_ports(all)));
      }
      if (!found->supported) {
        throw UsageError(fmt::format(
            "rail {}:{} (from --rails) is a {} device: -t verbs needs InfiniBand or RoCE (reliable connection with "
            "write-with-imm); use -t ofi:verbs or -t ofi:efa for it",
            found->device, found->port, found->link_layer));
      }
      if (!found->active) {
        throw UsageError(fmt::format(
            "rail {}:{} (from --rails) is {}, not ACTIVE: bring its link up or name another port; this host has {}",
            found->device, found->port, found->state, describe_ports(all)));
      }
      out.ports.push_back(*found);
    }
    return out;
  }
  for (const auto& p : all) {
    if (static_cast<int>(out.ports.size()) == num_rails) break;
    if (!p.supported) {
      out.warnings.push_back(fmt::format("verbs: skipping {} port {}: a {} device, not InfiniBand or RoCE", p.device,
                                         p.port, p.link_layer));
    } else if (p.active) {
      out.ports.push_back(p);
    } else {
      out.warnings.push_back(
          fmt::format("verbs: skipping {} port {}: it is {}, not ACTIVE", p.device, p.port, p.state));
    }
  }
  if (static_cast<int>(out.ports.size()) < num_rails) {
    throw UsageError(fmt::format("--rails {} asks for {} active RDMA port(s), this host has {} active: {}", num_rails,
                                 num_rails, out.ports.size(), describe_ports(all)));
  }
  return out;
}

const char* to_string(GidType type) {
  switch (type) {
    case GidType::ib: return "IB";
    case GidType::roce_v1: return "RoCE v1";
    case GidType::roce_v2: return "RoCE v2";
    case GidType::unknown: break;
  }
  return "unknown";
}

GidType parse_gid_type(std::string_view text, bool ethernet) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) text.remove_suffix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) text.remove_prefix(1);
  if (text == "RoCE v2") return GidType::roce_v2;
  if (text == "IB/RoCE v1") return ethernet ? GidType::roce_v1 : GidType::ib;
  if (text == "RoCE v1") return GidType::roce_v1;
  if (text == "IB") return GidType::ib;
  return GidType::unknown;
}

bool is_zero(const Gid& gid) {
  return std::all_of(gid.begin(), gid.end(), [](uint8_t b) { return b == 0; });
}

bool is_ipv4_mapped(const Gid& gid) {
  for (int i = 0; i < 10; ++i)
    if (gid[i] != 0) return false;
  return gid[10] == 0xff && gid[11] == 0xff;
}

bool is_link_local(const Gid& gid) {
  return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;
}

std::string to_string(const Gid& gid) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET6, gid.data(), buf, sizeof(buf)) == nullptr) return "?";
  return buf;
}

std::optional<std::string> ipv4_of(const Gid& gid) {
  if (!is_ipv4_mapped(gid)) return std::nullopt;
  return fmt::format("{}.{}.{}.{}", gid[12], gid[13], gid[14], gid[15]);
}

uint32_t roce_flow_label(uint32_t local_qpn, uint32_t remote_qpn) {
  uint64_t v = static_cast<uint64_t>(local_qpn) * remote_qpn;
  v ^= v >> 20;
  v ^= v >> 40;
  return static_cast<uint32_t>(v & 0xFFFFF);
}

uint16_t roce_udp_source_port(uint32_t flow_label) {
  const uint32_t low = (flow_label & 0x3FFF) ^ ((flow_label & 0xFC000) >> 14);
  return static_cast<uint16_t>(low | 0xC000);
}

std::optional<Gid> parse_gid(std::string_view text) {
  std::string s(text);
  Gid gid{};
  if (inet_pton(AF_INET6, s.c_str(), gid.data()) != 1) return std::nullopt;
  return gid;
}

std::optional<int> choose_roce_gid(std::span<const GidEntry> table) {
  // Lower rank is better; ties go to the lower index.
  auto rank_of = [](const GidEntry& e) -> int {
    if (is_zero(e.gid)) return -1;
    int base = 0;
    if (e.type == GidType::roce_v2) {
      base = 0;
    } else if (e.type == GidType::roce_v1) {
      base = 3;
    } else {
      return -1;
    }
    if (is_ipv4_mapped(e.gid)) return base;
    if (!is_link_local(e.gid)) return base + 1;
    return base + 2;
  };
  std::optional<int> best;
  int best_rank = 1 << 20;
  for (const auto& e : table) {
    const int r = rank_of(e);
    if (r < 0) continue;
    if (r < best_rank || (r == best_rank && e.index < *best)) {
      best_rank = r;
      best = e.index;
    }
  }
  return best;
}

std::string describe_gids(std::span<const GidEntry> table) {
  std::vector<std::string> parts;
  for (const auto& e : table) {
    if (is_zero(e.gid)) continue;
    parts.push_back(fmt::format("{}: {} ({})", e.index, to_string(e.gid), to_string(e.type)));
  }
  if (parts.empty()) return "empty";
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string ipv4_subnet(const std::string& ipv4, int prefix_len) {
  in_addr a{};
  if (inet_pton(AF_INET, ipv4.c_str(), &a) != 1) return ipv4;
  prefix_len = std::clamp(prefix_len, 0, 32);
  const uint32_t mask = prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - prefix_len);
  a.s_addr = htonl(ntohl(a.s_addr) & mask);
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return fmt::format("{}/{}", buf, prefix_len);
}

std::string gid_prefix64(const Gid& gid) {
  Gid prefix{};
  std::copy(gid.begin(), gid.begin() + 8, prefix.begin());
  return to_string(prefix) + "/64";
}

int mtu_bytes(int ibv_mtu) {
  return ibv_mtu >= 1 && ibv_mtu <= 5 ? 128 << ibv_mtu : 0;
}

int mtu_code(int bytes) {
  for (int code = 1; code <= 5; ++code)
    if (mtu_bytes(code) == bytes) return code;
  return 0;
}

double lane_gbps(int active_speed) {
  switch (active_speed) {
    case 1: return 2.5;    // SDR
    case 2: return 5;      // DDR
    case 4: return 10;     // QDR
    case 8: return 10;     // FDR10
    case 16: return 14;    // FDR
    case 32: return 25;    // EDR
    case 64: return 50;    // HDR
    case 128: return 100;  // NDR
    case 256: return 200;  // XDR
    default: return 0;
  }
}

int width_lanes(int active_width) {
  switch (active_width) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    default: return 0;
  }
}

std::string port_state_name(int state) {
  switch (state) {
    case 0: return "NOP";
    case 1: return "DOWN";
    case 2: return "INIT";
    case 3: return "ARMED";
    case 4: return "ACTIVE";
    case 5: return "ACTIVE_DEFER";
    default: return fmt::format("state {}", state);
  }
}

}  // namespace railbench::verbs
