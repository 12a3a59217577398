// The Transport contract over real verbs devices, ranks as threads, each with its own
// transport. Not registered with ctest on the host (it has no RDMA device): the rxe
// tests run it inside the soft-RoCE VM (tests/rxe/cases.sh), where a missing device
// is a failure, not a skip.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/progress.h"
#include "tests/support/world.h"
#include "tests/transports/send_recv_check.h"
#include "tests/transports/write_batch_check.h"
#include "transports/verbs/verbs_transport.h"

using namespace railbench;
using railbench::testing::expect;
using railbench::testing::expect_send_recv_every_size;
using railbench::testing::expect_write_batch_contract;
using railbench::testing::run_ranks;

namespace {

int active_ports() {
  int n = 0;
  for (const auto& p : verbs::list_devices()) n += p.state == "ACTIVE";
  return n;
}

std::unique_ptr<Transport> open_verbs(Bootstrap& b, int rails, int qps = 1) {
  verbs::VerbsOptions o;
  o.num_rails = rails;
  o.qps_per_peer = qps;
  auto t = verbs::make_transport(o, b.rank(), b.size());
  t->connect_all(b);
  return t;
}

// Work requests posted and completed, summed over every channel of `t`.
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

#define NEED_DEVICES(n)                                                                         \
  if (active_ports() < (n)) {                                                                   \
    FAIL("needs " << (n) << " active RDMA port(s): run it in scripts/rxe-vm/run.sh --rails 2"); \
  }

}  // namespace

