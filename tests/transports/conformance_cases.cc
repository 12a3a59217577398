// The Transport contract, one suite of cases over every variant in nets_under_test()
// (tests/transports/transport_world.h): ofi's and UCX's tcp on lo and shm, verbs over the
// soft-RoCE VM's devices with one and four QPs per peer. Built into each transport's test
// binary, named with its prefix; an operation is skipped by caps(), never by name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/progress.h"
#include "tests/support/world.h"
#include "tests/transports/send_recv_check.h"
#include "tests/transports/transport_world.h"
#include "tests/transports/write_batch_check.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

// Work requests posted and completed, summed over every channel a transport reports.
struct WrTotals {
  uint64_t posted = 0, completed = 0;
};
WrTotals wr_totals(const Transport& t) {
  WrTotals sum;
  for (const auto& c : t.channel_counters()) {
    sum.posted += c.posted;
    sum.completed += c.completions;
  }
  return sum;
}

// Both ranks keep polling until both are done: providers with manual progress move the
// target's side only when the target polls.
void exchange_token(Transport& t, Progress& p, int peer, const char* what) {
  std::vector<uint8_t> tok(8);
  auto tmr = t.register_memory(tok.data(), tok.size(), MemoryKind::host);
  auto r = p.recv(peer, 0, LocalSpan{tmr.get(), 0, 4});
  p.send(peer, 0, LocalSpan{tmr.get(), 4, 4});
  p.wait(r, what);
  p.wait_all(what);
}

}  // namespace

TEST_CASE(RAILBENCH_TEST_PREFIX "send/recv delivers every size intact, FIFO per peer and rail", "[conformance]") {
  for (const Net& net : nets_under_test()) {
    for (int rails : {1, 2}) {
      DYNAMIC_SECTION(net.name << " with " << rails << " rail(s)") {
        std::vector<std::vector<ChannelCounters>> counters(2);
        std::mutex mu;
        run_ranks(2, [&](Bootstrap& b) {
          auto t = open_rank(net, b, rails);
          expect(t->num_rails() == rails, "rail count");
          expect(t->caps().send_recv, "send/recv capability");
          expect(t->caps().max_msg_size >= (size_t{1} << 20), "max_msg_size");
          Progress p(*t, 30);
          const int peer = 1 - b.rank();
          // A NIC that is this host's CPU (rxe under emulation) gets a smaller largest message.
          const size_t largest =
              std::min(t->caps().max_msg_size, t->caps().cpu_driven_nic ? size_t{8} << 20 : (size_t{16} << 20) + 3);
          expect_send_recv_every_size(*t, p, b.rank(), peer, {0, 1, 60, 4096, size_t{1} << 20, largest});
          // 500 back-to-back messages of mixed sizes land in the order they were sent,
          // their receives posted first (in chunks of what the queues hold).
          const size_t n = 500;
          const size_t window = t->caps().max_outstanding ? std::min(n, t->caps().max_outstanding) : n;
          std::vector<uint32_t> out(n * 64), in(n * 64, 0);
          for (size_t i = 0; i < n; ++i) out[i * 64] = 1000000U * static_cast<uint32_t>(b.rank()) + i;
          auto omr = t->register_memory(out.data(), out.size() * 4, MemoryKind::host);
          auto imr = t->register_memory(in.data(), in.size() * 4, MemoryKind::host);
          for (size_t at = 0; at < n; at += window) {
            for (size_t i = at; i < std::min(n, at + window); ++i) p.recv(peer, 0, LocalSpan{imr.get(), i * 256, 256});
            b.barrier();
            for (size_t i = at; i < std::min(n, at + window); ++i)
              p.send(peer, 0, LocalSpan{omr.get(), i * 256, 4 + (i % 7) * 36});
            p.wait_all("FIFO burst");
          }
          for (size_t i = 0; i < n; ++i)
            expect(in[i * 64] == 1000000U * static_cast<uint32_t>(peer) + i, fmt::format("message {} out of order", i));
          std::lock_guard lock(mu);
          counters[static_cast<size_t>(b.rank())] = t->channel_counters();
        });
        // Where the transport counts work requests per channel: every channel is to the
        // peer, carried some and completed all it posted.
        for (int rank : {0, 1}) {
          const auto& cs = counters[static_cast<size_t>(rank)];
          CHECK(cs.size() % static_cast<size_t>(rails) == 0);
          for (const auto& c : cs) {
            INFO("rank " << rank << " peer " << c.peer << " rail " << c.rail << " channel " << c.channel);
            CHECK(c.peer == 1 - rank);
            CHECK(c.posted > 0);
            CHECK(c.completions == c.posted);
          }
        }
      }
    }
  }
}

