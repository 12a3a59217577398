// The Transport contract, checked over real libfabric providers (tcp over loopback and
// shm). Operations are skipped by capability, never by provider name.
#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/progress.h"
#include "tests/support/world.h"
#include "tests/transports/ofi_world.h"
#include "tests/transports/send_recv_check.h"
#include "tests/transports/write_batch_check.h"
#include "transports/ofi/ofi_transport.h"

using namespace railbench;
using railbench::testing::expect;
using railbench::testing::expect_send_recv_every_size;
using railbench::testing::expect_write_batch_contract;
using railbench::testing::open_ofi;
using railbench::testing::run_ranks;

namespace {

// tcp runs over the loopback domain (see ofi_world.h); shm needs nothing.
const std::vector<std::string> kProviders{"tcp", "shm"};

}  // namespace

TEST_CASE("ofi: send/recv delivers every size intact, FIFO per peer and rail", "[ofi]") {
  for (const auto& prov : kProviders) {
    for (int rails : {1, 2}) {
      DYNAMIC_SECTION(prov << " with " << rails << " rail(s)") {
        run_ranks(2, [&](Bootstrap& b) {
          auto t = open_ofi(prov, b, rails);
          expect(t->num_rails() == rails, "rail count");
          expect(t->caps().send_recv, "send/recv capability");
          Progress p(*t, 20);
          const int peer = 1 - b.rank();
          expect_send_recv_every_size(*t, p, b.rank(), peer, {1, 4096, size_t{1} << 20, (size_t{16} << 20) + 3});
          // 200 back-to-back messages land in the order they were sent.
          std::vector<uint32_t> out(200), in(200, 0);
          std::iota(out.begin(), out.end(), 1000U * static_cast<uint32_t>(b.rank()));
          auto omr = t->register_memory(out.data(), out.size() * 4, MemoryKind::host);
          auto imr = t->register_memory(in.data(), in.size() * 4, MemoryKind::host);
          for (size_t i = 0; i < 200; ++i) p.recv(peer, 0, LocalSpan{imr.get(), i * 4, 4});
          b.barrier();
          for (size_t i = 0; i < 200; ++i) p.send(peer, 0, LocalSpan{omr.get(), i * 4, 4});
          p.wait_all("FIFO burst");
          for (size_t i = 0; i < 200; ++i)
            expect(in[i] == 1000U * static_cast<uint32_t>(peer) + i, fmt::format("message {} out of order", i));
        });
      }
    }
  }
}

TEST_CASE("ofi: one-sided write, write-with-imm and read, where the provider has them", "[ofi]") {
  for (const auto& prov : kProviders) {
    DYNAMIC_SECTION(prov) {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ofi(prov, b);
        if (!t->caps().write) return;  // skipped by capability
        Progress p(*t, 20);
        const int peer = 1 - b.rank();
        const size_t bytes = (1 << 20) + 5;
        std::vector<uint8_t> src(bytes), dst(bytes, 0);
        for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<uint8_t>(i * 13 + b.rank() + 1);
        auto smr = t->register_memory(src.data(), bytes, MemoryKind::host);
        auto dmr = t->register_memory(dst.data(), bytes, MemoryKind::host);
        auto keys = b.all_gather_v(dmr->remote_key().serialize());
        const RemoteKey peer_dst = RemoteKey::deserialize(keys[peer]);
        auto src_keys = b.all_gather_v(smr->remote_key().serialize());
        const RemoteKey peer_src = RemoteKey::deserialize(src_keys[peer]);

        // Write all but the last byte, then a write-with-imm of the last one: when the
        // target sees the imm, the whole buffer must be there (ordered writes).
        p.write(peer, 0, LocalSpan{smr.get(), 0, bytes - 1}, RemoteSpan{&peer_dst, 0});
        if (t->caps().write_with_imm) {
          p.write_imm(peer, 0, LocalSpan{smr.get(), bytes - 1, 1}, RemoteSpan{&peer_dst, bytes - 1}, 0xC0FFEE);
          expect(p.wait_imm(peer, "write-with-imm") == 0xC0FFEEu, "immediate data");
        }
        p.wait_all("writes");
        b.barrier();
        size_t bad = 0;
        for (size_t i = 0; i < bytes; ++i) bad += dst[i] != static_cast<uint8_t>(i * 13 + peer + 1);
        expect(bad == 0, fmt::format("{} bytes wrong after write", bad));

        if (t->caps().read) {
          std::fill(dst.begin(), dst.end(), 0);
          b.barrier();
          // Read the peer's source at an offset; the peer keeps polling meanwhile,
          // since providers with manual progress need the target to make progress.
          auto id = p.read(peer, 0, LocalSpan{dmr.get(), 0, 4096}, RemoteSpan{&peer_src, 100});
          p.wait(id, "read");
          bad = 0;
          for (size_t i = 0; i < 4096; ++i) bad += dst[i] != static_cast<uint8_t>((i + 100) * 13 + peer + 1);
          expect(bad == 0, fmt::format("{} bytes wrong after read", bad));
          // Keep driving progress until both finished reading.
          std::vector<uint8_t> tok(8);
          auto tmr = t->register_memory(tok.data(), 8, MemoryKind::host);
          auto r = p.recv(peer, 0, LocalSpan{tmr.get(), 0, 4});
          p.send(peer, 0, LocalSpan{tmr.get(), 4, 4});
          p.wait(r, "end of read test");
          p.wait_all("end of read test");
        }
      });
    }
  }
}

