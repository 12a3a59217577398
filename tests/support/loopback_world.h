// Every rank of a loopback world on the test's own thread, connected, each with one
// registered buffer: for tests that drive ranks by hand in a chosen order (Progress,
// the loopback itself) instead of running them as threads.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "lib/transport/transport.h"
#include "tests/support/loopback_transport.h"

namespace railbench::testing {

struct LoopbackWorld {
  explicit LoopbackWorld(int n, LoopbackOptions options = {}, size_t bytes = 4096)
      : fabric(std::make_shared<LoopbackFabric>(n, options)) {
    for (int r = 0; r < n; ++r) transports.push_back(make_loopback_transport(fabric, r));
    for (int r = 0; r < n; ++r)
      for (int peer = 0; peer < n; ++peer)
        for (int rail = 0; rail < options.rails && peer != r; ++rail)
          transports[r]->connect(peer, rail, transports[peer]->local_address(rail));
    memory.assign(static_cast<size_t>(n), std::vector<std::byte>(bytes));
    for (int r = 0; r < n; ++r) {
      regions.push_back(transports[r]->register_memory(memory[r].data(), bytes, MemoryKind::host));
      keys.push_back(regions.back()->remote_key());
    }
  }

  Transport& t(int rank) { return *transports[static_cast<size_t>(rank)]; }
  // Rank `rank`'s buffer from `offset`, as the local side of a transfer.
  LocalSpan local(int rank, size_t offset, size_t length) const {
    return LocalSpan{regions[static_cast<size_t>(rank)].get(), offset, length};
  }
  // Rank `rank`'s buffer from `offset`, as the remote side of a transfer.
  RemoteSpan remote(int rank, size_t offset) const { return RemoteSpan{&keys[static_cast<size_t>(rank)], offset}; }
  std::byte* at(int rank, size_t offset) { return memory[static_cast<size_t>(rank)].data() + offset; }

  std::shared_ptr<LoopbackFabric> fabric;
  std::vector<std::unique_ptr<Transport>> transports;
  std::vector<std::vector<std::byte>> memory;
  std::vector<std::unique_ptr<MemoryRegion>> regions;
  std::vector<RemoteKey> keys;
};

}  // namespace railbench::testing
