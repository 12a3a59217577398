// NCCL transport: one communicator per job, built from a unique id shared over the
// bootstrap; send/recv and native collectives on the GPU's stream. Nothing outside
// transports/nccl includes <nccl.h>.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "lib/transport/transport.h"

namespace railbench::nccl {

struct NcclOptions {
  int gpu = 0;  // CUDA device this rank drives
};

// Fails fast (UnsupportedError, one line) when no CUDA device is visible; the
// communicator itself is created in connect_all.
std::unique_ptr<Transport> make_transport(const NcclOptions& options, int rank, int world_size);

// "2.27.7" from ncclGetVersion (the library loaded, not the header).
std::string version();

// NCCL_* variables in this process's environment, for the results file.
std::map<std::string, std::string> environment();

}  // namespace railbench::nccl