TEST_CASE("verbs: send/recv delivers every size intact and FIFO, over 1 and 4 QPs per peer", "[verbs]") {
  NEED_DEVICES(1);
  const int rails = std::min(active_ports(), 2);
  for (int qps : {1, 4}) {
    DYNAMIC_SECTION(qps << " QP(s) per peer, " << rails << " rail(s)") {
      std::map<int, std::vector<ChannelCounters>> counters;
      std::mutex mu;
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_verbs(b, rails, qps);
        expect(t->caps().ordered_writes == (qps == 1), "ordered_writes only with one QP");
        expect(t->caps().max_msg_size >= (1u << 20), "max_msg_size");
        Progress p(*t, 30);
        const int peer = 1 - b.rank();
        const size_t max = std::min<size_t>(t->caps().max_msg_size, 8u << 20);
        expect_send_recv_every_size(*t, p, b.rank(), peer, {0, 1, 60, 4096, size_t{1} << 20, max});
        // 500 back-to-back messages of mixed sizes land in the order they were sent.
        const size_t n = 500;
        std::vector<uint32_t> out(n * 64), in(n * 64, 0);
        for (size_t i = 0; i < n; ++i) out[i * 64] = 1000000U * static_cast<uint32_t>(b.rank()) + i;
        auto omr = t->register_memory(out.data(), out.size() * 4, MemoryKind::host);
        auto imr = t->register_memory(in.data(), in.size() * 4, MemoryKind::host);
        for (size_t i = 0; i < n; ++i) p.recv(peer, 0, LocalSpan{imr.get(), i * 256, 256});
        b.barrier();
        for (size_t i = 0; i < n; ++i) p.send(peer, 0, LocalSpan{omr.get(), i * 256, 4 + (i % 7) * 36});
        p.wait_all("FIFO burst");
        for (size_t i = 0; i < n; ++i)
          expect(in[i * 64] == 1000000U * static_cast<uint32_t>(peer) + i, fmt::format("message {} out of order", i));
        std::lock_guard lock(mu);
        counters[b.rank()] = t->channel_counters();
      });
      for (auto& [rank, cs] : counters) {
        CHECK(cs.size() == static_cast<size_t>(rails * qps));
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

TEST_CASE("verbs: write, write-with-imm and read; write-with-imm leaves posted receives alone", "[verbs]") {
  NEED_DEVICES(1);
  for (int qps : {1, 3}) {
    DYNAMIC_SECTION(qps << " QP(s) per peer") {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_verbs(b, 1, qps);
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

        // A receive posted before the writes must still be there for the send after them.
        const uint64_t token = p.recv(peer, 0, LocalSpan{tmr.get(), 0, 8});
        b.barrier();
        std::vector<uint64_t> ids;
        ids.push_back(p.write(peer, 0, LocalSpan{smr.get(), 0, bytes - 1}, RemoteSpan{&peer_dst, 0}));
        // Not ordered across QPs: then wait for the write before the notification.
        if (qps > 1) p.wait(ids.back(), "write");
        ids.push_back(
            p.write_imm(peer, 0, LocalSpan{smr.get(), bytes - 1, 1}, RemoteSpan{&peer_dst, bytes - 1}, 0xC0FFEE));
        for (uint32_t k = 0; k < 100; ++k)
          ids.push_back(p.write_imm(peer, 0, LocalSpan{smr.get(), 0, 0}, RemoteSpan{&peer_dst, 0}, k));
        expect(p.wait_imm(peer, "write-with-imm") == 0xC0FFEEu, "immediate data");
        std::vector<bool> seen(100);
        for (int k = 0; k < 100; ++k) {
          uint32_t v = p.wait_imm(peer, "zero-byte write-with-imm");
          expect(v < 100 && !seen[v], fmt::format("imm {} unexpected", v));
          seen[v] = true;
        }
        expect(!p.done(token), "the receive was consumed by a write-with-imm");
        // Both ranks have looked before either sends the token the receive is for.
        b.barrier();
        for (uint64_t id : ids) p.wait(id, "writes");
        size_t bad = 0;
        for (size_t i = 0; i < bytes; ++i) bad += dst[i] != static_cast<uint8_t>(i * 13 + peer + 1);
        expect(bad == 0, fmt::format("{} bytes wrong after write", bad));
        p.send(peer, 0, LocalSpan{tmr.get(), 8, 8});
        p.wait(token, "token after the writes");
        expect(p.bytes(token) == 8, "token length");
        p.wait_all("token");

        // Reads at an offset, many small ones in a burst (selective signaling).
        std::fill(dst.begin(), dst.end(), 0);
        b.barrier();
        for (size_t k = 0; k < 300; ++k)
          p.read(peer, 0, LocalSpan{dmr.get(), k * 16, 16}, RemoteSpan{&peer_src, 100 + k * 16});
        p.wait_all("reads");
        bad = 0;
        for (size_t i = 0; i < 300 * 16; ++i) bad += dst[i] != static_cast<uint8_t>((i + 100) * 13 + peer + 1);
        expect(bad == 0, fmt::format("{} bytes wrong after read", bad));
        b.barrier();  // the peer's reads of our memory are done
        // A write beyond the remote region is refused at post time.
        expect(
            t->post_write(peer, 0, LocalSpan{smr.get(), 0, 16}, RemoteSpan{&peer_dst, bytes - 8}, 1) == Status::error,
            "out-of-range write refused");
        expect(t->last_error().find("outside the remote region") != std::string::npos, t->last_error());
      });
    }
  }
}

TEST_CASE("verbs: a rank can connect to itself", "[verbs]") {
  NEED_DEVICES(1);
  run_ranks(1, [&](Bootstrap& b) {
    verbs::VerbsOptions o;
    o.qps_per_peer = 2;
    auto t = verbs::make_transport(o, 0, 1);
    t->connect(0, 0, t->local_address(0));
    Progress p(*t, 30);
    std::vector<uint8_t> a(4096, 7), c(4096, 0);
    auto amr = t->register_memory(a.data(), a.size(), MemoryKind::host);
    auto cmr = t->register_memory(c.data(), c.size(), MemoryKind::host);
    for (int i = 0; i < 10; ++i) {
      auto r = p.recv(0, 0, LocalSpan{cmr.get(), 0, 4096});
      p.send(0, 0, LocalSpan{amr.get(), 0, 4096});
      p.wait(r, "loopback message");
    }
    const RemoteKey key = cmr->remote_key();
    p.write_imm(0, 0, LocalSpan{amr.get(), 0, 100}, RemoteSpan{&key, 200}, 42);
    expect(p.wait_imm(0, "loopback imm") == 42, "imm");
    p.wait_all("loopback");
    expect(c[0] == 7 && c[299] == 7, "loopback data");
    (void)b;
  });
}

