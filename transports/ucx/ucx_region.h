// Internal to transports/ucx: memory registered with every rail's context, with the
// remote keys its peers unpack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lib/transport/transport.h"
#include "transports/ucx/ucx_rail.h"

namespace railbench::ucx {

// Set to the transport while it lives: a region going away first cancels the receives
// still posted into it, or UCX would later copy a message into freed memory.
using TransportCell = std::shared_ptr<UcxTransport*>;
// Cancels the receives `t` still has posted into [data, data + length) (ucx_transport.cc).
void cancel_receives_into(UcxTransport* t, const std::byte* data, size_t length);

// Maps [data, data + length) into every rail's context and packs its remote keys;
// `id` tells its keys apart from the other regions' in the peers' caches.
std::unique_ptr<MemoryRegion> make_region(void* data, size_t length, std::vector<std::shared_ptr<RailCore>> rails,
                                          uint64_t id, TransportCell cell);

}  // namespace railbench::ucx
