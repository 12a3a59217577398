// railbench workload's pure parts and its executor over the in-memory loopback: the rank
// map for several shapes, the 1F1B schedule's order, the trace checker's refusals
// (deadlock, membership, sizes), the JSON round trip, and every op of a step with -c.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "collectives/workload/executor.h"
#include "collectives/workload/layout.h"
#include "collectives/workload/schedule.h"
#include "collectives/workload/trace.h"
#include "lib/core/errors.h"
#include "tests/support/loopback_transport.h"

using namespace railbench;
using namespace railbench::workload;
using namespace railbench::testing;

namespace {

TrainModel tiny(bool moe) {
  TrainModel m;
  m.name = moe ? "tiny-moe" : "tiny";
  m.layers = 4;
  m.hidden = 64;
  m.ffn = 128;
  m.heads = 4;
  if (moe) {
    m.experts = 8;
    m.topk = 2;
    m.moe_ffn = 32;
    m.dense_layers = 1;
  }
  return m;
}

StepSpec spec(int tp, int pp, int dp, int ep = 1) {
  StepSpec s;
  s.shape = ParallelShape{tp, pp, dp, ep, "tp-pp-dp"};
  s.seq = 32;
  s.micro_batches = 3;
  s.bucket_bytes = 16 << 10;
  return s;
}

std::vector<std::string> labels(const Trace& t, int rank, OpType type) {
  std::vector<std::string> out;
  for (const auto& op : t.ranks[static_cast<size_t>(rank)])
    if (op.type == type) out.push_back(op.label);
  return out;
}

}  // namespace

TEST_CASE("workload: rank map places TP innermost, DP outermost, EP inside DP", "[workload][unit]") {
  const RankMap m = map_ranks(ParallelShape{2, 2, 4, 2, "tp-pp-dp"}, 16, 8);
  REQUIRE(m.world() == 16);
  // Rank = tp + 2 (pp + 2 dp).
  CHECK(m.rank_of({1, 1, 3}) == 1 + 2 * (1 + 2 * 3));
  const auto& tp = m.groups[static_cast<size_t>(m.group_of(GroupKind::tp, 5))];
  CHECK(tp.ranks == std::vector<int>{4, 5});
  const auto& dp = m.groups[static_cast<size_t>(m.group_of(GroupKind::dp, 5))];
  CHECK(dp.ranks == std::vector<int>{1, 5, 9, 13});
  const auto& ep = m.groups[static_cast<size_t>(m.group_of(GroupKind::ep, 9))];
  CHECK(ep.ranks == std::vector<int>{9, 13});
  const auto& edp = m.groups[static_cast<size_t>(m.group_of(GroupKind::edp, 9))];
  CHECK(edp.ranks == std::vector<int>{1, 9});
  // Every rank is in exactly one group of each kind.
  for (GroupKind k : {GroupKind::tp, GroupKind::pp, GroupKind::dp, GroupKind::ep, GroupKind::edp}) {
    std::multiset<int> seen;
    for (const auto& g : m.groups)
      if (g.kind == k) seen.insert(g.ranks.begin(), g.ranks.end());
    for (int r = 0; r < 16; ++r) CHECK(seen.count(r) == 1);
  }
  // Another order: DP innermost.
  const RankMap d = map_ranks(ParallelShape{2, 1, 2, 1, "dp-tp-pp"}, 4, 0);
  CHECK(d.groups[static_cast<size_t>(d.group_of(GroupKind::dp, 0))].ranks == std::vector<int>{0, 1});
  CHECK(d.groups[static_cast<size_t>(d.group_of(GroupKind::tp, 0))].ranks == std::vector<int>{0, 2});
}

