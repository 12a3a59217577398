#include "bench/commands/validate/inventory.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace railbench {
namespace {

namespace fs = std::filesystem;

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  if (in) std::getline(in, s);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

int read_int(const fs::path& p, int fallback) {
  const std::string s = read_line(p);
  try {
    return s.empty() ? fallback : std::stoi(s);
  } catch (...) {
    return fallback;
  }
}

long long read_counter(const fs::path& p) {
  const std::string s = read_line(p);
  try {
    return s.empty() ? -1 : std::stoll(s);
  } catch (...) {
    return -1;
  }
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string ipv4_of(const std::string& ifname) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || ifname != a->ifa_name) continue;
    char buf[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
    out = buf;
    break;
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

int roce_active_mtu(int netdev_mtu) {
  // GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4, as the kernel's iboe_get_mtu().
  const int payload = netdev_mtu - 96;
  for (int m : {4096, 2048, 1024, 512, 256})
    if (payload >= m) return m;
  return 0;
}

void to_json(nlohmann::json& j, const NicReport& r) {
  j = nlohmann::json{{"nic", r.nic},
                     {"kind", r.kind},
                     {"found", r.found},
                     {"up", r.up},
                     {"state", r.state},
                     {"speed_gbps", r.speed_gbps},
                     {"mtu", r.mtu},
                     {"link_layer", r.link_layer},
                     {"netdev", r.netdev},
                     {"address", r.address},
                     {"present", r.present},
                     {"carrier_changes", r.counters.carrier_changes},
                     {"link_downed", r.counters.link_downed},
                     {"pkeys", r.pkeys}};
}

void from_json(const nlohmann::json& j, NicReport& r) {
  r.nic = j.value("nic", "");
  r.kind = j.value("kind", "");
  r.found = j.value("found", false);
  r.up = j.value("up", false);
  r.state = j.value("state", "");
  r.speed_gbps = j.value("speed_gbps", 0.0);
  r.mtu = j.value("mtu", 0);
  r.link_layer = j.value("link_layer", "");
  r.netdev = j.value("netdev", "");
  r.address = j.value("address", "");
  r.present = j.value("present", std::vector<std::string>{});
  r.counters.carrier_changes = j.value("carrier_changes", -1LL);
  r.counters.link_downed = j.value("link_downed", -1LL);
  r.pkeys = j.value("pkeys", std::vector<int>{});
}

LinkCounters read_link_counters(const NicReport& nic, const std::string& sysfs_root) {
  LinkCounters c;
  if (!nic.found) return c;
  const fs::path root(sysfs_root);
  if (nic.kind == "rdma") {
    const size_t colon = nic.nic.find(':');
    const std::string port = colon == std::string::npos ? "1" : nic.nic.substr(colon + 1);
    c.link_downed =
        read_counter(root / "class/infiniband" / nic.nic.substr(0, colon) / "ports" / port / "counters/link_downed");
  }
  // A RoCE port's link is its Ethernet netdev's: a flap shows there, not always in
  // link_downed.
  const std::string netdev = nic.kind == "rdma" ? nic.netdev : nic.nic;
  if (!netdev.empty()) c.carrier_changes = read_counter(root / "class/net" / netdev / "carrier_changes");
  return c;
}

int link_downs(const LinkCounters& before, const LinkCounters& after) {
  auto delta = [](long long a, long long b) { return a >= 0 && b >= a ? b - a : 0; };
  const long long downed = delta(before.link_downed, after.link_downed);
  const long long changes = delta(before.carrier_changes, after.carrier_changes);
  return static_cast<int>(std::max(downed, (changes + 1) / 2));
}

NicReport probe_rdma_nic(const std::string& nic, int gid_index, const std::string& sysfs_root) {
  NicReport r;
  r.nic = nic;
  r.kind = "rdma";
  const fs::path cls = fs::path(sysfs_root) / "class/infiniband";
  r.present = list_dir(cls);
  const size_t colon = nic.find(':');
  const std::string dev = nic.substr(0, colon);
  const std::string port = colon == std::string::npos ? "1" : nic.substr(colon + 1);
  const fs::path pdir = cls / dev / "ports" / port;
  if (!fs::exists(pdir)) return r;
  r.found = true;
  // "4: ACTIVE" -> "ACTIVE"
  std::string state = read_line(pdir / "state");
  if (auto sp = state.find(": "); sp != std::string::npos) state = state.substr(sp + 2);
  r.state = state;
  r.up = state == "ACTIVE";
  // "400 Gb/sec (4X NDR)"
  try {
    r.speed_gbps = std::stod(read_line(pdir / "rate"));
  } catch (...) {
    r.speed_gbps = 0;
  }
  r.link_layer = read_line(pdir / "link_layer");
  int idx = gid_index;
  if (idx < 0 && r.link_layer == "Ethernet") {
    for (const auto& name : list_dir(pdir / "gid_attrs/types")) {
      const int i = std::atoi(name.c_str());
      const std::string gid = read_line(pdir / "gids" / name);
      if (read_line(pdir / "gid_attrs/types" / name) == "RoCE v2" &&
          gid.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0 && (idx < 0 || i < idx)) {
        idx = i;
      }
    }
  }
  if (idx < 0) idx = 0;
  r.address = read_line(pdir / "gids" / std::to_string(idx));
  r.netdev = read_line(pdir / "gid_attrs/ndevs" / std::to_string(idx));
  if (r.link_layer == "Ethernet" && !r.netdev.empty()) {
    r.mtu = roce_active_mtu(read_int(fs::path(sysfs_root) / "class/net" / r.netdev / "mtu", 0));
  }
  if (r.link_layer == "InfiniBand") {
    // Entries are named by index ("0", "1", ... "127"): in index order, empty ones skipped.
    std::vector<std::pair<int, int>> table;
    for (const auto& name : list_dir(pdir / "pkeys")) {
      const std::string v = read_line(pdir / "pkeys" / name);
      try {
        const int key = std::stoi(v, nullptr, 0);
        if ((key & 0x7fff) != 0) table.emplace_back(std::stoi(name), key);
      } catch (...) {
      }
    }
    std::sort(table.begin(), table.end());
    for (const auto& [i, key] : table) r.pkeys.push_back(key);
  }
  r.counters = read_link_counters(r, sysfs_root);
  return r;
}

NicReport probe_netdev_nic(const std::string& nic, const std::string& sysfs_root) {
  NicReport r;
  r.nic = nic;
  r.kind = "netdev";
  const fs::path cls = fs::path(sysfs_root) / "class/net";
  r.present = list_dir(cls);
  const fs::path dir = cls / nic;
  if (!fs::exists(dir)) return r;
  r.found = true;
  r.state = read_line(dir / "operstate");
  r.up = r.state == "up" || (r.state == "unknown" && read_int(dir / "carrier", 0) == 1);
  const int mbps = read_int(dir / "speed", -1);  // EINVAL while the link is down
  r.speed_gbps = mbps > 0 ? mbps / 1000.0 : 0;
  r.mtu = read_int(dir / "mtu", 0);
  if (sysfs_root == "/sys") r.address = ipv4_of(nic);
  r.counters = read_link_counters(r, sysfs_root);
  return r;
}

}  // namespace railbench
