// What only the verbs transport answers, over real devices with ranks as threads: a rank
// connected to itself, a failed receive's flush naming peer, rail and status, its QPs per
// peer, its refusals (rails, GID index, QP counts, dma-buf) and what a rail reports. The
// Transport contract over verbs is tests/transports/conformance_cases.cc, built into the
// same binary. Not registered with ctest on the host (it has no RDMA device): the rxe
// tests run it inside the soft-RoCE VM (tests/rxe/cases.sh), where a missing device is a
// failure, not a skip.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/progress.h"
#include "tests/support/world.h"
#include "tests/transports/transport_world.h"
#include "transports/verbs/verbs_transport.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

int active_ports() {
  int n = 0;
  for (const auto& p : verbs::list_devices()) n += p.state == "ACTIVE";
  return n;
}

#define NEED_DEVICES(n)                                                                         \
  if (active_ports() < (n)) {                                                                   \
    FAIL("needs " << (n) << " active RDMA port(s): run it in scripts/rxe-vm/run.sh --rails 2"); \
  }

}  // namespace

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
    auto t = open_rank(verbs_net(1), b);
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

TEST_CASE("verbs: --qps-per-peer N connects N queue pairs to each peer on each rail", "[verbs]") {
  NEED_DEVICES(1);
  const int rails = std::min(active_ports(), 2);
  for (int qps : {1, 4}) {
    DYNAMIC_SECTION(qps << " QP(s) per peer, " << rails << " rail(s)") {
      run_ranks(2, [&](Bootstrap& b) {
        auto t = open_rank(verbs_net(qps), b, rails);
        expect(t->caps().ordered_writes == (qps == 1), "ordered_writes only with one QP");
        const auto cs = t->channel_counters();
        expect(cs.size() == static_cast<size_t>(rails * qps),
               fmt::format("{} channels, want {} rail(s) x {} QP(s)", cs.size(), rails, qps));
        for (const auto& c : cs)
          expect(c.peer == 1 - b.rank() && c.channel < qps,
                 fmt::format("a channel to peer {} numbered {}", c.peer, c.channel));
      });
    }
  }
}
