// `railbench compare --job` on records and figures made up for the purpose: how the
// Inspector's lines become calls and groups, which railbench figure each group is held
// against (measured, interpolated, refused), the share and the time lost.
#include <catch2/catch.hpp>

#include "bench/offline/compare/inspector.h"
#include "bench/offline/compare/job.h"
#include "lib/core/errors.h"

using namespace railbench;
using namespace railbench::compare;
using nlohmann::json;

namespace {

InspectorRecord rec(const std::string& coll, uint64_t sn, uint64_t msg, double us, int rank, int n = 4,
                    const std::string& host = "node01") {
  InspectorRecord r;
  r.file = "made-up.log";
  r.comm = "0xc0";
  r.coll = coll;
  r.sn = sn;
  r.msg_bytes = msg;
  r.exec_us = us;
  r.rank = rank;
  r.nranks = n;
  r.host = host;
  return r;
}

FabricCurve curve(const std::string& coll, int n, std::vector<std::pair<uint64_t, double>> points) {
  return FabricCurve{coll, n, "r.json", std::move(points), {"node01"}};
}

std::string inspector_line(const std::string& perf) {
  return R"({"header":{"id":"0xab","rank":1,"n_ranks":4,"nnodes":1},"metadata":{"hostname":"node07","pid":9,)"
         R"("future_field":[1,2]},"coll_perf":)" +
         perf + "}";
}

}  // namespace

TEST_CASE("compare --job: an Inspector line's fields, unknown ones ignored", "[compare]") {
  const auto r = parse_inspector_line(
      inspector_line(R"({"coll":"AllGather","coll_sn":7,"coll_msg_size_bytes":1024,"coll_exec_time_us":12,)"
                     R"("coll_busbw_gbs":"nan","new_thing":{}})"),
      "f.log", 3);
  CHECK(r.comm == "0xab");
  CHECK(r.rank == 1);
  CHECK(r.nranks == 4);
  CHECK(r.host == "node07");
  CHECK(r.coll == "AllGather");
  CHECK(r.sn == 7);
  CHECK(r.msg_bytes == 1024);
  CHECK(r.exec_us == 12);
  CHECK_FALSE(r.file_busbw);  // the Inspector's "nan" is no figure
  CHECK(r.timing_source.empty());
}

TEST_CASE("compare --job: a malformed Inspector line is refused with its file, line and fix", "[compare]") {
  CHECK_THROWS_WITH(parse_inspector_line(R"({"header":{"id":"0xab","ra)", "job/a.log", 12),
                    Catch::Contains("job/a.log:12: not JSON") && Catch::Contains("delete that line"));
  CHECK_THROWS_WITH(parse_inspector_line(inspector_line(R"({"coll":"AllReduce","coll_sn":1})"), "a.log", 2),
                    Catch::Contains("a.log:2: no coll_perf.coll_msg_size_bytes"));
  CHECK_THROWS_WITH(parse_inspector_line(inspector_line(R"({"coll":"AllReduce","coll_sn":1,)"
                                                        R"("coll_msg_size_bytes":"8","coll_exec_time_us":1})"),
                                         "a.log", 2),
                    Catch::Contains("coll_perf.coll_msg_size_bytes is \"8\", not a whole number"));
  CHECK_THROWS_WITH(parse_inspector_line("nccl_bus_bandwidth_gbs{comm_id=\"0x1\"} 12.5", "p.prom", 1),
                    Catch::Contains("NCCL_INSPECTOR_PROM_DUMP=0"));
}

TEST_CASE("compare --job: a call is one communicator's coll_sn, as slow as its slowest rank", "[compare]") {
  const auto groups = group_calls({rec("AllReduce", 1, 1 << 20, 100, 0), rec("AllReduce", 1, 1 << 20, 140, 1),
                                   rec("AllReduce", 2, 1 << 20, 90, 0), rec("AllReduce", 3, 1 << 20, 0, 2),
                                   rec("AllGather", 4, 1 << 18, 50, 3, 4, "node02")});
  REQUIRE(groups.size() == 2);
  const JobGroup& ag = groups[0];  // allgather sorts first
  CHECK(ag.collective == "allgather");
  CHECK(ag.bytes == (1u << 20));  // per-rank message x 4 ranks: nccl-tests' S
  const JobGroup& ar = groups[1];
  CHECK(ar.collective == "allreduce");
  REQUIRE(ar.time_us.size() == 2);
  CHECK(ar.time_us[0] == 140);
  CHECK(ar.time_us[1] == 90);
  CHECK(ar.untimed == 1);
  CHECK(ar.total_us() == 230);
  // A communicator's hosts are all its records', whichever group they are in.
  CHECK(ar.hosts == std::set<std::string>{"node01", "node02"});
}

TEST_CASE("compare --job: the Inspector's busbw and timing source are checked", "[compare]") {
  auto ok = rec("AllReduce", 1, 1000000, 100, 0);
  ok.file_busbw = 1e6 * 1.5 / 1e5;  // S x 2(n-1)/n / t, n = 4
  ok.timing_source = "kernel_gpu";
  auto off = rec("AllReduce", 2, 1000000, 100, 0);
  off.file_busbw = 10.0;  // algbw, not busbw
  off.timing_source = "collective_cpu";
  const auto g = group_calls({ok, off});
  CHECK(g[0].busbw_mismatches == 1);
  CHECK(g[0].host_timed == 1);
}

