#include "lib/observe/counters.h"

#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include <fmt/format.h>

namespace railbench {

namespace fs = std::filesystem;

const char* to_string(CounterKind k) {
  switch (k) {
    case CounterKind::data: return "data";
    case CounterKind::pause: return "pause";
    case CounterKind::congestion: return "congestion";
    case CounterKind::retransmit: return "retransmit";
    case CounterKind::error: return "error";
    case CounterKind::drop: return "drop";
    case CounterKind::other: return "other";
  }
  return "other";
}

namespace {

bool has(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}
bool ends(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

}  // namespace

// The order matters: retry_exceeded_err is a fault although it names retries,
// local_ack_timeout_err is a retransmit although it ends in _err, rx_missed_errors is a
// drop although it ends in _errors.
CounterKind counter_kind(std::string_view n) {
  if (has(n, "exceeded")) return CounterKind::error;  // retry_exceeded_err, retry_rnr_exceeded_err
  // port_xmit_wait: ticks with data to send and no credit, IB's flow-control back-pressure.
  if (has(n, "pause") || has(n, "pfc") || n == "port_xmit_wait") return CounterKind::pause;
  if (has(n, "cnp") || has(n, "ecn") || has(n, "congestion")) return CounterKind::congestion;
  if (has(n, "out_of_seq") || has(n, "seq_err") || has(n, "ack_timeout") || has(n, "duplicate_request") ||
      has(n, "retry") || has(n, "retrans") || has(n, "rnr") || has(n, "nak"))
    return CounterKind::retransmit;
  if (has(n, "discard") || has(n, "drop") || has(n, "out_of_buffer") || has(n, "missed")) return CounterKind::drop;
  if (has(n, "error") || ends(n, "_err") || has(n, "symbol") || has(n, "link_down") || has(n, "crc"))
    return CounterKind::error;
  if (has(n, "_data") || ends(n, "bytes") || ends(n, "packets") || ends(n, "pkts") || has(n, "_sends") ||
      has(n, "_recvs"))
    return CounterKind::data;
  return CounterKind::other;
}

uint64_t CounterDeltas::total(CounterKind k) const {
  uint64_t sum = 0;
  for (const auto& c : changed)
    if (c.kind == k) sum += c.value;
  return sum;
}

CounterDeltas counter_delta(const CounterSnapshot& before, const CounterSnapshot& after) {
  constexpr uint64_t k32 = uint64_t{1} << 32;
  CounterDeltas d;
  for (const auto& [name, b] : before) {
    const auto it = after.find(name);
    if (it == after.end()) {
      d.dropped.push_back(name);
      continue;
    }
    const uint64_t a = it->second;
    uint64_t v = a - b;
    if (a < b) {
      // A counter that went down. IB's 32-bit port counters saturate at 2^32-1 by the
      // spec (no decrease, so a saturated one just shows 0), but drivers and 32-bit
      // netdev counters do wrap: below 2^32 a decrease is taken as one wrap at 2^32;
      // from larger values it can only be a reset (driver reload, counters cleared),
      // and what it counted since is the value now.
      if (b < k32) {
        v = a + (k32 - b);
        d.wrapped.push_back(name);
      } else {
        v = a;
        d.reset.push_back(name);
      }
    }
    if (v == 0) continue;
    const std::string_view dev = std::string_view(name).substr(name.find('/') + 1);
    CounterDelta c{name, counter_kind(dev), v};
    if (name == "port/port_xmit_data" || name == "port/port_rcv_data") {
      c.name += "_bytes";
      c.value *= 4;  // IB counts these in 4-byte words
    }
    d.changed.push_back(std::move(c));
  }
  std::sort(d.changed.begin(), d.changed.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
  return d;
}

nlohmann::json to_json(const CounterDeltas& d) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& c : d.changed) j[c.name] = c.value;
  if (!d.wrapped.empty()) j["wrapped"] = d.wrapped;
  if (!d.reset.empty()) j["reset"] = d.reset;
  if (!d.dropped.empty()) j["dropped"] = d.dropped;
  return j;
}

nlohmann::json kind_totals_json(const CounterDeltas& d) {
  nlohmann::json j = nlohmann::json::object();
  for (CounterKind k : kCounterKinds) {
    if (k == CounterKind::data || k == CounterKind::other) continue;
    if (const uint64_t t = d.total(k); t > 0) j[to_string(k)] = t;
  }
  return j;
}

namespace {

std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The interface behind verbs device `dev` port `port`: RoCE ports name it in their GID
// attributes, rxe in its "parent" file, PCI NICs under device/net.
std::string netdev_of(const fs::path& ib, int port) {
  if (auto n = first_line(ib / "ports" / std::to_string(port) / "gid_attrs/ndevs/0"); !n.empty()) return n;
  if (auto n = first_line(ib / "parent"); !n.empty()) return n;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(ib / "device/net", ec)) return e.path().filename().string();
  return "";
}

// One socket for the ethtool ioctls, closed on every path.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::vector<std::string> CounterSources::describe() const {
  std::vector<std::string> out;
  if (!verbs_device.empty()) {
    std::string what;
    for (size_t i = 0; i < dirs.size(); ++i)
      if (prefixes[i] != "net/") what += (what.empty() ? "" : ", ") + dirs[i].filename().string();
    out.push_back(fmt::format("verbs {} port {} ({})", verbs_device, verbs_port, what.empty() ? "no counters" : what));
  }
  if (!netdev.empty()) {
    out.push_back(
        fmt::format("interface {} (statistics{}{})", netdev, ethtool ? ", ethtool" : "", qdisc ? ", qdisc" : ""));
  }
  return out;
}

