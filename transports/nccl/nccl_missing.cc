// Registers -t nccl as missing in builds without CUDA or NCCL, so the unknown-transport
// error says what it needs.
#include "lib/transport/registry.h"

namespace railbench::nccl {

namespace {

const bool nccl_missing_registered = register_transport(TransportEntry{
    .name = "nccl",
    .order = 30,
    .missing_note = "needs a build with CUDA and NCCL found",
});

}  // namespace

}  // namespace railbench::nccl
