#include "bench/commands/validate/arp_probe.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace railbench {
namespace {

// The socket, closed however the probe ends.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Ethernet + ARP for IPv4 over Ethernet, as on the wire (RFC 826).
constexpr size_t kEth = 14, kArp = 28, kFrame = 60;  // padded to the Ethernet minimum
constexpr uint16_t kOpRequest = 1, kOpReply = 2;

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

std::array<uint8_t, kFrame> request(const MacAddress& mine, const in_addr& target) {
  std::array<uint8_t, kFrame> f{};
  std::memset(f.data(), 0xff, 6);  // broadcast
  std::memcpy(f.data() + 6, mine.data(), 6);
  put16(f.data() + 12, ETHERTYPE_ARP);
  uint8_t* a = f.data() + kEth;
  put16(a, 1);  // Ethernet
  put16(a + 2, ETHERTYPE_IP);
  a[4] = 6;
  a[5] = 4;
  put16(a + 6, kOpRequest);
  std::memcpy(a + 8, mine.data(), 6);
  // sender IPv4 0.0.0.0 (a + 14), target MAC unknown (a + 18): zeros already
  std::memcpy(a + 24, &target, 4);
  return f;
}

}  // namespace

bool parse_mac(const std::string& text, MacAddress& out) {
  unsigned b[6];
  char tail = 0;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
    return false;
  for (int i = 0; i < 6; ++i) out[i] = static_cast<uint8_t>(b[i]);
  return true;
}

PortAddress read_port_address(const std::string& ifname) {
  PortAddress out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || ifname != a->ifa_name) continue;
    if (a->ifa_addr->sa_family == AF_INET && out.ipv4.empty()) {
      char buf[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
      out.ipv4 = buf;
    } else if (a->ifa_addr->sa_family == AF_PACKET) {
      const auto* ll = reinterpret_cast<sockaddr_ll*>(a->ifa_addr);
      if (ll->sll_halen == 6) {
        const uint8_t* m = ll->sll_addr;
        out.mac = fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
      }
    }
  }
  freeifaddrs(list);
  return out;
}

std::string arp_probe(const std::string& ifname, const std::vector<ArpTarget>& targets,
                      std::chrono::milliseconds deadline, std::vector<bool>& answered) {
  answered.assign(targets.size(), false);
  MacAddress mine{};
  if (!parse_mac(read_port_address(ifname).mac, mine))
    return fmt::format("{} has no Ethernet MAC address (not an Ethernet port)", ifname);
  const unsigned index = if_nametoindex(ifname.c_str());
  if (index == 0) return fmt::format("no interface {} on this node", ifname);
  std::vector<in_addr> ips(targets.size());
  std::vector<MacAddress> macs(targets.size());
  std::vector<bool> usable(targets.size(), false);
  for (size_t i = 0; i < targets.size(); ++i)
    usable[i] = inet_pton(AF_INET, targets[i].ipv4.c_str(), &ips[i]) == 1 && parse_mac(targets[i].mac, macs[i]);

  Fd sock{::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ARP))};
  if (sock.fd < 0) {
    if (errno == EPERM || errno == EACCES)
      return "needs CAP_NET_RAW for a raw ARP socket (run as root, or setcap cap_net_raw+ep on railbench)";
    return fmt::format("cannot open a raw ARP socket: {}", std::strerror(errno));
  }
  sockaddr_ll at{};
  at.sll_family = AF_PACKET;
  at.sll_protocol = htons(ETH_P_ARP);
  at.sll_ifindex = static_cast<int>(index);
  if (::bind(sock.fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0)
    return fmt::format("cannot bind a raw ARP socket to {}: {}", ifname, std::strerror(errno));

  // Every reply queued so far: to this port (target MAC ours, not another port's probe
  // flooded to it), from the port that owns the address.
  auto read_replies = [&] {
    std::array<uint8_t, 1514> buf;
    for (;;) {
      const ssize_t got = ::recv(sock.fd, buf.data(), buf.size(), MSG_DONTWAIT);
      if (got < 0) return;
      if (got < static_cast<ssize_t>(kEth + kArp)) continue;
      const uint8_t* a = buf.data() + kEth;
      if (get16(buf.data() + 12) != ETHERTYPE_ARP || get16(a + 6) != kOpReply ||
          std::memcmp(a + 18, mine.data(), 6) != 0)
        continue;
      for (size_t i = 0; i < targets.size(); ++i) {
        if (usable[i] && std::memcmp(a + 14, &ips[i], 4) == 0 && std::memcmp(a + 8, macs[i].data(), 6) == 0)
          answered[i] = true;
      }
    }
  };
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end = Clock::now() + deadline;
  Clock::time_point next_ask = Clock::now();
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (now >= end) break;
    if (now >= next_ask) {
      for (size_t i = 0; i < targets.size(); ++i) {
        if (!usable[i] || answered[i]) continue;
        const auto frame = request(mine, ips[i]);
        // A lost request is re-asked; a send error (the port went down) leaves it silent.
        (void)::send(sock.fd, frame.data(), frame.size(), MSG_DONTWAIT);
      }
      next_ask = now + std::chrono::milliseconds(100);
    }
    size_t left = 0;
    for (size_t i = 0; i < targets.size(); ++i) left += usable[i] && !answered[i];
    if (left == 0) break;
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(std::min(end, next_ask) - now).count();
    pollfd p{sock.fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<long long>(1, wait))) > 0) read_replies();
  }
  // Replies that came in time but found this rank descheduled (8 ranks on 2 cores) count.
  read_replies();
  return "";
}

}  // namespace railbench