TEST_CASE("ofi: a batched write lands every span at its offset and completes once with its wr_id", "[ofi]") {
  for (const auto& prov : kProviders) {
    DYNAMIC_SECTION(prov) {
      std::atomic<int> finished{0};
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ofi(prov, b);
        if (!t->caps().write) return;  // skipped by capability
        expect_write_batch_contract(*t, b, finished);
      });
    }
  }
}

TEST_CASE("ofi: thousands of batched writes in a row, through Progress, deliver in order", "[ofi]") {
  for (const auto& prov : kProviders) {
    DYNAMIC_SECTION(prov) {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ofi(prov, b);
        if (!t->caps().write) return;
        Progress p(*t, 20);
        const int peer = 1 - b.rank();
        // 64 Ki 8-byte words written one span per word, batches of max_batch: far more
        // chunks than the context pool holds, so posts meet retry (and, on tcp, the
        // provider's -FI_EAGAIN partway through a batch).
        const size_t words = size_t{1} << 16;
        std::vector<uint64_t> src(words), dst(words, 0);
        for (size_t i = 0; i < words; ++i) src[i] = (uint64_t{1} << 40) * static_cast<uint64_t>(b.rank() + 1) + i;
        auto smr = t->register_memory(src.data(), words * 8, MemoryKind::host);
        auto dmr = t->register_memory(dst.data(), words * 8, MemoryKind::host);
        const RemoteKey peer_dst = RemoteKey::deserialize(b.all_gather_v(dmr->remote_key().serialize())[peer]);
        std::vector<WriteSpan> ops;
        const size_t max_batch = t->caps().max_batch;
        std::vector<uint8_t> tok(8);
        auto tmr = t->register_memory(tok.data(), 8, MemoryKind::host);
        // Word i lands at word words - 1 - i. Once the sources run forward and the
        // destinations backward, then the other way round: a chunk's local iovecs merge
        // in the first pass, its remote ones in the second.
        for (bool sources_forward : {true, false}) {
          std::fill(dst.begin(), dst.end(), 0);
          b.barrier();
          for (size_t at = 0; at < words; at += max_batch) {
            ops.clear();
            for (size_t k = at; k < std::min(words, at + max_batch); ++k) {
              const size_t i = sources_forward ? k : words - 1 - k;
              ops.push_back(WriteSpan{LocalSpan{smr.get(), i * 8, 8}, RemoteSpan{&peer_dst, (words - 1 - i) * 8}});
            }
            p.write_batch(peer, 0, ops);
          }
          p.wait_all("batched writes");
          // Both ranks keep polling until both are done: the target's progress matters.
          auto r = p.recv(peer, 0, LocalSpan{tmr.get(), 0, 4});
          p.send(peer, 0, LocalSpan{tmr.get(), 4, 4});
          p.wait(r, "end of the batched writes");
          p.wait_all("end of the batched writes");
          size_t wrong = 0;
          for (size_t i = 0; i < words; ++i)
            wrong += dst[words - 1 - i] != (uint64_t{1} << 40) * static_cast<uint64_t>(peer + 1) + i;
          expect(wrong == 0, fmt::format("{} of {} words wrong (sources {})", wrong, words,
                                         sources_forward ? "forward" : "backward"));
        }
      });
    }
  }
}

