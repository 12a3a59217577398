// The cabling check's probe (bench/commands/validate/cabling.h): from one Ethernet port, ARP
// requests for other ports' IPv4 addresses, and which of those ports answered (their
// own MAC, from their own address). The requests carry sender address 0.0.0.0 (an RFC
// 5227 probe), which Linux answers before any route or rp_filter check and which puts
// nothing in the answering host's neighbour table. Needs CAP_NET_RAW (AF_PACKET).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace railbench {

using MacAddress = std::array<uint8_t, 6>;

// An interface's IPv4 address (dotted) and MAC ("aa:bb:cc:dd:ee:ff"), from getifaddrs;
// empty where it has none.
struct PortAddress {
  std::string ipv4, mac;
};
PortAddress read_port_address(const std::string& ifname);

// "aa:bb:cc:dd:ee:ff" -> bytes; false when it is not one.
bool parse_mac(const std::string& text, MacAddress& out);

struct ArpTarget {
  std::string ipv4;  // dotted
  std::string mac;   // the answer must come from this MAC
};

// Asks for every target from `ifname` (re-asking the silent ones every 100 ms) until all
// answered or `deadline` passed; answered[i] says whether target i did. Returns why the
// probe could not run ("" when it ran): no CAP_NET_RAW, no such interface, no MAC.
std::string arp_probe(const std::string& ifname, const std::vector<ArpTarget>& targets,
                      std::chrono::milliseconds deadline, std::vector<bool>& answered);

}  // namespace railbench
