// Straggler attribution (lib/observe): the analysis on hand-built timelines with a
// planted late rank, a planted slow link, a healthy run and a blame under the clock
// uncertainty; the op recorder over the loopback transport running a real ring
// all-reduce; the clock offsets over ranks as threads.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "collectives/allreduce.h"
#include "collectives/check.h"
#include "lib/observe/clock_offsets.h"
#include "lib/observe/op_recorder.h"
#include "lib/observe/straggler_recording.h"
#include "lib/observe/stragglers.h"
#include "lib/transport/progress.h"
#include "tests/support/loopback_transport.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

constexpr int64_t kUs = 1000;

// A ring of `n` ranks, one per node, `iters` iterations of one op each: rank r sends
// 1 MB to r+1 on rail (r % 2), 1 ms at the normal rate. late(it, r) and slow(r) plant
// the faults: extra ns before rank r arrives, and how many times slower its send is.
struct Timeline {
  int n = 4;
  int iters = 20;
  std::function<int64_t(int, int)> late = [](int, int) { return int64_t{0}; };
  std::function<double(int)> slow = [](int) { return 1.0; };
  uint32_t flags = 0;   // of every op's key
  bool writes = false;  // one-sided writes, recorded by the writer alone, instead of send/recv

  StragglerInput build() const {
    StragglerInput in;
    in.ranks.resize(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) in.node_of_rank.push_back(fmt::format("node{}", r));
    in.rail_names = {"eth0", "eth1"};
    int64_t t = 1'000'000'000;
    for (int it = 0; it < iters; ++it) {
      std::vector<int64_t> arrive(static_cast<size_t>(n)), done(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) arrive[r] = t + r * kUs / 10 + late(it, r);  // a little jitter, one clock
      for (int r = 0; r < n; ++r) {
        const int dst = (r + 1) % n;
        const int64_t start = std::max(arrive[r], arrive[dst]);
        const int64_t end = start + static_cast<int64_t>(1000 * kUs * slow(r));
        if (writes) {
          add(in.ranks[r], MsgRecord{dst, r % 2, 1 << 20, start, end, MsgDir::write});
        } else {
          add(in.ranks[r], MsgRecord{dst, r % 2, 1 << 20, arrive[r], end, MsgDir::send});
          add(in.ranks[dst], MsgRecord{r, r % 2, 1 << 20, arrive[dst], end, MsgDir::recv});
        }
        done[r] = std::max(done[r], end);
        done[dst] = std::max(done[dst], end);
      }
      for (int r = 0; r < n; ++r) close(in.ranks[r], it, arrive[r], done[r] + kUs);
      t = *std::max_element(done.begin(), done.end()) + 10 * kUs;
    }
    return in;
  }
  // Messages are appended before their op is closed: the op takes every open message.
  static void add(RankOps& ro, MsgRecord m) { ro.msgs.push_back(m); }
  void close(RankOps& ro, int it, int64_t arrive, int64_t end) const {
    OpRecord op;
    op.key = make_op_key(static_cast<uint32_t>(it), 0, "allreduce", flags);
    op.arrive_ns = arrive;
    op.end_ns = end;
    op.first_msg = ro.ops.empty() ? 0 : ro.ops.back().first_msg + ro.ops.back().msgs;
    op.msgs = static_cast<uint32_t>(ro.msgs.size()) - op.first_msg;
    ro.ops.push_back(op);
  }
};

}  // namespace

TEST_CASE("stragglers: a healthy run names nobody", "[stragglers]") {
  const StragglerReport r = analyse_stragglers(Timeline{}.build());
  CHECK(r.iterations == 20);
  CHECK(r.ops == 20);
  CHECK(r.unmatched_msgs == 0);
  CHECK(r.verdict_kind == "none");
  for (const auto& b : r.links) CHECK_FALSE(b.beyond_threshold);
}

