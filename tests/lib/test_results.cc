#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "lib/core/errors.h"
#include "lib/core/version.h"
#include "lib/results/results.h"
#include "lib/transport/transport.h"

using namespace railbench;
using nlohmann::json;

namespace {

json read_file(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

}  // namespace

TEST_CASE("the results file is rewritten after every size and keeps results on failure", "[results]") {
  const std::string path = "test_results_file.json";
  std::remove(path.c_str());
  json header{{"command", "allreduce"},
              {"argv", {"railbench", "allreduce"}},
              {"config", {{"iters", 20}}},
              {"world", {{"size", 2}}},
              {"transport", {{"name", "ofi"}}}};
  {
    ResultsFile f(path, header);
    json doc = read_file(path);
    validate_result_document(doc);
    CHECK(doc.at("status") == "running");
    CHECK(doc.at("schema") == kResultSchema);
    CHECK(doc.at("schema_version") == kResultSchemaVersion);
    CHECK(doc.at("railbench_version") == railbench_version());
    CHECK(doc.at("railbench_commit") == railbench_git_commit());  // traceable to the code that measured
    CHECK(doc.at("results").empty());

    f.add(json{{"bytes", 1024}});
    f.add(json{{"bytes", 2048}});
    doc = read_file(path);
    CHECK(doc.at("results").size() == 2);  // on disk before the run ends

    f.finish(false, "rank 1 (node2): timed out");
    doc = read_file(path);
    validate_result_document(doc);
    CHECK(doc.at("status") == "failed");
    CHECK(doc.at("error") == "rank 1 (node2): timed out");
    CHECK(doc.at("results").size() == 2);
  }
  std::remove(path.c_str());
}

TEST_CASE("validation names the missing or newer field", "[results]") {
  json doc{
      {"schema", kResultSchema},  {"schema_version", 1},     {"railbench_version", "0.1.0"}, {"command", "x"},
      {"config", json::object()}, {"world", json::object()}, {"transport", json::object()},  {"results", json::array()},
      {"status", "complete"}};
  CHECK_NOTHROW(validate_result_document(doc));
  json missing = doc;
  missing.erase("world");
  CHECK_THROWS_WITH(validate_result_document(missing), Catch::Contains("'world'"));
  json newer = doc;
  newer["schema_version"] = 99;
  CHECK_THROWS_WITH(validate_result_document(newer), Catch::Contains("newer"));
}

TEST_CASE("a results path in a missing directory, or a directory, is bad input naming it", "[results]") {
  CHECK_THROWS_AS(ResultsFile("/nonexistent-dir/r.json", json::object()), UsageError);
  CHECK_THROWS_WITH(check_results_path("/nonexistent-dir/r.json"),
                    Catch::Contains("'/nonexistent-dir'") && Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(check_results_path("/tmp"), Catch::Contains("is a directory"));
  CHECK_NOTHROW(check_results_path(""));
}

TEST_CASE("every rewrite dates itself, and a verdict once written stays", "[results]") {
  const std::string path = "test_results_updated_at.json";
  std::remove(path.c_str());
  {
    ResultsFile f(path, json{{"command", "x"}});
    CHECK(read_file(path).contains("updated_at"));
    f.finish(false, "first error");
    f.finish(true);  // a later verdict does not replace the first
    const json doc = read_file(path);
    CHECK(doc.at("status") == "failed");
    CHECK(doc.at("error") == "first error");
    CHECK(doc.contains("updated_at"));
  }
  std::remove(path.c_str());
}

TEST_CASE("remote keys serialize and refuse truncated blobs", "[results]") {
  RemoteKey k{4096, {{0x7f0000001000, 42}, {0x7f0000001000, 43}}};
  auto bytes = k.serialize();
  CHECK(RemoteKey::deserialize(bytes) == k);
  bytes.resize(bytes.size() - 1);
  CHECK_THROWS_AS(RemoteKey::deserialize(bytes), BootstrapError);
}
