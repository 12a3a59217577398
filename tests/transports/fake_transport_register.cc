// A transport that exists only in tests, registered the way every transports/ folder
// registers itself: -t fake, over the in-memory loopback (tests/support), with an
// option of its own (--fake-max-msg-kib) and an `info` section. Linked into
// railbench_with_fake (bench/main.cc and the bench libraries plus this file), it shows
// that bench/ lists no transport: help, info, -t and the results all come from here.
#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/registry.h"
#include "tests/support/loopback_transport.h"

namespace railbench::testing {

namespace {

std::unique_ptr<Transport> make_fake(const TransportSpec& spec, const TransportJob& job) {
  if (job.world_size != 1) {
    throw UsageError(
        fmt::format("-t fake runs one rank (its loopback fabric lives in one process), not {}: run it without mpirun",
                    job.world_size));
  }
  if (!spec.provider.empty()) throw UsageError(fmt::format("-t fake takes no provider ('-t fake:{}')", spec.provider));
  LoopbackOptions o;
  o.rails = spec.num_rails;
  o.max_msg_size = static_cast<size_t>(spec.option("max-msg-kib")) * 1024;
  return make_loopback_transport(std::make_shared<LoopbackFabric>(1, o), job.rank);
}

const bool fake_transport_register_registered = register_transport(TransportEntry{
    .name = "fake",
    .order = 90,
    .forms = {"fake"},
    .options = {{.name = "max-msg-kib",
                 .help = "fake: largest message in KiB (the loopback's max_msg_size)",
                 .default_value = 1024,
                 .show_default = true}},
    .foreign_options_note = "the loopback has no such setting",
    .info = [] { fmt::print("fake (-t fake): the in-memory loopback of tests/support, one rank\n"); },
    .make = make_fake,
    .details =
        [] {
          return nlohmann::json{{"fake", true}};
        },
});

}  // namespace

}  // namespace railbench::testing
