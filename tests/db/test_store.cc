// The run store over real results files (tests/compare/fixtures, written by real runs:
// fixtures/README.md): what a file becomes, one copy per run, a thing's history, and
// the refusals of a store this railbench cannot use.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "lib/core/errors.h"
#include "lib/results/read.h"
#include "lib/store/database.h"
#include "lib/store/store.h"

using namespace railbench;
using namespace railbench::store;
using nlohmann::json;

namespace {

json fixture(const std::string& name) {
  return read_results_file(std::string(RAILBENCH_COMPARE_FIXTURES) + "/" + name);
}

// A folder of its own under the test's TMPDIR, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rbstore.XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

int64_t count_of(const Store& s, const std::string& table) {
  for (const auto& [t, n] : s.counts())
    if (t == table) return n;
  return -1;
}

}  // namespace

TEST_CASE("store: a validate file's NICs, pair links and findings, with each NIC against its rail", "[db]") {
  const RunRows r = rows_of(fixture("validate-netns-slow.json"), "slow.json");
  CHECK(r.run.command == "validate");
  CHECK(r.run.su == "netns-4x2");
  CHECK(r.run.started_at == "2026-11-23T16:53:43Z");
  CHECK(r.run.key.rfind("legacy-", 0) == 0);  // written before files had a run_id
  int nic = 0;
  double slow_tx_of_rail = 0;
  for (const auto& f : r.figures) {
    nic += f.thing_kind == "nic" && f.metric == "tx";
    if (f.thing == "node03:rail1" && f.metric == "tx/rail") slow_tx_of_rail = f.value;
  }
  CHECK(nic == 8);              // 4 nodes x 2 rails
  CHECK(r.pairs.size() == 16);  // 6 pairs per rail, and 4 cross-rail spot checks
  CHECK(r.nodes.size() == 4);
  // Read from the file, its pairs one at a time: the same rows.
  const RunRows streamed = rows_of_file(std::string(RAILBENCH_COMPARE_FIXTURES) + "/validate-netns-slow.json", "t");
  CHECK(streamed.pairs.size() == r.pairs.size());
  CHECK(streamed.figures.size() == r.figures.size());
  CHECK(slow_tx_of_rail == Approx(0.52).margin(0.02));
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].thing_kind == "nic");
  CHECK(r.findings[0].thing == "node03:rail1");
  CHECK(link_name("node07", 1, "node03", 1) == "node03:rail1-node07:rail1");
}

