// libfabric transport: RDM endpoints, one fabric/domain/endpoint/CQ/AV per rail.
// Nothing outside transports/ofi includes <rdma/fabric.h>.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/transport/transport.h"

namespace railbench::ofi {

struct OfiOptions {
  // Provider name as fi_info prints it ("tcp", "shm", "verbs", "efa", "sockets", ...).
  // Empty picks the best available: efa, then verbs, then shm when every rank is on one
  // host, then tcp.
  std::string provider;
  // Domain names to use as rails ("eth0,eth1", "mlx5_0", "shm"). Empty: the first
  // `num_rails` domains the provider offers (loopback-only domains last).
  std::vector<std::string> domains;
  int num_rails = 1;
  bool all_ranks_on_one_host = false;  // input to auto selection
  // GPU memory (--mem cuda): ask for FI_HMEM and FI_MR_HMEM, and register buffers with
  // the CUDA interface on device `gpu`. Providers without FI_HMEM are refused.
  bool hmem = false;
  int gpu = 0;
};

// Opens the rails (throws UsageError naming the providers/domains that do exist when
// the requested one does not). Peers are connected later through connect/connect_all.
std::unique_ptr<Transport> make_transport(const OfiOptions& options, int rank, int world_size);

// What `railbench info` prints: one entry per (provider, domain) offering RDM endpoints.
struct ProviderEntry {
  std::string provider;  // "tcp;ofi_rxm"
  std::string domain;
  std::string fabric;
  bool rma = false;
  bool tagged = false;
  std::string mr_mode;  // "FI_MR_LOCAL|FI_MR_VIRT_ADDR"
};
std::vector<ProviderEntry> list_providers();
std::string libfabric_version();

}  // namespace railbench::ofi
