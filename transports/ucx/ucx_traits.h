// The traits of -t ucx[:<UCX_TLS>] (lib/transport/registry.h), for its registration and
// for the one a build without UCX makes.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "lib/transport/registry.h"

namespace railbench::ucx {

// The transport names a UCX_TLS value lists ("tcp,^sm" -> tcp, sm): each without its
// exclusion mark (^, or \ before a name) and its ":aux" suffix ("ud_verbs:aux").
inline std::vector<std::string> tl_names(const std::string& tls) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= tls.size()) {
    const size_t comma = std::min(tls.find(',', pos), tls.size());
    std::string tl = tls.substr(pos, comma - pos);
    if (!tl.empty() && (tl[0] == '^' || tl[0] == '\\')) tl.erase(0, 1);
    if (const size_t colon = tl.find(':'); colon != std::string::npos) tl.erase(colon);
    if (!tl.empty()) out.push_back(std::move(tl));
    pos = comma + 1;
  }
  return out;
}

// UCX's verbs transports (rc_verbs, rc_x, dc_x, ud_verbs, ud_x, and the rc, dc and ud
// aliases) run on RDMA NICs. Its tcp connects without binding the rail's own address
// (UCX 1.13): the kernel's route to the peer picks the interface. Without UCX_TLS (or
// with a "^..." list of what to leave out), UCX picks: RDMA where the rails are IB/RoCE
// ports, which UCX names with their port (mlx5_0:1), tcp where they are network
// interfaces or not given.
inline TransportTraits ucx_traits(const std::string& tls, const std::vector<std::string>& rails) {
  bool verbs_tl = false, tcp_tl = false;
  if (!tls.empty() && tls[0] != '^') {
    for (const std::string& tl : tl_names(tls)) {
      for (const char* prefix : {"rc", "dc", "ud"})
        if (tl.rfind(prefix, 0) == 0) verbs_tl = true;
      if (tl == "tcp") tcp_tl = true;
    }
  }
  const bool ports = !rails.empty() && std::all_of(rails.begin(), rails.end(), [](const std::string& r) {
    return r.find(':') != std::string::npos;
  });
  const bool picks = tls.empty() || tls[0] == '^';
  const bool rdma = picks ? ports : verbs_tl;
  const bool over_tcp = picks ? !ports : tcp_tl && !verbs_tl;
  return {.rdma_nics = rdma, .one_way_latency_s = rdma ? 5e-6 : 50e-6, .binds_rail_address = !over_tcp};
}

}  // namespace railbench::ucx
