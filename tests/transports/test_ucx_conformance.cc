// The Transport contract, checked over real UCX (UCX_TLS=tcp over loopback and
// UCX_TLS=shm), the same cases as the ofi conformance test. Operations are skipped by
// capability, never by transport name.
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
#include "tests/transports/send_recv_check.h"
#include "tests/transports/ucx_world.h"
#include "tests/transports/write_batch_check.h"
#include "transports/ucx/ucx_transport.h"

using namespace railbench;
using railbench::testing::expect;
using railbench::testing::expect_send_recv_every_size;
using railbench::testing::expect_write_batch_contract;
using railbench::testing::open_ucx;
using railbench::testing::run_ranks;

namespace {

// tcp runs over the loopback domain (see ucx_world.h); shm needs nothing.
const std::vector<std::string> kTls{"tcp", "shm"};  // UCX_TLS values

}  // namespace

TEST_CASE("ucx: send/recv delivers every size intact, FIFO per peer and rail", "[ucx]") {
  for (const auto& prov : kTls) {
    for (int rails : {1, 2}) {
      DYNAMIC_SECTION(prov << " with " << rails << " rail(s)") {
        run_ranks(2, [&](Bootstrap& b) {
          auto t = open_ucx(prov, b, rails);
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

TEST_CASE("ucx: one-sided write, write-with-imm and read, where the provider has them", "[ucx]") {
  for (const auto& prov : kTls) {
    DYNAMIC_SECTION(prov) {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ucx(prov, b);
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

TEST_CASE("ucx: a batched write lands every span at its offset and completes once with its wr_id", "[ucx]") {
  for (const auto& prov : kTls) {
    DYNAMIC_SECTION(prov) {
      std::atomic<int> finished{0};
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ucx(prov, b);
        if (!t->caps().write) return;  // skipped by capability
        expect_write_batch_contract(*t, b, finished);
      });
    }
  }
}

TEST_CASE("ucx: thousands of batched writes in a row, through Progress, deliver in order", "[ucx]") {
  for (const auto& prov : kTls) {
    DYNAMIC_SECTION(prov) {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ucx(prov, b);
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

// Messages that arrived before their receives were posted (UCX keeps them as unexpected)
// and receives posted in a ping-pong's order, each side's receive before its send with no
// poll between, match first-in first-out.
TEST_CASE("ucx: messages that arrive before their receives are posted match in order", "[ucx]") {
  for (const auto& prov : kTls) {
    DYNAMIC_SECTION(prov) {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ucx(prov, b);
        Progress p(*t, 20);
        const int peer = 1 - b.rank();
        std::vector<uint32_t> out(8), in(8, 0);
        std::iota(out.begin(), out.end(), 100U * static_cast<uint32_t>(b.rank()));
        auto omr = t->register_memory(out.data(), out.size() * 4, MemoryKind::host);
        auto imr = t->register_memory(in.data(), in.size() * 4, MemoryKind::host);
        // Rank 0 sends first; its sends complete in later waits (over tcp they need rank
        // 1's progress, which the barrier holds up).
        if (b.rank() == 0)
          for (size_t i = 0; i < 4; ++i) p.send(peer, 0, LocalSpan{omr.get(), i * 4, 4});
        b.barrier();
        if (b.rank() == 1) {
          // Rank 0's messages arrive unexpected here: drive progress until they are in.
          for (auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
               std::chrono::steady_clock::now() < end;)
            p.poll_once();
          for (size_t i = 0; i < 4; ++i) p.recv(peer, 0, LocalSpan{imr.get(), i * 4, 4});
          p.wait_all("receives of messages that arrived first");
        }
        // A ping-pong: each side posts its receive and its send without polling between.
        for (size_t i = 4; i < 8; ++i) {
          const uint64_t r = p.recv(peer, 0, LocalSpan{imr.get(), i * 4, 4});
          if (b.rank() == 0) p.send(peer, 0, LocalSpan{omr.get(), i * 4, 4});
          p.wait(r, "a ping-pong message");
          if (b.rank() == 1) p.send(peer, 0, LocalSpan{omr.get(), i * 4, 4});
        }
        p.wait_all("the ping-pong");
        for (size_t i = (b.rank() == 1 ? 0 : 4); i < 8; ++i)
          expect(in[i] == 100U * static_cast<uint32_t>(peer) + i, fmt::format("message {} out of order", i));
      });
    }
  }
}

// 20000 sends that each finish inside their own post (tcp's eager path), with no poll
// between them, once overran the completion ring (pool + 1024) and lost ~2600
// completions: an operation's slot is now held until poll() hands out its completion.
TEST_CASE("ucx: posting far more than the queues hold is absorbed by retry", "[ucx]") {
  for (const auto& prov : kTls) {
    DYNAMIC_SECTION(prov) {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ucx(prov, b);
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

TEST_CASE("ucx: a peer that never sends is named in the timeout", "[ucx]") {
  for (const auto& prov : kTls) {
    DYNAMIC_SECTION(prov) {
      std::string error;
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_ucx(prov, b);
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

// A peer that goes away fails its endpoint (UCP_ERR_HANDLING_MODE_PEER): the receive
// posted for it fails well before the deadline, naming the peer, its rail and UCX's code,
// and every later post to it completes at once with the same failure. Over tcp only: a
// shared-memory peer in the same process never looks dead to UCX's keepalive (it checks
// the peer's pid), which tests/robustness/ucx_dead_peer.sh covers with real processes.
TEST_CASE("ucx: a peer that goes away fails its endpoint, named with UCX's code", "[ucx][robustness]") {
  std::string wait_error, post_error;
  double waited_s = 0;
  run_ranks(2, [&](Bootstrap& b) {
    auto t = open_ucx("tcp", b);
    std::vector<uint8_t> buf(64);
    auto mr = t->register_memory(buf.data(), buf.size(), MemoryKind::host);
    if (b.rank() == 1) {
      b.barrier();  // rank 0's receive is posted
      t.reset();    // closes the endpoint and the worker, as a dying process's kernel would
      b.barrier();
      return;
    }
    Progress p(*t, 20, {"rank 0 (nodeA)", "rank 1 (nodeB)"});
    const uint64_t id = p.recv(1, 0, LocalSpan{mr.get(), 0, 8});
    b.barrier();
    b.barrier();
    const auto start = std::chrono::steady_clock::now();
    try {
      p.wait(id, "a message from a peer that went away");
    } catch (const TransportError& e) {
      wait_error = e.what();
    }
    waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    expect(t->post_send(1, 0, LocalSpan{mr.get(), 0, 8}, 7) == Status::ok, "a post to a failed peer is accepted");
    std::vector<Completion> done(4);
    const size_t n = t->poll(done);
    expect(n == 1 && done[0].wr_id == 7 && done[0].status == Status::error, "and completes at once with an error");
    post_error = t->last_error();
  });
  CHECK(waited_s < 10);
  CHECK_THAT(wait_error, Catch::Contains("rank 1 (nodeB)") && Catch::Contains("recv") && Catch::Contains("UCS_ERR_"));
  CHECK_THAT(post_error, Catch::Contains("send with peer 1 on rail 0 (lo)") && Catch::Contains("UCS_ERR_"));
}

// Teardown after a failure: a region destroyed while a receive into it is
// still posted must close the endpoint first, or the provider later copies a late
// message into freed memory (a SIGSEGV in libfabric during teardown). The buffer is
// unmapped, so a write into it crashes instead of passing unnoticed.
TEST_CASE("ucx: a region freed with a receive still posted is never written", "[ucx][robustness]") {
  run_ranks(2, [&](Bootstrap& b) {
    auto t = open_ucx("tcp", b);
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

TEST_CASE("ucx: an unknown transport or device lists what exists", "[ucx]") {
  ucx::UcxOptions o;
  o.tls = "no-such-tl";
  CHECK_THROWS_WITH(ucx::make_transport(o, 0, 1),
                    Catch::Contains("no-such-tl") && Catch::Contains("tcp") && Catch::Contains("posix"));
  o.tls = "tcp";
  o.devices = {"nosuchif0"};
  CHECK_THROWS_WITH(ucx::make_transport(o, 0, 1), Catch::Contains("nosuchif0") && Catch::Contains("lo"));
}

TEST_CASE("ucx: registering GPU memory without CUDA support is a clear error", "[ucx]") {
  ucx::UcxOptions o;
  o.tls = "shm";
  auto t = ucx::make_transport(o, 0, 1);
  std::vector<uint8_t> buf(64);
  CHECK_THROWS_AS(t->register_memory(buf.data(), buf.size(), MemoryKind::cuda), Error);
  if (!ucx::cuda_supported()) {
    o.cuda = true;
    CHECK_THROWS_WITH(ucx::make_transport(o, 0, 1), Catch::Contains("--mem cuda") && Catch::Contains("CUDA"));
  }
}