TEST_CASE("workload: bad shapes are refused naming the field", "[workload][unit]") {
  CHECK_THROWS_WITH(map_ranks(ParallelShape{2, 2, 2, 1, "tp-pp-dp"}, 16, 8), Catch::Contains("world size"));
  CHECK_THROWS_WITH(map_ranks(ParallelShape{3, 1, 2, 1, "tp-pp-dp"}, 6, 4), Catch::Contains("does not divide the 4"));
  CHECK_THROWS_WITH(map_ranks(ParallelShape{8, 1, 1, 1, "tp-pp-dp"}, 8, 4), Catch::Contains("inside a node"));
  CHECK_THROWS_WITH(map_ranks(ParallelShape{1, 1, 6, 4, "tp-pp-dp"}, 6, 0), Catch::Contains("--ep 4 does not divide"));
  CHECK_THROWS_WITH(map_ranks(ParallelShape{1, 1, 2, 1, "tp-dp"}, 2, 0), Catch::Contains("--order"));
  const RankMap m = map_ranks(ParallelShape{1, 2, 1, 1, "tp-pp-dp"}, 2, 0);
  StepSpec s = spec(1, 2, 1);
  s.layers = 3;
  CHECK_THROWS_WITH(make_step_trace(tiny(false), s, m), Catch::Contains("--pp"));
  const RankMap e = map_ranks(ParallelShape{1, 1, 2, 2, "tp-pp-dp"}, 2, 0);
  CHECK_THROWS_WITH(make_step_trace(tiny(false), spec(1, 1, 2, 2), e), Catch::Contains("dense model"));
  StepSpec many = spec(1, 1, 2, 2);
  many.routing.experts = 3;
  CHECK_THROWS_WITH(make_step_trace(tiny(true), many, e), Catch::Contains("experts"));
  StepSpec short_seq = spec(1, 1, 2, 2);
  short_seq.seq = 2;  // 2 tokens x 2 EP ranks for 8 experts
  CHECK_THROWS_WITH(make_step_trace(tiny(true), short_seq, e), Catch::Contains("only 4 tokens"));
}

TEST_CASE("workload: 1F1B order on every stage, buckets in the last backward", "[workload][unit]") {
  const RankMap m = map_ranks(ParallelShape{1, 3, 2, 1, "tp-pp-dp"}, 6, 0);
  StepSpec s = spec(1, 3, 2);
  s.layers = 3;
  const Trace t = make_step_trace(tiny(false), s, m);
  check_trace(t);
  // Stage 0 (rank 0): two warm-up forwards, then one-forward-one-backward, then cool-down.
  CHECK(labels(t, 0, OpType::send) == std::vector<std::string>{"F0 send", "F1 send"});
  CHECK(labels(t, 0, OpType::sendrecv) == std::vector<std::string>{"F2>B0"});
  CHECK(labels(t, 0, OpType::recv) == std::vector<std::string>{"B1 recv", "B2 recv"});
  // The last stage (rank 2) never sends forward.
  CHECK(labels(t, 2, OpType::recv) == std::vector<std::string>{"F0 recv"});
  CHECK(labels(t, 2, OpType::sendrecv) == std::vector<std::string>{"B0>F1", "B1>F2"});
  CHECK(labels(t, 2, OpType::send) == std::vector<std::string>{"B2 send"});
  // DP buckets are async all-reduces after the last micro-batch's backward began, then one wait.
  const auto& ops = t.ranks[0];
  const auto first_bucket = std::find_if(ops.begin(), ops.end(), [](const Op& o) { return o.kind == GroupKind::dp; });
  REQUIRE(first_bucket != ops.end());
  CHECK(first_bucket->async);
  CHECK(first_bucket->type == OpType::all_reduce);
  const auto last_b = std::find_if(ops.begin(), ops.end(), [](const Op& o) { return o.label.rfind("B2", 0) == 0; });
  CHECK(last_b < first_bucket);
  CHECK(ops.back().type == OpType::wait);
  // ZeRO-1: reduce-scatter buckets and the parameters all-gathered after the wait.
  StepSpec z = s;
  z.zero = 1;
  const Trace tz = make_step_trace(tiny(false), z, m);
  CHECK(tz.ranks[0].back().type == OpType::all_gather);
  check_trace(tz);
}