CounterSources find_counter_sources(const std::string& rail_name, const fs::path& sysfs_root, bool live) {
  CounterSources s;
  s.rail = rail_name;
  std::string dev = rail_name;
  int port = 1;
  if (const auto colon = rail_name.rfind(':'); colon != std::string::npos) {
    dev = rail_name.substr(0, colon);
    port = std::atoi(rail_name.c_str() + colon + 1);
  }
  // libfabric's verbs domains carry a suffix ("mlx5_0-xrc", "mlx5_0-dgram").
  if (const auto dash = dev.find('-'); dash != std::string::npos && !is_dir(sysfs_root / "class/net" / dev))
    dev = dev.substr(0, dash);
  const fs::path ib = sysfs_root / "class/infiniband" / dev;
  if (!dev.empty() && is_dir(ib)) {
    s.verbs_device = dev;
    s.verbs_port = port > 0 ? port : 1;
    const fs::path p = ib / "ports" / std::to_string(s.verbs_port);
    if (is_dir(p / "counters")) s.dirs.push_back(p / "counters"), s.prefixes.emplace_back("port/");
    if (is_dir(p / "hw_counters")) s.dirs.push_back(p / "hw_counters"), s.prefixes.emplace_back("hw/");
    s.netdev = netdev_of(ib, s.verbs_port);
  } else if (!rail_name.empty() && is_dir(sysfs_root / "class/net" / rail_name)) {
    s.netdev = rail_name;
  }
  if (!s.netdev.empty()) {
    const fs::path st = sysfs_root / "class/net" / s.netdev / "statistics";
    if (is_dir(st)) s.dirs.push_back(st), s.prefixes.emplace_back("net/");
    s.ethtool = live && !read_ethtool_stats(s.netdev).empty();
    s.qdisc = live && !read_qdisc_stats(s.netdev).empty();
  }
  return s;
}

CounterReader::CounterReader(CounterSources sources) : sources_(std::move(sources)) {
  for (size_t i = 0; i < sources_.dirs.size(); ++i) {
    std::error_code ec;
    std::vector<std::pair<std::string, std::string>> here;
    for (const auto& e : fs::directory_iterator(sources_.dirs[i], ec)) {
      if (!e.is_regular_file(ec)) continue;
      here.emplace_back(sources_.prefixes[i] + e.path().filename().string(), e.path().string());
    }
    std::sort(here.begin(), here.end());
    for (auto& f : here) {
      if (files_.size() >= kMaxCounterFiles) break;  // keeps a snapshot cheap on any driver
      files_.push_back(std::move(f));
    }
  }
}

CounterSnapshot CounterReader::snapshot() const {
  CounterSnapshot snap;
  std::array<char, 64> buf{};
  for (const auto& [name, path] : files_) {
    // open/read/close, no streams: a snapshot sits between measurements.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone (an interface removed): the delta says "dropped"
    const ssize_t n = ::read(fd, buf.data(), buf.size() - 1);
    ::close(fd);
    if (n <= 0) continue;  // some hw_counters refuse reads (EINVAL) on some ports
    buf[static_cast<size_t>(n)] = '\0';
    char* end = nullptr;
    const unsigned long long v = std::strtoull(buf.data(), &end, 10);
    if (end == buf.data()) continue;  // not a number
    snap[name] = v;
  }
  if (sources_.ethtool) {
    for (auto& [name, v] : read_ethtool_stats(sources_.netdev)) snap["ethtool/" + name] = v;
  }
  if (sources_.qdisc) {
    for (auto& [name, v] : read_qdisc_stats(sources_.netdev)) snap["qdisc/" + name] = v;
  }
  return snap;
}

