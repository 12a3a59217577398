// Outside trace formats (collectives/workload/formats): the same step written as a
// Chakra ET, PARAM comms JSON and PyTorch ET reads back as the same communication, and
// every refusal (a truncated stream, a send without its receive, a group's collectives
// that disagree, a dependency cycle) names the file, the node and the field.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <numeric>

#include <fmt/format.h>

#include "collectives/workload/formats/formats.h"
#include "collectives/workload/formats/proto_wire.h"
#include "collectives/workload/layout.h"
#include "collectives/workload/schedule.h"
#include "lib/core/errors.h"
#include "tests/support/temp_tree.h"

using namespace railbench;
using namespace railbench::workload;
using namespace railbench::workload::formats;
using nlohmann::json;
using railbench::testing::TempTree;

namespace {

Trace step(int tp, int pp, int dp) {
  TrainModel m;
  m.name = "tiny";
  m.layers = 2;
  m.hidden = 64;
  m.ffn = 128;
  m.heads = 4;
  StepSpec s;
  s.shape = ParallelShape{tp, pp, dp, 1, "tp-pp-dp"};
  s.seq = 32;
  s.micro_batches = 2;
  s.bucket_bytes = 16 << 10;
  s.compute_us = 100;
  return make_step_trace(m, s, map_ranks(s.shape, tp * pp * dp, 0));
}

// A rank's communication as the executor sees it: type, kind, group members, sizes, peers.
std::vector<std::string> comms(const Trace& t, int rank) {
  std::vector<std::string> out;
  for (const Op& op : t.ranks[static_cast<size_t>(rank)]) {
    if (op.type == OpType::compute || op.type == OpType::wait) continue;
    std::string members;
    if (op.group >= 0)
      for (int r : t.groups[static_cast<size_t>(op.group)].ranks) members += std::to_string(r) + ",";
    out.push_back(fmt::format("{} {} [{}] {} {} {} {} {}", to_string(op.type), to_string(op.kind), members, op.bytes,
                              op.recv_bytes, op.peer, op.from, op.async));
  }
  return out;
}

double compute_us(const Trace& t, int rank) {
  double us = 0;
  for (const Op& op : t.ranks[static_cast<size_t>(rank)]) us += op.us;
  return us;
}

std::string chakra_stream(const std::vector<std::string>& nodes) {
  std::string out, meta;
  wire::put_bytes_field(meta, 1, "0.0.4");
  wire::put_delimited(out, meta);
  for (const auto& n : nodes) wire::put_delimited(out, n);
  return out;
}

std::string chakra_node(uint64_t id, uint64_t type, std::vector<uint64_t> deps, uint64_t us = 5) {
  std::string m;
  wire::put_varint_field(m, 1, id);
  wire::put_varint_field(m, 3, type);
  for (uint64_t d : deps) wire::put_varint_field(m, 5, d);  // unpacked, as older writers do
  wire::put_varint_field(m, 7, us);
  return m;
}

}  // namespace

TEST_CASE("workload formats: one step as Chakra, PARAM and PyTorch ET reads back the same", "[workload][unit]") {
  const Trace t = step(2, 2, 2);
  TempTree dir("formats");
  for (TraceFormat f : {TraceFormat::chakra, TraceFormat::param, TraceFormat::pytorch}) {
    CAPTURE(to_string(f));
    const std::string pattern = (dir.root() / fmt::format("{}.{{rank}}.et", to_string(f))).string();
    CHECK(write_trace_files(t, pattern, f).size() == 8);
    const Trace back = load_trace_files(pattern, {});
    REQUIRE(back.world == t.world);
    CHECK(back.meta["source"] == to_string(f));
    for (int r = 0; r < t.world; ++r) {
      CAPTURE(r);
      CHECK(comms(back, r) == comms(t, r));
      // PARAM's basic format has no timed compute: it is skipped and counted.
      CHECK(compute_us(back, r) == (f == TraceFormat::param ? 0.0 : compute_us(t, r)));
    }
    if (f == TraceFormat::param) CHECK(back.meta["skipped"].empty());
  }
}

