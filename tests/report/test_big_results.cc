// The results file of a large SU, written and read: the streamed writer's bytes are the
// DOM's, a file written with set_array reads back the same, and a reader that visits an
// array sees every element and keeps none. (The full-size round trip through report,
// compare and export is big_results_case.py.)
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/results/json_stream.h"
#include "lib/results/read.h"
#include "lib/results/results.h"

using namespace railbench;
using nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Records of every JSON type, with nesting, escapes and non-ASCII text.
json record(size_t i) {
  json r{{"node_a", i},
         {"bw_ab", 46.5 + 0.001 * static_cast<double>(i)},
         {"ok", i % 7 != 0},
         {"error", i % 7 ? "" : "pair test did not finish within 30 s (\"gpu0002\"\tnever answered) \xc3\xa9"},
         {"none", nullptr},
         {"empty", json::array()},
         {"obj", json::object()}};
  if (i % 3 == 0) r["counters_a"] = {{"rail", 1}, {"deltas", {{"port/port_xmit_data_bytes", 1ULL << 40}}}};
  return r;
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / fmt::format("rb-big-{}-{}", ::getpid(), name)).string();
}

}  // namespace

TEST_CASE("a streamed array is written as the bytes dump(2) writes the document with it") {
  for (const size_t count : {size_t{0}, size_t{1}, size_t{50}}) {
    const json doc = json::parse(R"({"a": 1, "rail_pairs": [], "z": "last",
        "rails": [{"bw_gbs": [], "lat/us": [], "nodes": ["gpu1", "gpu2"]}, {"bw_gbs": [[null, 1.5], [2.25, null]]}]})");
    // A top-level array, and matrices inside an array of objects (validate's rails).
    auto row = [](size_t i) { return json::array({i * 0.5, nullptr, "x/~y"}); };
    const StreamedArrays streamed{
        {"/rail_pairs", {count, record}}, {"/rails/0/bw_gbs", {count, row}}, {"/rails/0/lat~1us", {count, row}}};
    const std::string path = temp_path("stream.json");
    {
      FILE* f = std::fopen(path.c_str(), "w");
      REQUIRE(f != nullptr);
      REQUIRE(write_json_streamed(::fileno(f), doc, streamed));
      std::fclose(f);
    }
    CHECK(slurp(path) == with_streamed(doc, streamed).dump(2) + "\n");
    std::filesystem::remove(path);
  }
}

TEST_CASE("ResultsFile::set_array writes the file set() would, and reads back with every element visited") {
  const std::string streamed_path = temp_path("set-array.json");
  const std::string dom_path = temp_path("set-dom.json");
  std::vector<json> records;
  for (size_t i = 0; i < 1000; ++i) records.push_back(record(i));
  auto fill = [&](ResultsFile& f, bool streamed) {
    f.set("rails", json::array({{{"rail", 0}}}));
    if (streamed)
      f.set_array("rail_pairs", records.size(), [&](size_t i) { return records[i]; });
    else
      f.set("rail_pairs", records);
    f.set("verdict", "PASS");
    f.finish(true);
  };
  const json header{{"command", "validate"},
                    {"config", json::object()},
                    {"world", {{"size", 2}}},
                    {"transport", {{"name", "loopback"}}}};
  ResultsFile a(streamed_path, header), b(dom_path, header);
  fill(a, true);
  fill(b, false);
  CHECK(a.doc()["rail_pairs"] == json::array());  // the document never holds them
  json from_a = json::parse(slurp(streamed_path)), from_b = json::parse(slurp(dom_path));
  for (auto* d : {&from_a, &from_b})
    for (const char* t : {"run_id", "started_at", "updated_at", "finished_at"}) d->erase(t);
  CHECK(from_a == from_b);
  CHECK(from_a["rail_pairs"].size() == records.size());

  std::vector<json> seen;
  const json lean = read_results_file(streamed_path, "", {{"rail_pairs", [&](const json& p) { seen.push_back(p); }}});
  CHECK(lean["rail_pairs"] == json::array());
  CHECK(lean["verdict"] == "PASS");
  REQUIRE(seen.size() == records.size());
  CHECK(seen == records);
  std::filesystem::remove(streamed_path);
  std::filesystem::remove(dom_path);
}

TEST_CASE("a results file over the limits is refused in one line naming its size, the limit and the readers") {
  const std::string path = temp_path("huge.json");
  auto refusal = [&](uintmax_t bytes, const ElementVisitors& visit) {
    { std::ofstream create(path); }
    std::filesystem::resize_file(path, bytes);  // sparse: no disk taken
    try {
      read_results_file(path, "compare", visit);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const ElementVisitors skip{{"rail_pairs", [](const json&) {}}};
  const std::string whole = refusal(600ULL << 20, {});
  CHECK(whole.find("629145600 bytes (600 MB)") != std::string::npos);
  CHECK(whole.find("at most 512 MB") != std::string::npos);
  CHECK(whole.find("railbench report, compare and export") != std::string::npos);
  const std::string huge = refusal(9ULL << 30, skip);
  CHECK(huge.find("compare: " + path + ": 9663676416 bytes (9.0 GB)") == 0);
  CHECK(huge.find("at most 8.0 GB") != std::string::npos);
  CHECK(huge.find('\n') == std::string::npos);
  // Within the visiting reader's limit it is read (and this one is not JSON).
  CHECK(refusal(600ULL << 20, skip).find("not JSON") != std::string::npos);
  std::filesystem::remove(path);
}