TEST_CASE("ofi: posting far more than the queues hold is absorbed by retry", "[ofi]") {
  for (const auto& prov : kProviders) {
    DYNAMIC_SECTION(prov) {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ofi(prov, b);
        Progress p(*t, 20);
        const int peer = 1 - b.rank();
        std::vector<uint8_t> buf(64);
        auto mr = t->register_memory(buf.data(), buf.size(), MemoryKind::host);
        const int n = 20000;
        if (b.rank() == 1) {
          for (int i = 0; i < n; ++i) p.recv(peer, 0, LocalSpan{mr.get(), 0, 8});
        } else {
          for (int i = 0; i < n; ++i) p.send(peer, 0, LocalSpan{mr.get(), 8, 8});
        }
        p.wait_all("a burst of 20000 messages");
        expect(p.outstanding() == 0, "nothing outstanding");
      });
    }
  }
}

TEST_CASE("ofi: a peer that never sends is named in the timeout", "[ofi]") {
  for (const auto& prov : kProviders) {
    DYNAMIC_SECTION(prov) {
      std::string error;
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ofi(prov, b);
        std::vector<uint8_t> buf(64);
        auto mr = t->register_memory(buf.data(), buf.size(), MemoryKind::host);
        if (b.rank() == 1) {
          Progress p(*t, 0.5, {"rank 0 (nodeA)", "rank 1 (nodeB)"});
          auto id = p.recv(0, 0, LocalSpan{mr.get(), 0, 8});
          try {
            p.wait(id, "a message that never comes");
          } catch (const TimeoutError& e) {
            error = e.what();
          }
        }
        b.barrier();
      });
      CHECK_THAT(error, Catch::Contains("rank 0 (nodeA)") && Catch::Contains("recv") &&
                            Catch::Contains("a message that never comes"));
    }
  }
}

// Teardown after a failure: a region destroyed while a receive into it is
// still posted must close the endpoint first, or the provider later copies a late
// message into freed memory (a SIGSEGV in libfabric during teardown). The buffer is
// unmapped, so a write into it crashes instead of passing unnoticed.
TEST_CASE("ofi: a region freed with a receive still posted is never written", "[ofi][robustness]") {
  run_ranks(2, [&](Bootstrap& b) {
    auto t = open_ofi("tcp", b);
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
  });
}

TEST_CASE("ofi: an unknown provider or domain lists what exists", "[ofi]") {
  ofi::OfiOptions o;
  o.provider = "no-such-provider";
  CHECK_THROWS_WITH(ofi::make_transport(o, 0, 1),
                    Catch::Contains("no-such-provider") && Catch::Contains("tcp") && Catch::Contains("shm"));
  o.provider = "tcp";
  o.domains = {"nosuchif0"};
  CHECK_THROWS_WITH(ofi::make_transport(o, 0, 1), Catch::Contains("nosuchif0") && Catch::Contains("lo"));
}

TEST_CASE("ofi: registering GPU memory without CUDA support is a clear error", "[ofi]") {
  ofi::OfiOptions o;
  o.provider = "shm";
  auto t = ofi::make_transport(o, 0, 1);
  std::vector<uint8_t> buf(64);
  CHECK_THROWS_AS(t->register_memory(buf.data(), buf.size(), MemoryKind::cuda), Error);
}