TEST_CASE("workload formats: gzip, --compute-scale, --no-compute and --fold", "[workload][unit]") {
  const Trace t = step(2, 1, 2);
  TempTree dir("formats-gz");
  const std::string pattern = (dir.root() / "s.{rank}.et.gz").string();
  write_trace_files(t, pattern, TraceFormat::chakra);
  CHECK(read_file_bytes(rank_file(pattern, 0)) == write_chakra(t, 0));
  ImportOptions o;
  o.compute_scale = 0.5;
  CHECK(compute_us(load_trace_files(pattern, o), 1) == compute_us(t, 1) / 2);
  o.no_compute = true;
  const Trace none = load_trace_files(pattern, o);
  CHECK(compute_us(none, 1) == 0);
  CHECK(comms(none, 1) == comms(t, 1));
  // Folded by 2: job rank j plays trace rank 2j; the TP groups (ranks 0,1 and 2,3) keep
  // one member and go, the DP group of ranks 0 and 2 becomes ranks 0 and 1.
  const Trace f = fold_trace(t, 2);
  check_trace(f);
  REQUIRE(f.world == 2);
  REQUIRE(f.groups.size() == 1);
  CHECK(f.groups[0].ranks == std::vector<int>{0, 1});
  CHECK(f.groups[0].kind == GroupKind::dp);
  CHECK(f.meta["fold"]["dropped_collectives"].get<int>() > 0);
  CHECK_THROWS_WITH(fold_trace(t, 3), "--fold 3: the trace's 4 ranks are not a multiple of 3: fold by a divisor of 4");
}

TEST_CASE("workload formats: the format is told by content", "[workload][unit]") {
  CHECK(detect_format(R"({"format": "railbench-workload-trace"})", "a") == TraceFormat::railbench);
  CHECK(detect_format(R"([{"comms": "init"}])", "b") == TraceFormat::param);
  CHECK(detect_format(R"({"schema": "1.1.0", "nodes": []})", "c") == TraceFormat::pytorch);
  CHECK(detect_format(chakra_stream({}), "d") == TraceFormat::chakra);
  CHECK_THROWS_WITH(detect_format(R"({"nodes": [)", "e.json"),
                    "e.json: starts as JSON but does not parse (cut short?)");
  CHECK_THROWS_WITH(detect_format(std::string(100, '[') + std::string(100, ']'), "deep.json"),
                    Catch::StartsWith("deep.json: nested more than 64 levels deep"));
  // A fifo would block the read forever: refused before it is opened.
  TempTree dir("formats-fifo");
  const std::string fifo = (dir.root() / "f.0.et").string();
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(read_file_bytes(fifo), fifo +
                                               ": not a regular file (a fifo or a device would never end): give a "
                                               "trace file");
}

TEST_CASE("workload formats: a Chakra trace in dependency order, async where nothing waits", "[workload][unit]") {
  // Node 3 is listed first but depends on 2; the collective 4 is needed only by node 6.
  std::string coll;
  wire::put_varint_field(coll, 1, 4);
  wire::put_varint_field(coll, 3, 7);
  wire::put_varint_field(coll, 5, 2);
  std::string a;
  wire::put_bytes_field(a, 1, "comm_type");
  wire::put_varint_field(a, 9, 0);
  wire::put_bytes_field(coll, 10, a);
  a.clear();
  wire::put_bytes_field(a, 1, "comm_size");
  wire::put_varint_field(a, 13, 4096);
  wire::put_bytes_field(coll, 10, a);
  a.clear();
  wire::put_bytes_field(a, 1, "a_newer_attribute");
  wire::put_varint_field(a, 9, 1);
  wire::put_bytes_field(coll, 10, a);
  const std::string bytes = chakra_stream({chakra_node(3, 4, {2}), chakra_node(2, 4, {}), coll, chakra_node(5, 4, {2}),
                                           chakra_node(6, 4, {4, 5}), chakra_node(7, 42, {})});
  const RankTrace r = read_chakra(bytes, "n.et");
  std::vector<std::string> order;
  for (const Item& it : r.items)
    order.push_back(it.kind == ItemKind::wait ? "wait" : fmt::format("{}{}", it.node, it.async ? "a" : ""));
  CHECK(order == std::vector<std::string>{"2", "3", "4a", "5", "wait", "6", "7"});
  CHECK(r.skipped.at("attribute 'a_newer_attribute' (not read)") == 1);
  CHECK(r.skipped.at("node type 42 (not replayed)") == 1);
  CHECK(r.items[2].pg == "world");
  REQUIRE(r.pgs.size() == 1);  // a collective without "pg_name": every rank
  CHECK(r.pgs[0].name == "world");
  CHECK(r.pgs[0].ranks.empty());
  CHECK(r.items[2].bytes == 4096);
}