TEST_CASE("verbs: a receive smaller than the message fails and names peer, rail and status", "[verbs]") {
  NEED_DEVICES(1);
  std::string err;
  run_ranks(2, [&](Bootstrap& b) {
    auto t = open_verbs(b, 1);
    std::vector<uint8_t> buf(4096);
    auto mr = t->register_memory(buf.data(), buf.size(), MemoryKind::host);
    const int peer = 1 - b.rank();
    if (b.rank() == 1) {
      expect(t->post_recv(peer, 0, LocalSpan{mr.get(), 0, 16}, 1) == Status::ok, "recv 1");
      expect(t->post_recv(peer, 0, LocalSpan{mr.get(), 0, 16}, 2) == Status::ok, "recv 2");
      b.barrier();
      std::vector<Completion> cs(8);
      std::vector<Completion> got;
      for (int spins = 0; got.size() < 2 && spins < 20000000; ++spins) {
        size_t n = t->poll(cs);
        got.insert(got.end(), cs.begin(), cs.begin() + static_cast<long>(n));
      }
      expect(got.size() == 2, fmt::format("{} completions", got.size()));
      expect(got[0].wr_id == 1 && got[0].status == Status::error, "first receive fails");
      expect(got[1].wr_id == 2 && got[1].status == Status::error, "second receive is flushed");
      err = t->last_error();
    } else {
      b.barrier();
      expect(t->post_send(peer, 0, LocalSpan{mr.get(), 0, 1000}, 9) == Status::ok, "send");
      std::vector<Completion> cs(8);
      size_t n = 0;
      for (int spins = 0; n == 0 && spins < 20000000; ++spins) n = t->poll(cs);
      expect(n == 1 && cs[0].wr_id == 9 && cs[0].status == Status::error, "the send fails too");
    }
    b.barrier();
  });
  CHECK_THAT(err, Catch::Contains("recv from peer 0 on rail") && Catch::Contains("channel 0") &&
                      Catch::Contains("wr_id 1") && Catch::Contains("status"));
  INFO(err);
  CHECK(true);
}

TEST_CASE("verbs: memory regions may outlive their transport", "[verbs]") {
  NEED_DEVICES(1);
  std::vector<uint8_t> buf(1 << 16);
  std::unique_ptr<MemoryRegion> mr;
  {
    verbs::VerbsOptions o;
    auto t = verbs::make_transport(o, 0, 1);
    mr = t->register_memory(buf.data(), buf.size(), MemoryKind::host);
    CHECK(mr->remote_key().rails.size() == 1);
  }
  mr.reset();
  CHECK(true);
}

TEST_CASE("verbs: bad rails, GID index and QP counts are usage errors that list what exists", "[verbs]") {
  NEED_DEVICES(1);
  verbs::VerbsOptions o;
  o.devices = {"nosuch0"};
  CHECK_THROWS_AS(verbs::make_transport(o, 0, 1), UsageError);
  CHECK_THROWS_WITH(verbs::make_transport(o, 0, 1),
                    Catch::Contains("nosuch0") && Catch::Contains("rxe0 port 1 (ACTIVE"));
  o.devices.clear();
  o.gid_index = 99999;
  CHECK_THROWS_WITH(verbs::make_transport(o, 0, 1),
                    Catch::Contains("--gid-index 99999 is out of range") && Catch::Contains("entries"));
  o.gid_index = 77;
  CHECK_THROWS_WITH(verbs::make_transport(o, 0, 1), Catch::Contains("empty entry"));
  o.gid_index = 1;
  CHECK_NOTHROW(verbs::make_transport(o, 0, 1));
  o.gid_index = -1;
  o.qps_per_peer = 65;
  CHECK_THROWS_AS(verbs::make_transport(o, 0, 1), UsageError);
  o.qps_per_peer = 1;
  o.num_rails = 99;
  CHECK_THROWS_WITH(verbs::make_transport(o, 0, 1), Catch::Contains("active"));
  std::vector<uint8_t> buf(64);
  o.num_rails = 1;
  auto t = verbs::make_transport(o, 0, 1);
  // GPU memory goes through dma-buf first; with only dma-buf allowed, a buffer CUDA does
  // not know (no driver here) is refused with an error that says what was tried. (With
  // both allowed, ibv_reg_mr, the nvidia-peermem path, accepts any host buffer.)
  ::setenv("RAILBENCH_GPUDIRECT", "dmabuf", 1);
  CHECK_THROWS_WITH(t->register_memory(buf.data(), buf.size(), MemoryKind::cuda),
                    Catch::Contains("dma-buf:") && Catch::Contains("not tried (RAILBENCH_GPUDIRECT=dmabuf)"));
  ::unsetenv("RAILBENCH_GPUDIRECT");
  CHECK(t->name() == "verbs");
  CHECK(t->provider() == "rxe0");
  const RailInfo info = t->rail_info(0);
  CHECK(info.name == "rxe0:1");
  CHECK(info.mtu == 1024);
  CHECK_THAT(info.address, Catch::Contains("::ffff:10.0.0.15"));
  CHECK(info.fabric == "10.0.0.0/24");
}