namespace {

// The read half of the one-sided case: one read of a page at an offset, then a burst of
// small ones; the peer keeps polling meanwhile (its own reads), as manual progress needs.
// src's byte i is i * 13 + rank + 1 on every rank.
void check_reads(Transport& t, Progress& p, Bootstrap& b, int peer, std::vector<uint8_t>& dst, const MemoryRegion& dmr,
                 const RemoteKey& peer_src) {
  std::fill(dst.begin(), dst.end(), 0);
  b.barrier();
  p.wait(p.read(peer, 0, LocalSpan{&dmr, 0, 4096}, RemoteSpan{&peer_src, 100}), "read");
  size_t bad = 0;
  for (size_t i = 0; i < 4096; ++i) bad += dst[i] != static_cast<uint8_t>((i + 100) * 13 + peer + 1);
  expect(bad == 0, fmt::format("{} bytes wrong after read", bad));
  std::fill(dst.begin(), dst.end(), 0);
  for (size_t k = 0; k < 300; ++k) p.read(peer, 0, LocalSpan{&dmr, k * 16, 16}, RemoteSpan{&peer_src, 100 + k * 16});
  p.wait_all("reads");
  bad = 0;
  for (size_t i = 0; i < 300 * 16; ++i) bad += dst[i] != static_cast<uint8_t>((i + 100) * 13 + peer + 1);
  expect(bad == 0, fmt::format("{} bytes wrong after the burst of reads", bad));
  exchange_token(t, p, peer, "end of read test");
}

}  // namespace

TEST_CASE(RAILBENCH_TEST_PREFIX "one-sided write, write-with-imm and read, where the provider has them",
          "[conformance]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_rank(net, b);
        if (!t->caps().write) return;  // skipped by capability
        Progress p(*t, 30);
        const int peer = 1 - b.rank();
        const size_t bytes = (1 << 20) + 5;
        std::vector<uint8_t> src(bytes), dst(bytes, 0), tok(64, 0);
        for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<uint8_t>(i * 13 + b.rank() + 1);
        auto smr = t->register_memory(src.data(), bytes, MemoryKind::host);
        auto dmr = t->register_memory(dst.data(), bytes, MemoryKind::host);
        auto tmr = t->register_memory(tok.data(), tok.size(), MemoryKind::host);
        const RemoteKey peer_dst = RemoteKey::deserialize(b.all_gather_v(dmr->remote_key().serialize())[peer]);
        const RemoteKey peer_src = RemoteKey::deserialize(b.all_gather_v(smr->remote_key().serialize())[peer]);

        // A receive posted before the writes must still be there for the send after them:
        // a write-with-imm leaves posted receives alone.
        const uint64_t token = p.recv(peer, 0, LocalSpan{tmr.get(), 0, 8});
        b.barrier();
        // Write all but the last byte, then a write-with-imm of the last one: when the
        // target sees the imm, the whole buffer must be there. Without ordered writes,
        // wait for the write before the notification.
        std::vector<uint64_t> ids;
        ids.push_back(p.write(peer, 0, LocalSpan{smr.get(), 0, bytes - 1}, RemoteSpan{&peer_dst, 0}));
        if (t->caps().write_with_imm) {
          if (!t->caps().ordered_writes) p.wait(ids.back(), "write");
          ids.push_back(
              p.write_imm(peer, 0, LocalSpan{smr.get(), bytes - 1, 1}, RemoteSpan{&peer_dst, bytes - 1}, 0xC0FFEE));
          // Zero-byte notifications, each delivered once.
          for (uint32_t k = 0; k < 100; ++k)
            ids.push_back(p.write_imm(peer, 0, LocalSpan{smr.get(), 0, 0}, RemoteSpan{&peer_dst, 0}, k));
          expect(p.wait_imm(peer, "write-with-imm") == 0xC0FFEEu, "immediate data");
          std::vector<bool> seen(100);
          for (int k = 0; k < 100; ++k) {
            const uint32_t v = p.wait_imm(peer, "zero-byte write-with-imm");
            expect(v < 100 && !seen[v], fmt::format("imm {} unexpected", v));
            seen[v] = true;
          }
          expect(!p.done(token), "the receive was consumed by a write-with-imm");
        }
        for (uint64_t id : ids) p.wait(id, "writes");
        // Both ranks have looked before either sends the token the receive is for.
        b.barrier();
        size_t bad = 0;
        for (size_t i = 0; i < bytes; ++i) bad += dst[i] != static_cast<uint8_t>(i * 13 + peer + 1);
        expect(bad == 0, fmt::format("{} bytes wrong after write", bad));
        p.send(peer, 0, LocalSpan{tmr.get(), 8, 8});
        p.wait(token, "token after the writes");
        expect(p.bytes(token) == 8, "token length");
        p.wait_all("token");

        if (t->caps().read) check_reads(*t, p, b, peer, dst, *dmr, peer_src);
        b.barrier();  // the peer's operations on our memory are done
        // A write beyond the remote region is refused at post time, saying so.
        expect(
            t->post_write(peer, 0, LocalSpan{smr.get(), 0, 16}, RemoteSpan{&peer_dst, bytes - 8}, 1) == Status::error,
            "out-of-range write refused");
        const std::string e = t->last_error();
        expect(e.find("remote span") != std::string::npos && e.find("outside the") != std::string::npos &&
                   e.find("region") != std::string::npos,
               e);
      });
    }
  }
}