TEST_CASE("store: a fabric run's links and its switch-port drain, collectives per size", "[db]") {
  const RunRows f = rows_of(fixture("validate-fabric-degraded.json"), "d.json");
  REQUIRE(f.drains.size() == 1);
  CHECK(f.drains[0].thing_kind == "fabric_link");
  CHECK(f.drains[0].thing == "su1-leaf0-spine2");
  REQUIRE(f.findings.size() == 1);
  CHECK(f.findings[0].thing == "su1-leaf0-spine2");  // that file predates "fabric_link": read from the subject
  // A file that carries the link as a field: the field is what names the thing, not the
  // subject's text (here made to disagree, and then to name no link at all).
  json doc = fixture("validate-fabric-degraded.json");
  doc["findings"][0]["fabric_link"] = "su1-leaf0-spine3";
  doc["bad_nodes"]["switch_port_links"] = json::array({"su1-leaf0-spine3"});
  const RunRows structured = rows_of(doc, "s.json");
  REQUIRE(structured.findings.size() == 1);
  CHECK(structured.findings[0].thing_kind == "fabric_link");
  CHECK(structured.findings[0].thing == "su1-leaf0-spine3");
  REQUIRE(structured.drains.size() == 1);
  CHECK(structured.drains[0].thing == "su1-leaf0-spine3");
  doc["findings"][0]["subject"] = "leaf0 to spine3";
  doc["bad_nodes"]["switch_ports"][0] = "leaf0 to spine3: slow";
  const RunRows no_parens = rows_of(doc, "s.json");
  CHECK(no_parens.findings[0].thing == "su1-leaf0-spine3");
  CHECK(no_parens.drains[0].thing == "su1-leaf0-spine3");
  const RunRows a = rows_of(fixture("allreduce-shm-a.json"), "a.json");
  bool one_meg = false;
  for (const auto& x : a.figures) one_meg |= x.thing == "allreduce 1M" && x.metric == "busbw" && x.value > 0;
  CHECK(one_meg);
  CHECK_THROWS_WITH(rows_of(json{{"schema", "other"}}, "x.json"),
                    Catch::Contains("x.json") && Catch::Contains("--json"));
  // kvcache per mode and token count, workload per model and layout (tests/report/fixtures).
  const std::string report_fixtures = std::string(RAILBENCH_COMPARE_FIXTURES) + "/../../report/fixtures/";
  const RunRows kv = rows_of(read_results_file(report_fixtures + "kvcache-base.json"), "kv");
  bool contiguous = false;
  for (const auto& x : kv.figures) contiguous |= x.thing == "kvcache contiguous 40 tokens" && x.metric == "GB/s";
  CHECK(contiguous);
  const RunRows w = rows_of(read_results_file(report_fixtures + "workload.json"), "w");
  REQUIRE(w.figures.size() == 3);
  CHECK(w.figures[0].thing == "workload tiny-moe tp2 pp1 dp2 ep2");
  CHECK(w.figures[0].metric == "step p50");
}

TEST_CASE("store: a run ingested twice is kept once, and a thing's history lists its runs in order", "[db]") {
  TempDir dir;
  Store s(dir.file("sub/fleet.db"), Store::Mode::write);  // makes its folder
  CHECK(s.schema_version() == current_schema_version());
  CHECK(s.ingest(rows_of(fixture("validate-netns-slow.json"), "slow"), "slow").added);
  CHECK(s.ingest(rows_of(fixture("validate-netns-healthy.json"), "h"), "h").added);
  CHECK_FALSE(s.ingest(rows_of(fixture("validate-netns-healthy.json"), "h"), "h").added);
  CHECK(count_of(s, "runs") == 2);
  const auto found = s.find_things("node03:rail1");
  REQUIRE(found.size() == 1);
  const auto h = s.history(found[0], 30);
  REQUIRE(h.size() == 2);
  CHECK(h[0].verdict == "PASS");  // oldest first, whatever the ingest order
  CHECK(h[1].verdict == "FAIL");
  REQUIRE(h[1].findings.size() == 1);
  CHECK_THAT(h[1].findings[0], Catch::StartsWith("FAIL bandwidth"));
  CHECK(s.history(found[0], 1).size() == 1);
  // A pair test's link, named in either order: its two runs, a->b as the name's order.
  const auto link = s.find_things("node03:rail1-node01:rail1");
  REQUIRE(link.size() == 1);
  CHECK(link[0].name == "node01:rail1-node03:rail1");
  const auto lh = s.history(link[0], 30);
  REQUIRE(lh.size() == 2);
  REQUIRE(lh[1].figures.size() == 4);
  CHECK(lh[1].figures[0].first == "bw a->b");
  CHECK(lh[1].figures[0].second < 0.8 * lh[0].figures[0].second);  // node03 rail1 was slowed in the second
  CHECK(count_of(s, "pair_tests") == 32);
  // The newest validate of the SU and the one before it that passed.
  const auto la = s.latest_and_accepted();
  REQUIRE(la.size() == 1);
  CHECK(s.run_started(la[0].first) == "2026-11-23T16:53:43Z");
  CHECK(s.run_started(la[0].second) == "2026-11-23T16:53:22Z");
}