TEST_CASE("workload: the checker refuses traces that would hang or do not add up", "[workload][unit]") {
  Trace t;
  t.world = 3;
  t.groups.push_back(GroupDef{"g", GroupKind::dp, {0, 1}});
  auto send = [](int peer, uint64_t bytes) {
    Op o{OpType::send};
    o.peer = peer;
    o.bytes = bytes;
    return o;
  };
  auto recv = [](int from, uint64_t bytes) {
    Op o{OpType::recv};
    o.from = from;
    o.recv_bytes = bytes;
    return o;
  };
  auto ar = [](uint64_t bytes) {
    Op o{OpType::all_reduce};
    o.group = 0;
    o.bytes = bytes;
    return o;
  };
  t.ranks = {{send(1, 8)}, {}, {}};  // a send nobody receives
  CHECK_THROWS_WITH(check_trace(t), Catch::Contains("deadlocks") && Catch::Contains("rank 0 op 0"));
  t.ranks = {{send(1, 8)}, {recv(0, 16)}, {}};
  CHECK_THROWS_WITH(check_trace(t), Catch::Contains("8 bytes but received with 16"));
  t.ranks = {{ar(64)}, {ar(64)}, {ar(64)}};  // rank 2 is not in g
  CHECK_THROWS_WITH(check_trace(t), Catch::Contains("not a member"));
  t.ranks = {{ar(64), send(1, 8)}, {recv(0, 8), ar(64)}, {}};  // each waits for the other
  CHECK_THROWS_WITH(check_trace(t), Catch::Contains("deadlocks"));
  t.ranks = {{ar(64)}, {ar(32)}, {}};
  CHECK_THROWS_WITH(check_trace(t), Catch::Contains("differ in type or bytes"));
  t.ranks = {{ar(64), send(1, 8)}, {ar(64), recv(0, 8)}, {}};
  CHECK_NOTHROW(check_trace(t));
  // Ranks beyond the world in a trace file.
  nlohmann::json j = to_json(t);
  j["groups"][0]["ranks"] = {0, 5};
  CHECK_THROWS_WITH(trace_from_json(j, "t.json"), Catch::Contains("outside the trace's world of 3"));
}

TEST_CASE("workload: a trace survives its JSON round trip", "[workload][unit]") {
  const RankMap m = map_ranks(ParallelShape{2, 2, 2, 2, "tp-pp-dp"}, 8, 0);
  const Trace t = make_step_trace(tiny(true), spec(2, 2, 2, 2), m);
  const Trace back = trace_from_json(to_json(t), "round trip");
  REQUIRE(back.ranks.size() == t.ranks.size());
  for (size_t r = 0; r < t.ranks.size(); ++r) {
    REQUIRE(back.ranks[r].size() == t.ranks[r].size());
    for (size_t i = 0; i < t.ranks[r].size(); ++i) {
      CHECK(back.ranks[r][i].type == t.ranks[r][i].type);
      CHECK(back.ranks[r][i].bytes == t.ranks[r][i].bytes);
      CHECK(back.ranks[r][i].tokens == t.ranks[r][i].tokens);
      CHECK(back.ranks[r][i].label == t.ranks[r][i].label);
    }
  }
  CHECK(to_json(back) == to_json(t));
}

TEST_CASE("workload: every op of a step delivers the right data over the loopback", "[workload][loopback]") {
  struct Shape {
    int tp, pp, dp, ep, zero;
    bool moe;
  };
  // Ring slices: one per rail (0), and slices of 256 B and 1000 B (cut to cache lines):
  // several per block, uneven last ones, steps overlapping slice by slice.
  for (const Shape& sh : std::vector<Shape>{{2, 2, 2, 1, 0, false}, {1, 2, 4, 2, 1, true}, {2, 1, 2, 2, 3, true}})
    for (const uint64_t slice : {uint64_t{0}, uint64_t{256}, uint64_t{1000}}) {
      DYNAMIC_SECTION("tp " << sh.tp << " pp " << sh.pp << " dp " << sh.dp << " ep " << sh.ep << " zero " << sh.zero
                            << " slice " << slice) {
        const int n = sh.tp * sh.pp * sh.dp;
        const RankMap m = map_ranks(ParallelShape{sh.tp, sh.pp, sh.dp, sh.ep, "tp-pp-dp"}, n, 0);
        StepSpec s = spec(sh.tp, sh.pp, sh.dp, sh.ep);
        s.zero = sh.zero;
        s.routing.distribution = "zipf:1.2";
        const Trace t = make_step_trace(tiny(sh.moe), s, m);
        std::vector<uint64_t> wrong(static_cast<size_t>(n), 1);
        std::vector<double> ep_bytes(static_cast<size_t>(n), 0);
        run_ranks_on(loopback_net(), n, 2, [&](Bootstrap& b, Transport& tr) {
          Progress p(tr, 20);
          ExecOptions o;
          o.rails = 2;
          o.check = true;
          o.chunk_bytes = 8 << 10;  // small: ops run in several chunks
          o.slice_bytes = slice;
          Executor ex(p, t, b.rank(), o);
          for (int it = 0; it < 2; ++it) {
            const StepTimes st = ex.run_step(it, {});
            ep_bytes[static_cast<size_t>(b.rank())] += st.kind_bytes[static_cast<size_t>(GroupKind::ep)];
          }
          wrong[static_cast<size_t>(b.rank())] = ex.wrong();
        });
        for (int r = 0; r < n; ++r) {
          CHECK(wrong[static_cast<size_t>(r)] == 0);
          if (sh.ep > 1) CHECK(ep_bytes[static_cast<size_t>(r)] > 0);
        }
      }
    }
}