TEST_CASE("stragglers: a rank arriving late is the late arriver, not a link", "[stragglers]") {
  Timeline tl;
  tl.late = [](int, int r) { return r == 2 ? 500 * kUs : int64_t{0}; };
  const StragglerReport r = analyse_stragglers(tl.build());
  REQUIRE(r.verdict_kind == "late_arriver");
  REQUIRE_FALSE(r.ranks.empty());
  CHECK(r.ranks[0].rank == 2);
  CHECK(r.ranks[0].iterations == 20);
  // 500 us late against the second-latest arrival (rank 3's 0.3 us of jitter).
  CHECK(r.ranks[0].cost_ns == Approx(20 * (500 - 0.1) * kUs).epsilon(0.01));
  CHECK_THAT(r.verdict, Catch::Matchers::Contains("late arriver rank 2 (node2)"));
  // Its links ran at the normal rate: none is blamed.
  CHECK(r.links.empty());
}

TEST_CASE("stragglers: an op whose arrivals are scheduled blames no late arrival", "[stragglers]") {
  // A pipeline stage reaches its receive long before its neighbour's compute ends: by
  // design, not a straggler.
  Timeline tl;
  tl.late = [](int, int r) { return r == 2 ? 500 * kUs : int64_t{0}; };
  tl.flags = kOpArrivalsScheduled;
  const StragglerReport r = analyse_stragglers(tl.build());
  CHECK(r.verdict_kind == "none");
  CHECK(r.ranks.empty());
  CHECK(r.links.empty());
}

TEST_CASE("stragglers: a slow link is named with its nodes and rail", "[stragglers]") {
  Timeline tl;
  tl.slow = [](int r) { return r == 1 ? 3.0 : 1.0; };  // node1 -> node2 on rail 1, a third of the rate
  const StragglerReport r = analyse_stragglers(tl.build());
  REQUIRE(r.verdict_kind == "slow_link");
  REQUIRE_FALSE(r.links.empty());
  CHECK(r.links[0].src_node == "node1");
  CHECK(r.links[0].dst_node == "node2");
  CHECK(r.links[0].rail == 1);
  CHECK(r.links[0].worst_rate_ratio == Approx(1.0 / 3).epsilon(0.01));
  CHECK(r.links[0].cost_ns == Approx(20 * 2000 * kUs).epsilon(0.01));  // 2 ms over the median rate, each op
  CHECK_THAT(r.verdict, Catch::Matchers::Contains("slow link node1 -> node2 rail 1 (eth1)"));
  for (const auto& b : r.ranks) CHECK_FALSE(b.beyond_threshold);
}

TEST_CASE("stragglers: a slow link is named from one-sided writes too", "[stragglers]") {
  Timeline tl;
  tl.writes = true;
  const StragglerReport healthy = analyse_stragglers(tl.build());
  CHECK(healthy.verdict_kind == "none");
  CHECK(healthy.unmatched_msgs == 0);
  tl.slow = [](int r) { return r == 1 ? 3.0 : 1.0; };
  const StragglerReport r = analyse_stragglers(tl.build());
  REQUIRE(r.verdict_kind == "slow_link");
  CHECK(r.links[0].src_node == "node1");
  CHECK(r.links[0].dst_node == "node2");
  CHECK(r.links[0].rail == 1);
  CHECK(r.links[0].worst_rate_ratio == Approx(1.0 / 3).epsilon(0.01));
  CHECK(r.unmatched_msgs == 0);
}

TEST_CASE("stragglers: a blame smaller than the clock uncertainty is not made", "[stragglers]") {
  Timeline tl;
  tl.late = [](int, int r) { return r == 2 ? 150 * kUs : int64_t{0}; };
  StragglerInput in = tl.build();
  // 150 us late, but the clocks are only known to 100 us each.
  in.clocks.assign(4, ClockOffset{0, 100 * kUs, 200 * kUs});
  in.clocks[0].uncertainty_ns = 0;
  const StragglerReport r = analyse_stragglers(in);
  CHECK(r.ranks.empty());
  CHECK(r.verdict_kind == "none");
  // With the clocks known to 10 us it is named.
  for (auto& c : in.clocks) c.uncertainty_ns = 10 * kUs;
  CHECK(analyse_stragglers(in).verdict_kind == "late_arriver");
}

