// Registers -t verbs as missing in builds without libibverbs: the unknown-transport
// error says what it needs, its options still parse (and are refused with another -t),
// and `info` still lists the RDMA devices sysfs shows.
#include "lib/transport/registry.h"
#include "transports/verbs/verbs_options.h"
#include "transports/verbs/verbs_sysfs.h"

namespace railbench::verbs {

namespace {

const bool verbs_missing_registered = register_transport(TransportEntry{
    .name = "verbs",
    .order = 20,
    .options = transport_options(),
    .info = print_sysfs_devices,
    .missing_note = "needs a build with libibverbs found (rdma-core's libibverbs-dev)",
    .traits = verbs_traits,
});

}  // namespace

}  // namespace railbench::verbs