// A trace file's all-to-all-v carries explicit per-member byte counts (uneven, some zero,
// some larger than a chunk); each rank learns what it receives from its peers' ops.
TEST_CASE("workload: explicit all-to-all-v splits deliver the right data in chunks", "[workload][loopback]") {
  constexpr int n = 3;
  Trace t;
  t.world = n;
  t.groups.push_back(GroupDef{"ep0", GroupKind::ep, {0, 1, 2}});
  auto a2av = [](int r, int round) {
    Op o{OpType::all_to_all_v};
    o.group = 0;
    o.kind = GroupKind::ep;
    for (int j = 0; j < n; ++j)  // bf16: even byte counts; rank 1 sends rank 2 nothing
      o.split_bytes.push_back(r == 1 && j == 2 ? 0 : static_cast<uint64_t>((r + 1) * (j + 2) * 1000 * round + 2));
    return o;
  };
  std::vector<uint64_t> sent_expected(n, 0);
  for (int r = 0; r < n; ++r) {
    Op ar{OpType::all_reduce};
    ar.group = 0;
    ar.bytes = 4096;
    t.ranks.push_back({a2av(r, 1), ar, a2av(r, 7)});
    for (const Op& o : {t.ranks.back()[0], t.ranks.back()[2]})
      for (int j = 0; j < n; ++j)
        if (j != r) sent_expected[static_cast<size_t>(r)] += o.split_bytes[static_cast<size_t>(j)];
  }
  REQUIRE_NOTHROW(check_trace(t));
  std::vector<uint64_t> wrong(n, 1);
  std::vector<double> ep_bytes(n, 0);
  run_ranks_on(loopback_net(), n, 2, [&](Bootstrap& b, Transport& tr) {
    Progress p(tr, 20);
    ExecOptions o;
    o.rails = 2;
    o.check = true;
    o.chunk_bytes = 8 << 10;  // the larger splits (up to 42 KB) go in several rounds
    Executor ex(p, t, b.rank(), o);
    const StepTimes st = ex.run_step(0, {});
    ep_bytes[static_cast<size_t>(b.rank())] = st.kind_bytes[static_cast<size_t>(GroupKind::ep)];
    wrong[static_cast<size_t>(b.rank())] = ex.wrong();
  });
  for (int r = 0; r < n; ++r) {
    CHECK(wrong[static_cast<size_t>(r)] == 0);
    CHECK(ep_bytes[static_cast<size_t>(r)] == static_cast<double>(sent_expected[static_cast<size_t>(r)]));
  }
}

// A rank of a large job builds its own ops alone: the same ops as in the whole step.
TEST_CASE("workload: one rank's schedule built alone is its part of the whole step", "[workload][unit]") {
  const RankMap m = map_ranks(ParallelShape{2, 2, 2, 2, "tp-pp-dp"}, 8, 0);
  const Trace whole = make_step_trace(tiny(true), spec(2, 2, 2, 2), m);
  for (int r : {0, 5, 7}) {
    const Trace one = make_step_trace(tiny(true), spec(2, 2, 2, 2), m, r);
    REQUIRE(one.ranks.size() == 8);
    for (int o = 0; o < 8; ++o) CHECK(one.ranks[static_cast<size_t>(o)].empty() == (o != r));
    CHECK(to_json(one)["ranks"][r] == to_json(whole)["ranks"][r]);
  }
}