TEST_CASE("stragglers: records on another clock are moved by its offset", "[stragglers]") {
  StragglerInput in = Timeline{}.build();
  // Rank 3's clock runs 7 s ahead of rank 0's: its records say so, its offset undoes it.
  for (auto& op : in.ranks[3].ops) op.arrive_ns += 7'000'000'000, op.end_ns += 7'000'000'000;
  for (auto& m : in.ranks[3].msgs) m.post_ns += 7'000'000'000, m.done_ns += 7'000'000'000;
  CHECK(analyse_stragglers(in).verdict_kind != "none");
  in.clocks.assign(4, ClockOffset{});
  in.clocks[3].offset_ns = 7'000'000'000;
  CHECK(analyse_stragglers(in).verdict_kind == "none");
}

TEST_CASE("stragglers: --straggler-threshold syntax", "[stragglers]") {
  CHECK(parse_straggler_threshold("20%,50%").time_fraction == Approx(0.2));
  CHECK(parse_straggler_threshold("20%,50%").iteration_fraction == Approx(0.5));
  CHECK(parse_straggler_threshold("0.05").iteration_fraction == Approx(0.25));
  CHECK(to_string(parse_straggler_threshold("0.1,0.25")) == "10%,25%");
  CHECK_THROWS_AS(parse_straggler_threshold("5"), UsageError);
  CHECK_THROWS_AS(parse_straggler_threshold("10%,x"), UsageError);
}

TEST_CASE("op recorder: a ring all-reduce's messages and bytes over the loopback", "[stragglers]") {
  constexpr int n = 4;
  constexpr size_t floats = 4096;
  const OpenRank open = loopback_net().world(n, 1);
  std::mutex mu;
  std::vector<std::vector<uint8_t>> blobs(n);
  run_ranks(n, [&](Bootstrap& b) {
    StragglerRecording rec(2, 1024);
    auto t = rec.wrap(open(b));
    Progress p(*t, 5);
    std::vector<float> send(floats), recv(floats);
    auto smr = t->register_memory(send.data(), send.size() * 4, MemoryKind::host);
    auto rmr = t->register_memory(recv.data(), recv.size() * 4, MemoryKind::host);
    // One slice per step: 2(n-1) steps of a quarter of the buffer each.
    auto algo = make_ring_allreduce(p, RingOptions{floats * 4, floats * 4, 1, RingProtocol::send});
    for (uint32_t it = 0; it < 3; ++it) {
      fill_input(DataType::f32, ReduceOp::sum, b.rank(), 1, send.data(), send.size());
      rec.recorder().begin_op(make_op_key(it, 0, "allreduce"));
      algo->run(CollectiveBuffers{smr.get(), 0, rmr.get(), 0}, floats, DataType::f32, ReduceOp::sum);
      rec.recorder().end_op();
    }
    expect(count_wrong_allreduce(DataType::f32, ReduceOp::sum, n, 1, recv.data(), recv.size()) == 0, "wrong sums");
    const RankOps mine = rec.recorder().take();
    std::lock_guard lock(mu);
    blobs[b.rank()] = serialize(mine);
  });
  for (int r = 0; r < n; ++r) {
    const RankOps ro = deserialize_rank_ops(blobs[r]);
    // Capped at 2 ops: the last two are kept, the first counted as dropped.
    REQUIRE(ro.ops.size() == 2);
    CHECK(ro.dropped_ops == 1);
    CHECK(ro.ops[0].key.iteration == 1);
    CHECK(ro.ops[1].key.name() == "allreduce");
    for (const OpRecord& op : ro.ops) {
      CHECK(op.msgs == 2 * 2 * (n - 1));
      uint64_t sent = 0, received = 0;
      for (uint32_t m = op.first_msg; m < op.first_msg + op.msgs; ++m) {
        const MsgRecord& msg = ro.msgs[m];
        CHECK(msg.done_ns >= msg.post_ns);
        CHECK(msg.post_ns >= op.arrive_ns);
        CHECK(msg.peer == (msg.dir == MsgDir::send ? (r + 1) % n : (r + n - 1) % n));
        (msg.dir == MsgDir::send ? sent : received) += msg.bytes;
      }
      CHECK(sent == 2 * (n - 1) * floats * 4 / n);
      CHECK(received == sent);
    }
  }
}

