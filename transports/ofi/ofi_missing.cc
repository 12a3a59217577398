// Registers -t ofi as missing in builds without libfabric, so the unknown-transport
// error says what it needs.
#include "lib/transport/registry.h"
#include "transports/ofi/ofi_traits.h"

namespace railbench::ofi {

namespace {

const bool ofi_missing_registered = register_transport(TransportEntry{
    .name = "ofi",
    .order = 10,
    .missing_note = "needs a build with libfabric found (libfabric-dev)",
    .traits = ofi_traits,
});

}  // namespace

}  // namespace railbench::ofi