TEST_CASE("store: a run that cannot be stored leaves nothing half-written", "[db][robustness]") {
  TempDir dir;
  Store s(dir.file("fleet.db"), Store::Mode::write);
  RunRows r = rows_of(fixture("validate-netns-slow.json"), "slow");
  r.run.started_at = "yesterday";
  CHECK_THROWS_WITH(s.ingest(r, "bad.json"), Catch::Contains("bad.json") && Catch::Contains("started_at"));
  CHECK(count_of(s, "runs") == 0);
  CHECK(count_of(s, "figures") == 0);
}

TEST_CASE("store: a newer, damaged, read-only or missing store is refused with the fix", "[db][robustness]") {
  TempDir dir;
  CHECK_THROWS_WITH(Store(dir.file("none.db"), Store::Mode::read),
                    Catch::Contains("none.db") && Catch::Contains("db ingest"));
  { Store s(dir.file("newer.db"), Store::Mode::write); }
  {
    const auto db = open_sqlite(dir.file("newer.db"), false, false, 1000);
    db->set_schema_version(99);
  }
  CHECK_THROWS_AS(Store(dir.file("newer.db"), Store::Mode::write), UsageError);
  CHECK_THROWS_WITH(Store(dir.file("newer.db"), Store::Mode::read),
                    Catch::Contains("version 99") && Catch::Contains("newer"));

  std::ofstream(dir.file("damaged.db")) << "this is not a database, but a text file long enough to have a header\n";
  CHECK_THROWS_WITH(Store(dir.file("damaged.db"), Store::Mode::write),
                    Catch::Contains("damaged.db") && Catch::Contains("move it aside"));

  { Store s(dir.file("ro.db"), Store::Mode::write); }
  chmod(dir.file("ro.db").c_str(), 0444);
  if (geteuid() != 0)  // root writes a read-only file anyway
    CHECK_THROWS_WITH(Store(dir.file("ro.db"), Store::Mode::write), Catch::Contains("read-only"));
}

TEST_CASE("store: where the store is: --db, then RAILBENCH_DB, then XDG_DATA_HOME", "[db]") {
  CHECK(store_path("/x/given.db") == "/x/given.db");
  setenv("RAILBENCH_DB", "/x/env.db", 1);
  CHECK(store_path("") == "/x/env.db");
  unsetenv("RAILBENCH_DB");
  setenv("XDG_DATA_HOME", "/x/data", 1);
  CHECK(store_path("") == "/x/data/railbench/railbench.db");
  unsetenv("XDG_DATA_HOME");
  CHECK(days_of("1970-01-02T00:00:00Z") == Approx(1.0));
  CHECK(days_of("1970-01-02T01:00:00+01:00") == Approx(1.0));
  CHECK_FALSE(days_of("tomorrow"));
}

TEST_CASE("store: a PostgreSQL URL is told from a file, and its password never printed", "[db]") {
  CHECK(is_postgres_url("postgresql://fleet@db1/railbench"));
  CHECK(is_postgres_url("postgres://db1/railbench"));
  CHECK_FALSE(is_postgres_url("/var/lib/railbench/postgresql://x"));
  CHECK_FALSE(is_postgres_url("railbench.db"));
  CHECK(redact_url("postgresql://fleet:s3cret@db1:5432/railbench") == "postgresql://fleet:***@db1:5432/railbench");
  CHECK(redact_url("postgresql://db1/railbench?user=fleet&password=s3cret&sslmode=require") ==
        "postgresql://db1/railbench?user=fleet&password=***&sslmode=require");
  CHECK(redact_url("postgresql://fleet@/railbench?host=/run/pg") == "postgresql://fleet@/railbench?host=/run/pg");
  CHECK(store_name("postgresql://fleet:s3cret@db1/railbench") == "postgresql://fleet:***@db1/railbench");
  CHECK(results_folder("/data/rb/fleet.db") == "/data/rb/results");
  setenv("XDG_DATA_HOME", "/x/data", 1);
  CHECK(results_folder("postgresql://db1/railbench") == "/x/data/railbench/results");
  unsetenv("XDG_DATA_HOME");
}