TEST_CASE("workload formats: bad input is refused naming the file, the node and the field", "[workload][unit]") {
  // A stream cut inside its second message.
  std::string cut = chakra_stream({});
  wire::put_varint(cut, 10);
  cut += "abcd";
  CHECK_THROWS_WITH(read_chakra(cut, "t.et"),
                    "t.et: byte 9: 10 bytes are needed, 4 are left: the file is truncated or not a Chakra execution "
                    "trace (record it again, or check the copy is whole)");
  // A dependency cycle.
  CHECK_THROWS_WITH(
      read_chakra(chakra_stream({chakra_node(1, 4, {2}), chakra_node(2, 4, {1}), chakra_node(3, 4, {})}), "c.et"),
      "c.et: node 1: its \"data_deps\" form a cycle (1 -> 2 -> 1): a trace's dependencies "
      "must be acyclic; record the step again or drop one of the edges");
  // A cycle that a control edge closes, as older Chakra converters wrote a CPU op (ctrl_deps:
  // its GPU kernel) and its kernel (data_deps: the op): the control edge is dropped and
  // counted. And the CPU-side record of a collective, without comm_size: an empty step.
  {
    std::string op = chakra_node(1, 4, {}), kernel = chakra_node(2, 4, {1}), launch = chakra_node(3, 7, {2});
    wire::put_varint_field(op, 4, 2);  // ctrl_deps
    std::string cpu;
    wire::put_bytes_field(cpu, 1, "is_cpu_op");
    wire::put_varint_field(cpu, 27, 1);  // bool_val
    wire::put_bytes_field(launch, 10, cpu);
    const RankTrace r = read_chakra(chakra_stream({op, kernel, launch}), "old.et");
    REQUIRE(r.items.size() == 3);
    CHECK(r.items[0].node == 1);
    CHECK(r.items[1].node == 2);
    CHECK(r.items[2].bytes == 0);
    CHECK(r.skipped.at("ctrl_deps edges that closed a cycle with data_deps (dropped)") == 1);
    CHECK(r.skipped.at("COMM_COLL_NODE on the CPU (is_cpu_op) without comm_size: its GPU kernel's node is replayed") ==
          1);
  }
  // A collective without the attribute that says which.
  CHECK_THROWS_WITH(read_chakra(chakra_stream({chakra_node(1, 7, {})}), "k.et"),
                    "k.et: node 1: COMM_COLL_NODE without \"comm_size\": railbench needs it to replay the node");
  auto rec = [](const char* comms, int in, json more = json::object()) {
    json r = {{"comms", comms}, {"in_msg_size", in}, {"out_msg_size", in}, {"dtype", "float"}, {"pg_id", 2}};
    r.update(more);
    return r;
  };
  const json init = {{"comms", "init"}, {"pg_id", 2}, {"global_ranks", {0, 1, 2, 3}}};
  // A send without its receive on the peer.
  std::vector<RankTrace> ranks = {
      read_param(json::array({rec("send", 4, {{"src_rank", 0}, {"dst_rank", 1}})}), "r0.json", 0),
      read_param(json::array(), "r1.json", 1)};
  CHECK_THROWS_WITH(to_trace(ranks, {}),
                    "r0.json: node 0: rank 0's 1st send to rank 1 (16 bytes) has no receive on rank 1 (r1.json "
                    "receives 0 from rank 0): every send needs its receive on the peer");
  // Rank 3's fifth collective on pg 2 is not the others'.
  ranks.clear();
  for (int r = 0; r < 4; ++r) {
    json recs = json::array({init});
    for (int i = 0; i < 5; ++i) recs.push_back(rec(r == 3 && i == 4 ? "all_gather" : "all_reduce", 16));
    ranks.push_back(read_param(recs, fmt::format("r{}.json", r), r));
  }
  CHECK_THROWS_WITH(to_trace(ranks, {}),
                    "r3.json: node 5: rank 3's 5th collective on pg 2 is an all_gather of 64 bytes, rank 0's (r0.json "
                    "node 5) an all_reduce of 64 bytes: every member of a process group must issue the same "
                    "collectives in the same order (\"in_msg_size\")");
  // Two files disagree on a process group; a rank issues on a group it is not in.
  const json other = {{"comms", "init"}, {"pg_id", 2}, {"global_ranks", {0, 1}}};
  ranks = {read_param(json::array({init}), "a.json", 0), read_param(json::array({other}), "b.json", 1),
           read_param(json::array(), "c.json", 2), read_param(json::array(), "d.json", 3)};
  CHECK_THROWS_WITH(to_trace(ranks, {}),
                    "b.json: process group '2' has ranks [0,1] but a.json says [0,1,2,3]: the files come from "
                    "different jobs; record every rank of one step");
  const json pair = {{"comms", "init"}, {"pg_id", 2}, {"global_ranks", {0, 1}}};
  ranks = {read_param(json::array({pair}), "a.json", 0), read_param(json::array({pair}), "b.json", 1),
           read_param(json::array({pair, rec("all_reduce", 4)}), "c.json", 2)};
  CHECK_THROWS_WITH(to_trace(ranks, {}),
                    "c.json: node 1: \"pg_id\" '2' is a process group of ranks [0,1], which rank 2 is not one of: "
                    "the file is not rank 2's, or the groups are from another job");
  // A field of the wrong JSON type.
  TempTree dir("formats-bad");
  dir.write("w.0.json", R"([{"comms": "all_reduce", "pg_id": "two", "in_msg_size": 4, "out_msg_size": 4}])");
  CHECK_THROWS_WITH(
      load_trace_files((dir.root() / "w.{rank}.json").string(), {}),
      Catch::StartsWith((dir.root() / "w.0.json").string() + ": a field of the wrong type for a param trace ("));
  // A size in a type railbench does not know.
  CHECK_THROWS_WITH(read_param(json::array({rec("all_reduce", 4, {{"dtype", "complex"}})}), "d.json", 0),
                    "d.json: record 0: \"dtype\" 'complex' is none railbench knows: use float, half, bfloat16, "
                    "double, int, long, byte, char or bool");
}

