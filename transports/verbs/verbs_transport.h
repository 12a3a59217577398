// ibverbs transport (RoCE v1/v2, InfiniBand): one device port per rail, reliable-
// connected queue pairs per (peer, rail). Nothing outside transports/verbs includes
// <infiniband/verbs.h>.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/transport/transport.h"

namespace railbench::verbs {

struct VerbsOptions {
  // Rails by name: "mlx5_0", "mlx5_0:1", "rxe0". Empty: the first `num_rails` active
  // ports across all devices, in device name order.
  std::vector<std::string> devices;
  int num_rails = 1;
  // GID table index to use on every rail; -1 picks the RoCE v2 GID of the port's IPv4
  // address (Ethernet) or goes without a GRH (InfiniBand).
  int gid_index = -1;
  // RC queue pairs per (peer, rail), 1..64: more spread traffic over ECMP paths.
  int qps_per_peer = 1;
};

// Opens the rails (throws UsageError naming the devices and port states that do exist
// when the requested ones do not). Peers are connected later through connect_all.
std::unique_ptr<Transport> make_transport(const VerbsOptions& options, int rank, int world_size);

// What `railbench info` prints: one entry per (device, port).
struct GidDescription {
  int index = 0;
  std::string gid;   // "::ffff:10.0.0.15"
  std::string type;  // "RoCE v2"
};
struct PortDescription {
  std::string device;
  int port = 1;
  std::string state;       // "ACTIVE"
  std::string link_layer;  // "Ethernet"
  int active_mtu = 0;      // bytes
  double link_gbps = 0;
  int gid_table_len = 0;
  std::vector<GidDescription> gids;  // populated entries only
  int default_gid = -1;              // what the transport would pick; -1: none (or IB)
};
// Empty when there are no RDMA devices.
std::vector<PortDescription> list_devices();

}  // namespace railbench::verbs
