// Adds -t ofi to the transport registry (lib/transport/registry.h): its -t forms, its
// `info` section (the providers offering RDM endpoints here) and its factory.
#include <fmt/format.h>

#include "lib/transport/registry.h"
#include "transports/ofi/ofi_traits.h"
#include "transports/ofi/ofi_transport.h"

namespace railbench::ofi {

namespace {

void print_info() {
  fmt::print("libfabric {}: providers offering RDM endpoints on this host:\n", libfabric_version());
  fmt::print("  {:<16} {:<10} {:<24} {:<4} {:<7} {}\n", "provider", "domain", "fabric", "rma", "tagged", "mr_mode");
  for (const auto& p : list_providers()) {
    fmt::print("  {:<16} {:<10} {:<24} {:<4} {:<7} {}\n", p.provider, p.domain, p.fabric, p.rma ? "yes" : "no",
               p.tagged ? "yes" : "no", p.mr_mode.empty() ? "-" : p.mr_mode);
  }
}

std::unique_ptr<Transport> make(const TransportSpec& spec, const TransportJob& job) {
  OfiOptions o;
  o.provider = spec.provider;
  o.domains = spec.rail_names;
  o.num_rails = spec.num_rails;
  o.all_ranks_on_one_host = job.all_on_one_host;
  o.hmem = spec.mem == MemoryKind::cuda;
  o.gpu = spec.gpu < 0 ? 0 : spec.gpu;
  return make_transport(o, job.rank, job.world_size);
}

const bool ofi_register_registered = register_transport(TransportEntry{
    .name = "ofi",
    .order = 10,
    .forms = {"ofi", "ofi:tcp", "ofi:shm", "ofi:verbs", "ofi:efa"},
    .foreign_options_note = "libfabric chooses these itself",
    .info = print_info,
    .make = make,
    .traits = ofi_traits,
});

}  // namespace

}  // namespace railbench::ofi
