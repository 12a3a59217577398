// UCX transport: one UCP context and worker per rail (UCX_NET_DEVICES set to the rail's
// device), one endpoint per (peer, rail). Nothing outside transports/ucx includes
// <ucp/api/ucp.h> or <uct/api/uct.h>.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/transport/transport.h"

namespace railbench::ucx {

struct UcxOptions {
  // UCX_TLS for every rail ("shm", "tcp", "rc_verbs", ...); empty: UCX picks.
  std::string tls;
  // Devices as UCX names them ("lo", "eth0", "mlx5_0:1"), one rail each; empty: one
  // rail per `num_rails`, every device UCX likes (UCX_NET_DEVICES unset).
  std::vector<std::string> devices;
  int num_rails = 1;
  bool cuda = false;  // --mem cuda: refused with one line when UCX lacks CUDA memory
  // Endpoints with peer-failure handling (UCP_ERR_HANDLING_MODE_PEER): a dead peer fails
  // its operations within about a second. UCX 1.13 leaves its zero-copy shared-memory
  // transport (cma) out of such endpoints, so large messages between ranks of one host
  // take two copies through a shared segment; off gives them cma, as Open MPI's pml ucx
  // runs, and leaves a dead peer to the wait's --timeout. RAILBENCH_UCX_PEER_FAILURE.
  bool peer_failure = true;
};

// RAILBENCH_UCX_PEER_FAILURE: on (or unset) or off; anything else is a UsageError.
bool peer_failure_from_env();

// Checks the TLS and devices against what this host's UCX offers (UsageError naming
// what exists), then opens the rails. Peers connect later through connect/connect_all.
std::unique_ptr<Transport> make_transport(const UcxOptions& options, int rank, int world_size);

// One (transport, device) pair UCX's uct layer offers on this host, as `ucx_info -d`.
struct TlResource {
  std::string tl;      // "tcp", "posix", "rc_verbs"
  std::string device;  // "lo", "memory", "mlx5_0:1"
  std::string md;      // memory domain: "tcp", "posix", "mlx5_0"
};
std::vector<TlResource> list_resources();
std::string ucx_version();
// Whether this UCX build can register CUDA memory (it has the cuda memory type).
bool cuda_supported();

}  // namespace railbench::ucx
