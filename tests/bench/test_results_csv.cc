// --csv: the CSV writer (lib/core/csv.h), the rows of each command's results (bench/
// results_csv.h), and the file written beside the JSON at every rewrite.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench/runner/records.h"
#include "bench/runner/results_csv.h"
#include "lib/core/csv.h"
#include "lib/core/errors.h"
#include "lib/results/results.h"

using namespace railbench;
using nlohmann::json;

namespace {

Summary summary(double base) {
  Summary s;
  s.count = 10;
  s.min = base;
  s.p50 = base * 1.5;
  s.p90 = base * 2;
  s.p99 = base * 3;
  s.p999 = base * 4;
  s.max = base * 5;
  s.mean = base * 1.7;
  s.stdev = base / 7;  // a long fraction: the CSV must write it as the JSON does
  return s;
}

json world(int ranks) {
  json r = json::array();
  for (int i = 0; i < ranks; ++i) r.push_back(json{{"rank", i}, {"host", "node" + std::to_string(i / 2)}});
  return json{{"size", ranks}, {"ranks", r}};
}

size_t column(const CsvTable& t, const std::string& name) {
  for (size_t i = 0; i < t.header.size(); ++i)
    if (t.header[i] == name) return i;
  FAIL("no column " << name);
  return 0;
}

std::string cell(const CsvTable& t, size_t row, const std::string& name) {
  return t.rows.at(row).at(column(t, name));
}

struct Cell {
  size_t row;
  std::string name;
  std::string want;
};

// Each cell as listed, each its own CHECK: a failure names the row and the column.
void check_cells(const CsvTable& t, std::initializer_list<Cell> cells) {
  for (const Cell& c : cells) {
    INFO("row " << c.row << ", column " << c.name);
    CHECK(cell(t, c.row, c.name) == c.want);
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("csv fields are quoted only where RFC 4180 requires, quotes doubled", "[csv]") {
  CHECK(csv_field("node01") == "node01");
  CHECK(csv_field("") == "");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("two\nlines") == "\"two\nlines\"");
  CHECK(csv_field("cr\r") == "\"cr\r\"");
}

TEST_CASE("csv cells write numbers as the JSON file does, null as empty", "[csv]") {
  const double d = 1.0 / 3;
  CHECK(csv_cell(json(d)) == json(d).dump());
  CHECK(std::stod(csv_cell(json(d))) == d);  // reads back the same double
  CHECK(csv_cell(json(4194304)) == "4194304");
  CHECK(csv_cell(json(-1)) == "-1");
  CHECK(csv_cell(json(nullptr)) == "");
  CHECK(csv_cell(json("in_place")) == "in_place");
  CHECK(csv_cell(json(true)) == "true");
  CHECK_THROWS_AS(csv_cell(json::array({1, 2})), std::invalid_argument);
}

TEST_CASE("a csv table is a header and rows, every line ending in CRLF", "[csv]") {
  const CsvTable t{{"node", "tx_gbps"}, {{"node01", "1.5"}, {"a,b", ""}}};
  CHECK(to_csv(t) == "node,tx_gbps\r\nnode01,1.5\r\n\"a,b\",\r\n");
}

TEST_CASE("sendrecv csv: one row per size x pair x rail, every summary spelled out", "[csv]") {
  json doc{{"command", "sendrecv"}, {"world", world(4)}, {"results", json::array()}};
  for (uint64_t bytes : {8u, 4096u}) {
    SendRecvRecord r{bytes, "send", {}};
    r.pairs.push_back(PairRecord{0, 1, 0, summary(3), summary(10), summary(11), summary(19), 0});
    r.pairs.push_back(PairRecord{2, 3, 1, summary(4), summary(9), summary(8), summary(17), 5});
    doc["results"].push_back(to_json(r));
  }
  const CsvTable t = results_csv(doc);
  REQUIRE(t.rows.size() == 4);
  for (const auto& row : t.rows) CHECK(row.size() == t.header.size());
  CHECK(t.header.front() == "bytes");
  check_cells(t, {{3, "bytes", "4096"}, {3, "a", "2"}, {3, "host_b", "node1"}, {3, "rail", "1"}, {3, "wrong", "5"}});
  const json& pair = doc["results"][1]["pairs"][1];
  check_cells(t, {{3, "latency_p50_us", pair["latency_us"]["p50"].dump()},
                  {3, "latency_p99_9_us", pair["latency_us"]["p99_9"].dump()},
                  {3, "bw_ba_stdev_gbps", pair["bw_ba_gbps"]["stdev"].dump()},
                  {3, "bw_bidir_min_gbps", pair["bw_bidir_gbps"]["min"].dump()}});
}

TEST_CASE("collective csv: one row per size x placement", "[csv]") {
  json doc{{"command", "allreduce"}, {"world", world(2)}, {"results", json::array()}};
  CollectiveRecord r{1024,
                     256,
                     "float",
                     "sum",
                     -1,
                     "ring",
                     CollectiveSide{12.5, 0.08, 0.08, 0, summary(12)},
                     CollectiveSide{11.25, 0.09, 0.09, 3, summary(11)}};
  doc["results"].push_back(to_json(r));
  const CsvTable t = results_csv(doc);
  REQUIRE(t.rows.size() == 2);
  check_cells(t, {{0, "placement", "out_of_place"},
                  {1, "placement", "in_place"},
                  {1, "busbw_gbps", "0.09"},
                  {1, "wrong", "3"},
                  {0, "iteration_p99_us", json(36.0).dump()},
                  {0, "algo", "ring"}});
  // allgather and reducescatter have the same table
  doc["command"] = "reducescatter";
  CHECK(results_csv(doc).header == t.header);
}

TEST_CASE("alltoall csv: placements, then one row per link src -> dst", "[csv]") {
  json doc{{"command", "alltoall"}, {"world", world(3)}, {"results", json::array()}};
  CollectiveRecord r{3072,
                     768,
                     "float",
                     "none",
                     -1,
                     "pairwise",
                     CollectiveSide{20, 0.1, 0.07, 0, summary(20)},
                     CollectiveSide{21, 0.1, 0.07, 0, summary(21)}};
  json e = to_json(r);
  e["pairs"] = json::array({json{{"src", 1}, {"dst", 0}, {"step_us", to_json(summary(5))}, {"gbps", 0.2}},
                            json{{"src", 2}, {"dst", 1}, {"step_us", to_json(summary(6))}, {"gbps", 0.17}}});
  doc["results"].push_back(e);
  const CsvTable t = results_csv(doc);
  REQUIRE(t.rows.size() == 4);
  check_cells(t, {{0, "row", "collective"},
                  {0, "src", ""},
                  {0, "busbw_gbps", "0.07"},
                  {3, "row", "link"},
                  {3, "bytes", "3072"},  // a link row names its size
                  {3, "placement", ""},
                  {3, "busbw_gbps", ""},
                  {3, "src", "2"},
                  {3, "dst_host", "node0"},
                  {3, "step_p50_us", "9.0"},
                  {3, "link_gbps", "0.17"}});
}

TEST_CASE("alltoall --routing csv: the size's routing on its placement rows only", "[csv]") {
  json doc{{"command", "alltoall"}, {"world", world(2)}, {"results", json::array()}};
  CollectiveRecord r{8192,
                     2048,
                     "float",
                     "none",
                     -1,
                     "pairwise",
                     CollectiveSide{20, 0.4, 0.2, 0, summary(20)},
                     CollectiveSide{21, 0.4, 0.2, 0, summary(21)}};
  json e = to_json(r);
  e["pairs"] = json::array({json{{"src", 1}, {"dst", 0}, {"step_us", to_json(summary(5))}, {"gbps", 0.2}}});
  e["routing"] = json{{"tokens_per_rank", 1},  {"hidden", 1024},         {"expert_imbalance", 3.0},
                      {"pair_imbalance", 1.5}, {"busiest_bytes", 12288}, {"expert_load", {0, 2, 0, 2}}};
  doc["results"].push_back(e);
  // Without the routing config (an even run) the columns are not there at all.
  const auto even = results_csv(doc).header;
  CHECK(std::find(even.begin(), even.end(), "hidden") == even.end());
  doc["config"] = json{{"routing", {{"distribution", "zipf:1.2"}, {"experts", 4}, {"topk", 2}}}};
  const CsvTable t = results_csv(doc);
  REQUIRE(t.rows.size() == 3);
  check_cells(t, {{0, "tokens_per_rank", "1"},
                  {1, "expert_imbalance", "3.0"},
                  {1, "busiest_bytes", "12288"},
                  {2, "row", "link"},
                  {2, "pair_imbalance", ""}});
}

TEST_CASE("kvcache csv: one row per token count x mode", "[csv]") {
  json doc{{"command", "kvcache"}, {"results", json::array()}};
  for (const char* mode : {"contiguous", "per-block"}) {
    doc["results"].push_back(json{{"tokens", 160},
                                  {"mode", mode},
                                  {"bytes", 20971520},
                                  {"blocks", 640},
                                  {"ops", 640},
                                  {"request_us", to_json(summary(900))},
                                  {"gbps", 2.5},
                                  {"blocks_per_s", 70000.5},
                                  {"aggregate_gbps", 3.1},
                                  {"ratio_to_contiguous", 0.42},
                                  {"wrong", 0}});
  }
  const CsvTable t = results_csv(doc);
  REQUIRE(t.rows.size() == 2);
  check_cells(
      t, {{1, "mode", "per-block"}, {1, "request_p99_9_us", json(3600.0).dump()}, {1, "ratio_to_contiguous", "0.42"}});
}

TEST_CASE("congestion csv: one row per placement x metric x aggressor, figures in the row's unit", "[csv]") {
  json doc{{"command", "congestion"}, {"results", json::array()}};
  for (const char* metric : {"latency", "bandwidth"}) {
    const bool lat = std::string(metric) == "latency";
    doc["results"].push_back(json{{"placement", "cross-spine"},
                                  {"victim_ranks", {0, 3}},
                                  {"victim_hosts", {"node01", "node02"}},
                                  {"victim_slots", {0, 1}},
                                  {"metric", metric},
                                  {"unit", lat ? "us" : "GB/s"},
                                  {"tail", lat ? "high" : "low"},
                                  {"aggressor", "incast"},
                                  {"aggressor_ranks", {1, 2}},
                                  {"aggressor_gbps", 0.011},
                                  {"aggressor_capped", false},
                                  {"isolated", {{"count", 300}, {"p50", 8.2}, {"p99", 33.3}, {"p99_9", 36.1}}},
                                  {"congested", {{"count", 300}, {"p50", 8.3}, {"p99", 42.3}, {"p99_9", 46.9}}},
                                  {"impact", {{"p50", 1.01}, {"p99", 1.27}, {"p99_9", 1.3}}}});
  }
  const CsvTable t = results_csv(doc);
  REQUIRE(t.rows.size() == 2);
  check_cells(t, {{0, "victim_b", "3"},
                  {0, "victim_b_host", "node02"},
                  {1, "metric", "bandwidth"},
                  {1, "unit", "GB/s"},
                  {0, "congested_p99", "42.3"},
                  {0, "impact_p99_9", "1.3"},
                  {0, "aggressor_capped", "false"}});
}

namespace {

json validate_doc(bool measured) {
  json inventory = json::array();
  for (int n = 0; n < 2; ++n) {
    for (int s = 0; s < 2; ++s) {
      inventory.push_back(json{{"node", "node0" + std::to_string(n + 1)},
                               {"slot", s},
                               {"rank", n * 2 + s},
                               {"nic",
                                {{"nic", "veth" + std::to_string(s)},
                                 {"found", true},
                                 {"state", "up"},
                                 {"speed_gbps", 10},
                                 {"mtu", 1500}}}});
    }
  }
  json doc{{"command", "validate"}, {"inventory", inventory}};
  if (!measured) return doc;
  json rails = json::array();
  for (int r = 0; r < 2; ++r) {
    json links = json::array();
    for (int n = 0; n < 2; ++n) {
      const bool slow = r == 1 && n == 1;
      links.push_back(json{{"node", "node0" + std::to_string(n + 1)},
                           {"pairs", 1},
                           {"failed", 0},
                           {"tx_gbs", slow ? 0.041 : 0.118},
                           {"rx_gbs", 0.117},
                           {"bidir_gbs", 0.2},
                           {"lat_p50_us", 50.5},
                           {"lat_p99_us", 90.25},
                           {"bw_spread", 0.01},
                           {"link_downs", 0},
                           {"carrier_changes", -1},
                           {"link_downed", -1}});
    }
    rails.push_back(json{{"rail", r}, {"leaf", "leaf" + std::to_string(r)}, {"line_rate_gbps", 1}, {"links", links}});
  }
  doc["rails"] = rails;
  doc["findings"] = json::array(
      {json{{"severity", "FAIL"}, {"kind", "bandwidth"}, {"subject", "node02 rail1 (leaf1)"}, {"node", 1}, {"rail", 1}},
       json{{"severity", "WARN"}, {"kind", "latency"}, {"subject", "node02 rail1 (leaf1)"}, {"node", 1}, {"rail", 1}},
       json{{"severity", "FAIL"}, {"kind", "collective"}, {"subject", "allreduce"}}});
  doc["verdict"] = "FAIL";
  return doc;
}

}  // namespace

TEST_CASE("validate csv: one row per link, rail by rail, with its findings", "[csv]") {
  const CsvTable t = results_csv(validate_doc(true));
  REQUIRE(t.rows.size() == 4);
  check_cells(t, {{0, "rail", "0"},
                  {0, "node", "node01"},
                  {2, "rail", "1"},
                  {3, "node", "node02"},
                  {3, "leaf", "leaf1"},
                  {3, "nic", "veth1"},
                  {3, "tx_gbps", "0.041"},
                  {3, "port_speed_gbit_s", "10"},
                  {3, "line_rate_gbit_s", "1"},
                  {3, "verdict", "FAIL"},  // FAIL beats the WARN on the same link
                  {3, "findings", "bandwidth;latency"},
                  {2, "verdict", "PASS"},
                  {2, "findings", ""}});
}

TEST_CASE("validate csv before the rail checks: the inventory, figures empty, no verdict yet", "[csv]") {
  const CsvTable t = results_csv(validate_doc(false));
  REQUIRE(t.rows.size() == 4);
  check_cells(t, {{1, "port_state", "up"}, {1, "tx_gbps", ""}, {1, "leaf", ""}, {1, "verdict", ""}});
  CHECK(results_csv(json{{"command", "validate"}}).rows.empty());  // failed before the inventory
}

TEST_CASE("a command without a table is refused", "[csv]") {
  CHECK_THROWS_AS(results_csv(json{{"command", "info"}}), std::invalid_argument);
}

TEST_CASE("the csv is written with the JSON at every rewrite, header first", "[csv]") {
  const std::string json_path = "test_results_csv.json", csv_path = "test_results_csv.csv";
  std::remove(json_path.c_str());
  std::remove(csv_path.c_str());
  {
    ResultsFile f(json_path, json{{"command", "allreduce"}});
    f.add_csv(csv_path, results_csv_text);
    const std::string empty = slurp(csv_path);
    CHECK(empty.rfind("bytes,count,type,", 0) == 0);
    CHECK(std::count(empty.begin(), empty.end(), '\n') == 1);  // the header, no rows yet
    f.add(to_json(CollectiveRecord{1024, 256, "float", "sum", -1, "ring", {}, {}}));
    const std::string one = slurp(csv_path);
    CHECK(std::count(one.begin(), one.end(), '\n') == 3);  // on disk before the run ends
    f.finish(false, "rank 1: timed out");
    CHECK(slurp(csv_path) == one);  // the rows stay; the JSON says how it ended
  }
  std::remove(json_path.c_str());
  std::remove(csv_path.c_str());
}

TEST_CASE("the csv is written without --json too, and a bad --csv path names the option", "[csv]") {
  const std::string csv_path = "test_results_csv_only.csv";
  std::remove(csv_path.c_str());
  {
    ResultsFile f("", json{{"command", "kvcache"}});
    f.add_csv(csv_path, results_csv_text);
    f.add(json{{"tokens", 40}, {"mode", "contiguous"}});
    const std::string text = slurp(csv_path);
    CHECK(text.find("\r\n40,contiguous,") != std::string::npos);
  }
  std::remove(csv_path.c_str());
  ResultsFile f("", json{{"command", "kvcache"}});
  CHECK_THROWS_WITH(f.add_csv("/nonexistent-dir/r.csv", results_csv_text),
                    Catch::Contains("--csv '/nonexistent-dir/r.csv'") && Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(check_results_path("/tmp", "--csv", "results.csv"), Catch::Contains("--csv '/tmp' is a directory"));
}

TEST_CASE("a csv that cannot be written fails the run in the JSON and keeps its rows", "[csv]") {
  // The directory goes away under the run (as a full disk or an unmounted share would
  // fail it): no temporary can be created there, for root too.
  const std::string dir = "test_results_csv_gone";
  ::mkdir(dir.c_str(), 0755);
  const std::string json_path = "test_results_csv_gone.json", csv_path = dir + "/r.csv";
  {
    ResultsFile f(json_path, json{{"command", "allreduce"}});
    f.add_csv(csv_path, results_csv_text);
    std::remove(csv_path.c_str());
    REQUIRE(::rmdir(dir.c_str()) == 0);
    CHECK_THROWS_WITH(f.add(json{{"bytes", 8}}), Catch::Contains("--csv") && Catch::Contains("r.csv"));
    std::ifstream in(json_path);
    const json doc = json::parse(in);
    CHECK(doc.at("status") == "failed");
    CHECK(doc.at("error").get<std::string>().find("--csv") != std::string::npos);
    CHECK(doc.at("results").size() == 1);     // the JSON keeps the size the CSV could not take
    CHECK_NOTHROW(f.finish(false, "later"));  // the CSV is not tried again
  }
  std::remove(json_path.c_str());
}