TEST_CASE("verbs: posting far more than the queues hold is absorbed by retry", "[verbs]") {
  NEED_DEVICES(1);
  run_ranks(2, [&](Bootstrap& b) {
    auto t = open_verbs(b, 1, 2);
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
    for (int i = 0; i < n; ++i) p.write(peer, 0, LocalSpan{mr.get(), 16, 8}, RemoteSpan{&key, 32});
    p.wait_all("a burst of 20000 messages and writes");
    expect(p.outstanding() == 0, "nothing outstanding");
    const auto [posted, done] = wr_totals(*t);
    expect(posted == 2u * n && done == posted, fmt::format("posted {} completed {}", posted, done));
    b.barrier();
  });
}

TEST_CASE("verbs: a batched write lands every span at its offset and completes once with its wr_id", "[verbs]") {
  NEED_DEVICES(1);
  for (int qps : {1, 3}) {
    DYNAMIC_SECTION(qps << " QP(s) per peer") {
      std::atomic<int> finished{0};
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_verbs(b, 1, qps);
        expect_write_batch_contract(*t, b, finished);
      });
    }
  }
}

TEST_CASE("verbs: batches far beyond the send queue's depth are absorbed by retry", "[verbs]") {
  NEED_DEVICES(1);
  run_ranks(2, [&](Bootstrap& b) {
    auto t = open_verbs(b, 1);
    Progress p(*t, 60);
    const int peer = 1 - b.rank();
    const size_t words = 20000;
    std::vector<uint64_t> src(words), dst(words, 0);
    for (size_t i = 0; i < words; ++i) src[i] = (uint64_t{1} << 40) * static_cast<uint64_t>(b.rank() + 1) + i;
    auto smr = t->register_memory(src.data(), words * 8, MemoryKind::host);
    auto dmr = t->register_memory(dst.data(), words * 8, MemoryKind::host);
    const RemoteKey key = RemoteKey::deserialize(b.all_gather_v(dmr->remote_key().serialize())[peer]);
    std::vector<WriteSpan> ops;
    size_t batches = 0;
    for (size_t at = 0; at < words; at += t->caps().max_batch, ++batches) {
      ops.clear();
      for (size_t i = at; i < std::min(words, at + t->caps().max_batch); ++i)
        ops.push_back(WriteSpan{LocalSpan{smr.get(), i * 8, 8}, RemoteSpan{&key, (words - 1 - i) * 8}});
      p.write_batch(peer, 0, ops);
    }
    p.wait_all("batched writes");
    expect(p.outstanding() == 0, "nothing outstanding");
    const auto [posted, done] = wr_totals(*t);
    // Counters count work requests, a batch's included (its one Completion covers them).
    expect(posted == words && done == posted,
           fmt::format("posted {} WRs in {} batches, {} completed", posted, batches, done));
    b.barrier();
    size_t wrong = 0;
    for (size_t i = 0; i < words; ++i)
      wrong += dst[words - 1 - i] != (uint64_t{1} << 40) * static_cast<uint64_t>(peer + 1) + i;
    expect(wrong == 0, fmt::format("{} of {} words wrong", wrong, words));
  });
}
