// Registers -t ofi as missing in builds without libfabric, so the unknown-transport
// error says what it needs.
#include "lib/transport/registry.h"

namespace railbench::ofi {

namespace {

const bool ofi_missing_registered = register_transport(TransportEntry{
    .name = "ofi",
    .order = 10,
    .missing_note = "needs a build with libfabric found (libfabric-dev)",
});

}  // namespace

}  // namespace railbench::ofi