TEST_CASE("compare --job: railbench's figure at a size, measured or interpolated in log(size)", "[compare]") {
  const auto c = curve("allreduce", 4, {{1 << 16, 1.0}, {1 << 18, 3.0}, {1 << 20, 4.0}});
  const auto exact = fabric_at(c, 1 << 18);
  REQUIRE(exact);
  CHECK(exact->exact);
  CHECK(exact->busbw == 3.0);
  // 128K is half way from 64K to 256K in log(size): half way from 1 to 3.
  const auto mid = fabric_at(c, 1 << 17);
  REQUIRE(mid);
  CHECK_FALSE(mid->exact);
  CHECK(mid->below == (1u << 16));
  CHECK(mid->above == (1u << 18));
  CHECK(mid->busbw == Approx(2.0));
  CHECK_FALSE(fabric_at(c, 1 << 10));
  CHECK_FALSE(fabric_at(c, 1 << 21));
}

TEST_CASE("compare --job: share and time lost, the largest loss ranked first", "[compare]") {
  std::vector<InspectorRecord> rs;
  // 1M all-reduce on 4 ranks moves S x 1.5 bytes: at 3 GB/s that is 524.288 us a call.
  for (uint64_t sn = 1; sn <= 3; ++sn) rs.push_back(rec("AllReduce", sn, 1 << 20, 524.288 * 2, 0));     // 50%
  for (uint64_t sn = 4; sn <= 13; ++sn) rs.push_back(rec("AllReduce", sn, 1 << 18, 131.072 / 0.9, 0));  // 90%
  rs.push_back(rec("Broadcast", 20, 1 << 20, 100, 0));
  const auto c = compare_job(group_calls(rs), {curve("allreduce", 4, {{1 << 18, 3.0}, {1 << 20, 3.0}})});
  REQUIRE(c.rows.size() == 3);
  CHECK(c.compared() == 2);
  const JobRow& big = c.rows[1];  // allreduce rows by size: 256K then 1M
  REQUIRE(big.group.bytes == (1u << 20));
  CHECK(big.share == Approx(0.5));
  CHECK(big.fabric_time_us == Approx(524.288));
  CHECK(big.lost_us == Approx(3 * 524.288));
  CHECK(big.nodes == "same");
  CHECK(c.rows[0].share == Approx(0.9));
  REQUIRE(c.shortfalls.size() == 2);
  CHECK(c.shortfalls[0] == 1);  // 1.57 ms lost beats 0.15 ms
  CHECK(c.rows[2].group.collective == "broadcast");
  CHECK_FALSE(c.rows[2].fabric);
  CHECK_THAT(c.rows[2].why, Catch::Contains("no Broadcast benchmark"));
}

TEST_CASE("compare --job: no figure at the job's rank count, collective or size says what to run", "[compare]") {
  const auto groups = group_calls({rec("AllReduce", 1, 1 << 20, 100, 0, 8), rec("AllGather", 2, 1 << 10, 10, 0),
                                   rec("AllReduce", 3, 1 << 30, 1e5, 0)});
  const auto c = compare_job(groups, {curve("allreduce", 4, {{1 << 18, 3.0}, {1 << 20, 3.0}})});
  REQUIRE(c.rows.size() == 3);
  CHECK(c.compared() == 0);
  CHECK_THAT(c.rows[0].why, Catch::Contains("no allgather figure") && Catch::Contains("railbench allgather"));
  CHECK_THAT(c.rows[1].why, Catch::Contains("1G lies outside railbench's sweep") && Catch::Contains("-b/-e"));
  CHECK_THAT(c.rows[2].why, Catch::Contains("allreduce at 4 rank(s), not at 8") && Catch::Contains("-np 8"));
}

TEST_CASE("compare --job: other nodes' figure is used, and said", "[compare]") {
  const auto c = compare_job(group_calls({rec("AllReduce", 1, 1 << 20, 100, 0, 4, "gpu17")}),
                             {curve("allreduce", 4, {{1 << 20, 3.0}})});
  REQUIRE(c.compared() == 1);
  CHECK(c.rows[0].nodes == "different");
  bool warned = false;
  for (const auto& line : job_table_lines(c))
    warned = warned || line.find("# warning: allreduce at 4 ranks ran on gpu17") == 0;
  CHECK(warned);
}

TEST_CASE("compare --job: a sweep results file gives its out-of-place busbw per size", "[compare]") {
  const json doc = json::parse(R"({"command":"allgather","world":{"size":4,"ranks":[{"rank":0,"host":"a"}]},
    "results":[{"bytes":4096,"out_of_place":{"busbw_gbps":1.5},"in_place":{"busbw_gbps":9}},
               {"bytes":1024,"out_of_place":{"busbw_gbps":0},"in_place":{"busbw_gbps":0.5}}]})");
  const auto cs = fabric_curves(doc, "ag.json");
  REQUIRE(cs.size() == 1);
  CHECK(cs[0].collective == "allgather");
  CHECK(cs[0].nranks == 4);
  CHECK(cs[0].hosts == std::set<std::string>{"a"});
  REQUIRE(cs[0].points.size() == 2);
  CHECK(cs[0].points[0] == std::pair<uint64_t, double>{1024, 0.5});  // no out-of-place figure there
  CHECK(cs[0].points[1] == std::pair<uint64_t, double>{4096, 1.5});
  const json v = json::parse(R"({"command":"validate","world":{"size":8},"collectives":[
    {"collective":"allreduce","bytes":1048576,"busbw_gbs":0.02,"ranks":8},
    {"collective":"alltoall","bytes":1048576,"busbw_gbs":0.015,"ranks":8}]})");
  CHECK(fabric_curves(v, "v.json").size() == 2);
}
