// A test rank's send and receive buffers, sized for the largest case and registered
// once, as the collective tests all need them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "collectives/allreduce.h"
#include "lib/transport/transport.h"

namespace railbench::testing {

struct RankBuffers {
  // Room for `blocks` x the largest count of the widest type (8 bytes).
  RankBuffers(Transport& t, const std::vector<size_t>& counts, size_t blocks) {
    for (size_t c : counts) bytes = std::max(bytes, c * 8 * blocks);
    send.resize(bytes);
    recv.resize(bytes);
    smr = t.register_memory(send.data(), bytes, MemoryKind::host);
    rmr = t.register_memory(recv.data(), bytes, MemoryKind::host);
  }

  // Send buffer to receive buffer, or everything in the receive buffer.
  CollectiveBuffers placed(bool in_place) const {
    return in_place ? CollectiveBuffers{rmr.get(), 0, rmr.get(), 0} : CollectiveBuffers{smr.get(), 0, rmr.get(), 0};
  }

  size_t bytes = 0;
  std::vector<std::byte> send, recv;
  std::unique_ptr<MemoryRegion> smr, rmr;
};

}  // namespace railbench::testing