TEST_CASE(RAILBENCH_TEST_PREFIX "a batched write lands every span at its offset and completes once with its wr_id",
          "[conformance]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      std::atomic<int> finished{0};
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_rank(net, b);
        if (!t->caps().write) return;  // skipped by capability
        expect_write_batch_contract(*t, b, finished);
      });
    }
  }
}

TEST_CASE(RAILBENCH_TEST_PREFIX "thousands of batched writes in a row, through Progress, deliver in order",
          "[conformance]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_rank(net, b);
        if (!t->caps().write) return;
        Progress p(*t, 60);
        const int peer = 1 - b.rank();
        // 64 Ki 8-byte words (20000 where the NIC is this host's CPU) written one span per
        // word, batches of max_batch: far more chunks than the context pool or the send
        // queue holds, so posts meet retry (and, on libfabric's tcp, the provider's
        // -FI_EAGAIN partway through a batch).
        const size_t words = t->caps().cpu_driven_nic ? 20000 : size_t{1} << 16;
        std::vector<uint64_t> src(words), dst(words, 0);
        for (size_t i = 0; i < words; ++i) src[i] = (uint64_t{1} << 40) * static_cast<uint64_t>(b.rank() + 1) + i;
        auto smr = t->register_memory(src.data(), words * 8, MemoryKind::host);
        auto dmr = t->register_memory(dst.data(), words * 8, MemoryKind::host);
        const RemoteKey peer_dst = RemoteKey::deserialize(b.all_gather_v(dmr->remote_key().serialize())[peer]);
        std::vector<WriteSpan> ops;
        const size_t max_batch = t->caps().max_batch;
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
          expect(p.outstanding() == 0, "nothing outstanding");
          exchange_token(*t, p, peer, "end of the batched writes");
          size_t wrong = 0;
          for (size_t i = 0; i < words; ++i)
            wrong += dst[words - 1 - i] != (uint64_t{1} << 40) * static_cast<uint64_t>(peer + 1) + i;
          expect(wrong == 0, fmt::format("{} of {} words wrong (sources {})", wrong, words,
                                         sources_forward ? "forward" : "backward"));
        }
        // Where the transport counts work requests, they count a batch's each (its one
        // Completion covers them): every word's write and the two tokens' send and receive.
        if (!t->channel_counters().empty()) {
          const auto [posted, done] = wr_totals(*t);
          expect(posted == 2 * (words + 2) && done == posted, fmt::format("posted {} WRs, {} completed", posted, done));
        }
      });
    }
  }
}