TEST_CASE("workload formats: PyTorch ET and PARAM records as PyTorch and PARAM write them", "[workload][unit]") {
  // A coalesced all-gather (a list of tensors), a barrier (no tensor: its inputs start one
  // later), an all-to-all-v with splits, a send to the group's second member.
  auto node = [](uint64_t id, json values, json types, json outputs = json::array(), json out_types = json::array()) {
    return json{{"id", id},
                {"name", "record_param_comms"},
                {"inputs", {{"values", values}, {"types", types}}},
                {"outputs", {{"values", outputs}, {"types", out_types}}}};
  };
  const json pg = json::array({"1", "dp"});
  const json tensor = json::array({7, 7, 0, 16, 4, "cuda:0"});
  const json et = {
      {"schema", "1.0.3-chakra.0.0.4"},
      {"nodes",
       json::array(
           {json{{"id", 2},
                 {"name", "## process_group:init ##"},
                 {"inputs", {{"values", json::array({R"([{"pg_name": "1", "pg_desc": "dp", "ranks": [1, 3]}])"})}}}},
            node(3, json::array({json::array({tensor, tensor}), 5, pg, 0, "all_gather_into_tensor_coalesced", {}, {}}),
                 json::array({"GenericList[Tensor(float),Tensor(float)]", "Int"}), json::array({tensor}),
                 json::array({"Tensor(float)"})),
            node(4, json::array({6, pg, 0, "barrier", {}, {}, 0, 1, 2}), json::array({"Int", "Tuple[String,String]"})),
            node(5, json::array({tensor, 7, pg, 0, "all_to_allv", json::array({4, 12}), json::array({4, 12})}),
                 json::array({"Tensor(float)"}), json::array({tensor}), json::array({"Tensor(float)"})),
            node(6, json::array({tensor, 8, pg, 1, "send", {}, {}}), json::array({"Tensor(float)"}))})}};
  const RankTrace r = read_pytorch(et, "et.json", 1);
  REQUIRE(r.items.size() == 3);
  CHECK(r.items[0].op == OpType::all_gather);
  CHECK(r.items[0].bytes == 64);  // the output: 16 floats
  CHECK(r.items[1].split_bytes == std::vector<uint64_t>{16, 48});
  CHECK(r.items[2].kind == ItemKind::send);
  CHECK(r.items[2].peer == 3);  // the group's member 1 is rank 3
  CHECK(r.skipped.at("'barrier' (no such algorithm in the executor)") == 1);
  CHECK(r.dtype == "f32");
  // PyTorch 2.1-2.2: the record names its group by the backend's object id, which the
  // process-group config gives as "backend_id" beside "pg_name".
  const json old_et = {
      {"schema", "1.0.2-chakra.0.0.4"},
      {"nodes", json::array({json{{"id", 3},
                                  {"name", "## process_group:init ##"},
                                  {"inputs",
                                   {{"values", json::array({R"([{"pg_name": "0", "backend_id": 82149104, )"
                                                            R"("ranks": [], "group_size": 2}])"})}}}},
                             node(30, json::array({json::array({tensor}), 12, 82149104, 0, "all_gather", {}, {}, 2}),
                                  json::array({"GenericList[Tensor(float)]", "Int", "Int"}), json::array({tensor}),
                                  json::array({"Tensor(float)"}))})}};
  const RankTrace o = read_pytorch(old_et, "old.json", 0);
  REQUIRE(o.items.size() == 1);
  CHECK(o.items[0].pg == "0");
  CHECK(o.items[0].op == OpType::all_gather);
  // PARAM: a record without "dst_rank" for its send is refused naming the field.
  CHECK_THROWS_WITH(
      read_param(json::array({{{"comms", "send"}, {"in_msg_size", 4}, {"out_msg_size", 4}, {"dtype", "half"}}}),
                 "p.json", 0),
      "p.json: record 0: \"dst_rank\" is missing: a send or receive needs its peer's global rank");
}
