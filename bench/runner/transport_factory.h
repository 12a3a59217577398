// Builds a Transport from "-t name[:provider]" and "--rails". The only place above
// transports/ that knows the concrete transports.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/transport/transport.h"

namespace railbench {

struct TransportSpec {
  std::string name;      // "ofi"
  std::string provider;  // "tcp", "shm", "" (auto)
  int num_rails = 1;
  std::vector<std::string> rail_names;  // explicit domains/devices, empty: auto
  int gid_index = -1;                   // verbs: --gid-index, -1 picks the RoCE v2 GID
  int qps_per_peer = 1;                 // verbs: --qps-per-peer
  int gpu = -1;                         // nccl, and GPU buffers of ofi: the CUDA device of this rank
  MemoryKind mem = MemoryKind::host;    // --mem: ofi asks for FI_HMEM when it is cuda
};

// The most rails one transport opens (bench/cli/README.md, "Limits"): each rail is a fabric domain
// with its own endpoints, queues and bounce buffers (tens of MB per rank), and the
// largest nodes have 8 to 16 NICs.
inline constexpr int kMaxRails = 64;

// Parses -t and --rails; throws UsageError naming the valid forms, and for more than
// kMaxRails rails, before any rail is opened.
TransportSpec parse_transport_spec(const std::string& transport, const std::string& rails);

// all_on_one_host feeds provider auto-selection (shm when every rank shares a host).
std::unique_ptr<Transport> make_transport(const TransportSpec& spec, int rank, int world_size, bool all_on_one_host);

// Transports compiled into this build, e.g. {"ofi"}.
std::vector<std::string> built_transports();

// What the results record about the transport beyond its name: for nccl the library
// version and the NCCL_* environment in effect; empty for the others.
nlohmann::json transport_details(const std::string& name);

}  // namespace railbench
