// Registers -t ucx as missing in builds without UCX, so the unknown-transport error
// says what it needs.
#include "lib/transport/registry.h"
#include "transports/ucx/ucx_traits.h"

namespace railbench::ucx {

namespace {

const bool ucx_missing_registered = register_transport(TransportEntry{
    .name = "ucx",
    .order = 40,
    .missing_note = "needs a build with UCX found (libucx-dev, pkg-config ucx)",
    .traits = ucx_traits,
});

}  // namespace

}  // namespace railbench::ucx
