// UCX 1.13 over soft-RoCE. Why each setting, found in the rxe VM (transports/ucx/README.md
// has the commands and the evidence):
// - rc_verbs alone cannot connect: UCP wires an rc endpoint up through an auxiliary
//   transport and UCX_TLS=rc_verbs names none ("no auxiliary transport to <peer>:
//   Unsupported operation"), so ud_verbs is added as the auxiliary one.
// - ud_verbs drops every packet that arrives over an IPv4 RoCEv2 GID (the GID UCX picks
//   on rxe): its destination-GID check takes the IPv4/IPv6 type from the work
//   completion's sl, which only Mellanox hardware fills that way, reads an IPv4 packet's
//   header as an IPv6 GID and finds no match; the endpoint times out ("UD endpoint ...:
//   unhandled timeout error"). UCX 1.19 reads the type from the GRH instead; before it,
//   UCX_UD_VERBS_ETH_DGID_CHECK=n is the way round. The check only filters packets
//   that name another GID of the port, which a rail's own QPs never receive.
#include "transports/ucx/ucx_rxe.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace railbench::ucx {

namespace {

bool names_transport(const std::string& tls, const std::string& name) {
  size_t pos = 0;
  while (pos <= tls.size()) {
    const size_t comma = std::min(tls.find(',', pos), tls.size());
    std::string tl = tls.substr(pos, comma - pos);
    if (const size_t colon = tl.find(':'); colon != std::string::npos) tl.erase(colon);
    if (tl == name) return true;
    pos = comma + 1;
  }
  return false;
}

}  // namespace

std::string tls_with_aux(const std::string& tls) {
  if (tls.empty() || tls[0] == '^' || !names_transport(tls, "rc_verbs")) return tls;
  for (const char* ud : {"ud_verbs", "ud_v", "ud", "ib", "all"})
    if (names_transport(tls, ud)) return tls;
  return tls + ",ud_verbs:aux";
}

bool is_soft_roce(const std::string& device) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root = "/sys/class/infiniband";
  if (device == "auto") {
    for (const auto& entry : fs::directory_iterator(root, ec))
      if (fs::exists(entry.path() / "parent", ec)) return true;
    return false;
  }
  const std::string ib_device = device.substr(0, device.find(':'));
  return !ib_device.empty() && fs::exists(root / ib_device / "parent", ec);
}

std::vector<UcxSetting> rxe_settings(const std::string& device) {
  if (!is_soft_roce(device)) return {};
  return {{"UD_ETH_DGID_CHECK", "n", "UD_VERBS_ETH_DGID_CHECK"}};
}

}  // namespace railbench::ucx