// Messages that arrived before their receives were posted (kept as unexpected) and
// receives posted in a ping-pong's order, each side's receive before its send with no
// poll between, match first-in first-out.
TEST_CASE(RAILBENCH_TEST_PREFIX "messages that arrive before their receives are posted match in order",
          "[conformance]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      std::atomic<bool> sent{false};
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_rank(net, b);
        Progress p(*t, 30);
        const int peer = 1 - b.rank();
        std::vector<uint32_t> out(8), in(8, 0);
        std::iota(out.begin(), out.end(), 100U * static_cast<uint32_t>(b.rank()));
        auto omr = t->register_memory(out.data(), out.size() * 4, MemoryKind::host);
        auto imr = t->register_memory(in.data(), in.size() * 4, MemoryKind::host);
        b.barrier();
        // Rank 0 sends first; its sends complete in later waits. Rank 1 drives progress
        // with no receive posted, so they arrive unexpected, until they are posted (a
        // post may answer retry until the target polls) and 200 ms more.
        if (b.rank() == 0) {
          for (size_t i = 0; i < 4; ++i) p.send(peer, 0, LocalSpan{omr.get(), i * 4, 4});
          sent = true;
        } else {
          const auto start = std::chrono::steady_clock::now();
          while (!sent || std::chrono::steady_clock::now() - start < std::chrono::milliseconds(200)) {
            p.poll_once();
            expect(std::chrono::steady_clock::now() - start < std::chrono::seconds(30), "rank 0's sends not posted");
          }
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

// 20000 sends (and, with write, 20000 writes) posted with no poll between them: posts
// meet retry, and a send that finishes inside its own post (an eager path) still keeps
// its slot until poll() hands out its completion, so none is lost.
TEST_CASE(RAILBENCH_TEST_PREFIX "posting far more than the queues hold is absorbed by retry", "[conformance]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_rank(net, b);
        Progress p(*t, 60);
        const int peer = 1 - b.rank();
        std::vector<uint8_t> buf(64);
        auto mr = t->register_memory(buf.data(), buf.size(), MemoryKind::host);
        const RemoteKey key = RemoteKey::deserialize(b.all_gather_v(mr->remote_key().serialize())[peer]);
        const int n = 20000;
        if (b.rank() == 1) {
          for (int i = 0; i < n; ++i) p.recv(peer, 0, LocalSpan{mr.get(), 0, 8});
        } else {
          for (int i = 0; i < n; ++i) p.send(peer, 0, LocalSpan{mr.get(), 8, 8});
        }
        const bool writes = t->caps().write;
        if (writes)
          for (int i = 0; i < n; ++i) p.write(peer, 0, LocalSpan{mr.get(), 16, 8}, RemoteSpan{&key, 32});
        p.wait_all("a burst of 20000 messages and writes");
        expect(p.outstanding() == 0, "nothing outstanding");
        if (!t->channel_counters().empty()) {
          const auto [posted, done] = wr_totals(*t);
          const uint64_t want = static_cast<uint64_t>(n) * (writes ? 2 : 1);
          expect(posted == want && done == posted, fmt::format("posted {} completed {}", posted, done));
        }
        // The peer's writes into our memory may need our progress to finish.
        exchange_token(*t, p, peer, "end of the burst");
      });
    }
  }
}

TEST_CASE(RAILBENCH_TEST_PREFIX "a peer that never sends is named in the timeout", "[conformance]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      std::string error;
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_rank(net, b);
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

TEST_CASE(RAILBENCH_TEST_PREFIX "registering GPU memory without CUDA support is a clear error", "[conformance]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      run_ranks(1, [&](Bootstrap& b) {
        auto t = open_rank(net, b);
        if (t->caps().device_memory) return;  // skipped by capability
        std::vector<uint8_t> buf(64);
        bool threw = false;
        try {
          t->register_memory(buf.data(), buf.size(), MemoryKind::cuda);
        } catch (const Error&) {
          threw = true;
        }
        expect(threw, "registering GPU memory is refused with a railbench Error");
      });
    }
  }
}

TEST_CASE(RAILBENCH_TEST_PREFIX "memory regions may outlive their transport", "[conformance]") {
  for (const Net& net : nets_under_test()) {
    DYNAMIC_SECTION(net.name) {
      std::vector<uint8_t> buf(1 << 16);
      std::unique_ptr<MemoryRegion> mr;
      run_ranks(1, [&](Bootstrap& b) {
        auto t = open_rank(net, b);
        mr = t->register_memory(buf.data(), buf.size(), MemoryKind::host);
        expect(mr->remote_key().rails.size() == 1, "one rail key");
      });
      mr.reset();
      CHECK(true);
    }
  }
}
