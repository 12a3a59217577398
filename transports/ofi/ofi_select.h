// Internal to transports/ofi: fi_getinfo queries and the choice of provider and
// domains that become rails.
#pragma once

#include <string>
#include <vector>

#include "transports/ofi/ofi_common.h"
#include "transports/ofi/ofi_transport.h"

namespace railbench::ofi {

// The API of the headers we were built against: a library older than its own headers
// is not a supported install, and newer ones honour older API versions.
inline constexpr uint32_t kApiVersion = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);

// What fi_getinfo granted for the chosen provider, plus one fi_info per rail.
struct Selection {
  std::string provider;             // full prov_name, e.g. "tcp;ofi_rxm"
  bool rma = false;                 // FI_RMA and friends were granted
  bool ordering_requested = false;  // WAW/SAW ordering bits were part of the request
  bool hmem = false;                // FI_HMEM granted: buffers may be GPU memory
  int gpu = 0;                      // CUDA device of GPU buffers when hmem
  std::vector<InfoPtr> rails;       // fi_dupinfo copies, owned by the rails
};

// Resolves options.provider / options.domains against what this host offers. Throws
// UsageError naming the providers or domains that do exist.
Selection select_rails(const OfiOptions& options);

}  // namespace railbench::ofi