CounterSnapshot read_ethtool_stats(const std::string& ifname) {
  CounterSnapshot out;
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) return out;
  Fd sock{::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
  if (sock.fd < 0) return out;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname.c_str(), ifname.size());

  // How many statistics the driver has.
  // ethtool_sset_info ends in a flexible array: one u32 (the count) follows it.
  alignas(ethtool_sset_info) uint8_t sset_buf[sizeof(ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* sset = reinterpret_cast<ethtool_sset_info*>(sset_buf);
  sset->cmd = ETHTOOL_GSSET_INFO;
  sset->sset_mask = uint64_t{1} << ETH_SS_STATS;
  ifr.ifr_data = reinterpret_cast<char*>(sset);
  if (::ioctl(sock.fd, SIOCETHTOOL, &ifr) != 0 || sset->sset_mask == 0) return out;
  uint32_t n = 0;
  std::memcpy(&n, sset_buf + sizeof(ethtool_sset_info), sizeof n);
  if (n == 0 || n > 65536) return out;

  std::unique_ptr<uint8_t[]> names(new uint8_t[sizeof(ethtool_gstrings) + size_t{n} * ETH_GSTRING_LEN]());
  auto* gs = reinterpret_cast<ethtool_gstrings*>(names.get());
  gs->cmd = ETHTOOL_GSTRINGS;
  gs->string_set = ETH_SS_STATS;
  gs->len = n;
  ifr.ifr_data = reinterpret_cast<char*>(gs);
  if (::ioctl(sock.fd, SIOCETHTOOL, &ifr) != 0) return out;

  std::unique_ptr<uint8_t[]> values(new uint8_t[sizeof(ethtool_stats) + size_t{n} * sizeof(uint64_t)]());
  auto* st = reinterpret_cast<ethtool_stats*>(values.get());
  st->cmd = ETHTOOL_GSTATS;
  st->n_stats = n;
  ifr.ifr_data = reinterpret_cast<char*>(st);
  if (::ioctl(sock.fd, SIOCETHTOOL, &ifr) != 0) return out;

  const uint32_t got = std::min(n, std::min(gs->len, st->n_stats));
  for (uint32_t i = 0; i < got; ++i) {
    const char* s = reinterpret_cast<const char*>(gs->data) + size_t{i} * ETH_GSTRING_LEN;
    std::string name(s, strnlen(s, ETH_GSTRING_LEN));
    if (name.empty()) continue;
    out[std::move(name)] = st->data[i];
  }
  return out;
}

CounterSnapshot read_qdisc_stats(const std::string& ifname) {
  CounterSnapshot out;
  const unsigned ifindex = ifname.empty() ? 0 : if_nametoindex(ifname.c_str());
  if (ifindex == 0) return out;
  Fd sock{::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)};
  if (sock.fd < 0) return out;
  // A receive that never comes must not hang a measurement.
  const timeval tv{1, 0};
  ::setsockopt(sock.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct {
    nlmsghdr nh;
    tcmsg tc;
  } req{};
  req.nh.nlmsg_len = sizeof req;
  req.nh.nlmsg_type = RTM_GETQDISC;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.nh.nlmsg_seq = 1;
  req.tc.tcm_family = AF_UNSPEC;
  req.tc.tcm_ifindex = static_cast<int>(ifindex);
  if (::send(sock.fd, &req, sizeof req, 0) < 0) return out;
  std::vector<char> buf(65536);
  for (;;) {
    const ssize_t n = ::recv(sock.fd, buf.data(), buf.size(), 0);
    if (n <= 0) return out;
    int len = static_cast<int>(n);
    for (auto* nh = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
      if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) return out;
      if (nh->nlmsg_type != RTM_NEWQDISC) continue;
      auto* tc = static_cast<tcmsg*>(NLMSG_DATA(nh));
      // The dump holds every interface's qdiscs; the root one aggregates its children.
      if (tc->tcm_ifindex != static_cast<int>(ifindex) || tc->tcm_parent != TC_H_ROOT) continue;
      int alen = static_cast<int>(nh->nlmsg_len) - static_cast<int>(NLMSG_LENGTH(sizeof(tcmsg)));
      for (auto* a = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(tc) + NLMSG_ALIGN(sizeof(tcmsg)));
           RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
        if (a->rta_type != TCA_STATS || RTA_PAYLOAD(a) < sizeof(tc_stats)) continue;
        tc_stats st;
        std::memcpy(&st, RTA_DATA(a), sizeof st);
        out["drops"] += st.drops;
        out["overlimits"] += st.overlimits;
      }
    }
  }
}

}  // namespace railbench
