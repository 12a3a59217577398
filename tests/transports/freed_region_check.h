// Teardown after a failure, checked by the ofi and UCX tests over tcp: a region destroyed
// while a receive into it is still posted must close the endpoint first, or the provider
// later copies a late message into freed memory (a SIGSEGV during teardown). The buffer
// is unmapped, so a write into it crashes instead of passing unnoticed. Not over shm with
// ranks as threads: there a closing peer unmaps the region the sender in the same process
// reads (libfabric's shm crashes in the sender's post); real processes keep their own
// mapping (tests/robustness).
#pragma once

#include <sys/mman.h>

#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "lib/runtime/bootstrap.h"
#include "lib/transport/transport.h"
#include "tests/support/world.h"

namespace railbench::testing {

// Both ranks of a pair call it with their connected transport, which it closes.
inline void expect_freed_region_never_written(std::unique_ptr<Transport> t, Bootstrap& b) {
  constexpr size_t kLen = 4096;  // eager: the provider copies it from its own buffer
  void* mem = ::mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  expect(mem != MAP_FAILED, "mmap");
  auto mr = t->register_memory(mem, kLen, MemoryKind::host);
  std::vector<Completion> done(16);
  if (b.rank() == 1) {
    expect(t->post_recv(0, 0, LocalSpan{mr.get(), 0, kLen}, 1) == Status::ok, "post_recv");
    mr.reset();  // as a failed run's buffers go before its transport
    ::munmap(mem, kLen);
  }
  b.barrier();
  // Drive progress a while: the message arrives at rank 1's endpoint (once it is closed,
  // the send may never even be accepted: that is fine).
  bool sent = b.rank() != 0;
  for (auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
       std::chrono::steady_clock::now() < end;) {
    if (!sent) {
      const Status st = t->post_send(1, 0, LocalSpan{mr.get(), 0, kLen}, 2);
      expect(st != Status::error, fmt::format("post_send: {}", t->last_error()));
      sent = st == Status::ok;
    }
    t->poll(done);
  }
  b.barrier();
  t.reset();
  if (b.rank() == 0) ::munmap(mem, kLen);
}

}  // namespace railbench::testing