TEST_CASE("op recorder: writes and write batches are recorded by the writer, bytes summed", "[stragglers]") {
  const OpenRank open = loopback_net().world(2, 2);
  std::mutex mu;
  std::vector<RankOps> got(2);
  run_ranks(2, [&](Bootstrap& b) {
    StragglerRecording rec(4, 64);
    auto t = rec.wrap(open(b));
    Progress p(*t, 5);
    std::vector<std::byte> buf(64 << 10);
    auto mr = t->register_memory(buf.data(), buf.size(), MemoryKind::host);
    const auto keys = b.all_gather_vectors(mr->remote_key().serialize());
    if (b.rank() == 0) {
      const RemoteKey peer = RemoteKey::deserialize(keys[1]);
      rec.recorder().begin_op(make_op_key(0, 0, "kv"));
      std::vector<WriteSpan> batch;
      for (size_t i = 0; i < 4; ++i)
        batch.push_back({LocalSpan{mr.get(), i * 4096, 4096}, RemoteSpan{&peer, i * 8192}});
      p.write(1, 0, LocalSpan{mr.get(), 0, 1000}, RemoteSpan{&peer, 0});
      p.write_batch(1, 1, batch);
      p.wait_all("the writes to rank 1");
      rec.recorder().end_op();
    }
    b.barrier();
    std::lock_guard lock(mu);
    got[static_cast<size_t>(b.rank())] = rec.recorder().take();
  });
  REQUIRE(got[0].ops.size() == 1);
  REQUIRE(got[0].msgs.size() == 2);
  CHECK(got[0].msgs[0].dir == MsgDir::write);
  CHECK(got[0].msgs[0].bytes == 1000);
  CHECK(got[0].msgs[0].rail == 0);
  CHECK(got[0].msgs[1].bytes == 4 * 4096);
  CHECK(got[0].msgs[1].rail == 1);
  for (const MsgRecord& m : got[0].msgs) CHECK(m.done_ns >= m.post_ns);
  CHECK(got[1].ops.empty());
}

TEST_CASE("clock offsets over ranks as threads: one clock, a small offset, its uncertainty", "[stragglers]") {
  constexpr int n = 3;
  const OpenRank open = loopback_net().world(n, 1);
  std::mutex mu;
  std::vector<std::vector<ClockOffset>> seen(n);
  run_ranks(n, [&](Bootstrap& b) {
    auto t = open(b);
    Progress p(*t, 5);
    auto offsets = estimate_clock_offsets(p, b, 8);
    std::lock_guard lock(mu);
    seen[b.rank()] = std::move(offsets);
  });
  for (int r = 0; r < n; ++r) REQUIRE(seen[r].size() == n);
  CHECK(seen[0][0].uncertainty_ns == 0);
  for (int r = 1; r < n; ++r) {
    const ClockOffset& c = seen[0][r];
    CHECK(c.uncertainty_ns > 0);
    CHECK(c.uncertainty_ns * 2 >= c.best_rtt_ns);
    // The threads share one clock: the offset is within the uncertainty of zero.
    CHECK(std::llabs(c.offset_ns) <= c.uncertainty_ns);
    CHECK(seen[2][r].offset_ns == c.offset_ns);  // every rank got rank 0's table
  }
}
