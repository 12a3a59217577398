// railbench report's pure parts: results JSON in, HTML out. The fixtures are results
// files recorded by tests/report/record_fixtures.sh (mpirun, the netns SU); the browser
// tests (report_case.py) open the same pages in Chromium.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <unistd.h>

#include "bench/offline/report/colour.h"
#include "bench/offline/report/html.h"
#include "bench/offline/report/report.h"
#include "bench/offline/report/validate_data.h"
#include "lib/core/errors.h"

using namespace railbench;
using namespace railbench::report;
using nlohmann::json;

namespace {

const std::string kFixtures = RAILBENCH_REPORT_FIXTURES;

RunDocument fixture(const std::string& name) {
  return load_run(kFixtures + "/" + name + ".json");
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// The markup of one <svg id="ID">...</svg>.
std::string svg_by_id(const std::string& page, const std::string& id) {
  const size_t start = page.find("<svg id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  return page.substr(start, page.find("</svg>", start) - start);
}

// The class attribute of every cell of a heatmap, row-major.
std::vector<std::string> cell_classes(const std::string& svg) {
  std::vector<std::string> out;
  static const std::regex cell(R"re(<rect class="(cell[^"]*)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cell); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

bool has_class(const std::string& classes, const std::string& c) {
  return (" " + classes + " ").find(" " + c + " ") != std::string::npos;
}

// The top-level fields every results file has (lib/results/schema.h), for `command`.
json header_doc(const std::string& command) {
  return json{{"schema", "railbench.result"}, {"schema_version", 1},      {"railbench_version", "test"},
              {"command", command},           {"config", json::object()}, {"world", json::object()},
              {"transport", json::object()},  {"results", json::array()}, {"status", "complete"}};
}

// A minimal validate document: `nodes` x 1 rail at 400 Gb/s line rate (50 GB/s), every
// cell at `fraction` of it, with the header fields a results file always has.
json validate_doc(int nodes, double fraction) {
  json names = json::array(), bw = json::array(), lat = json::array();
  for (int a = 0; a < nodes; ++a) {
    names.push_back(fmt::format("n{:02}", a + 1));
    json row = json::array(), lrow = json::array();
    for (int b = 0; b < nodes; ++b) {
      row.push_back(a == b ? json(nullptr) : json(50 * fraction));
      lrow.push_back(a == b ? json(nullptr) : json(3.0));
    }
    bw.push_back(row);
    lat.push_back(lrow);
  }
  json doc = header_doc("validate");
  doc.update(json{{"argv", {"railbench", "validate"}},
                  {"rails",
                   {{{"rail", 0},
                     {"nic", "mlx5_0"},
                     {"leaf", "leaf1"},
                     {"line_rate_gbps", 400},
                     {"nodes", names},
                     {"bw_gbs", bw},
                     {"bidir_gbs", bw},
                     {"lat_p50_us", lat},
                     {"lat_p99_us", lat},
                     {"links", json::array()},
                     {"errors", json::array()}}}},
                  {"findings", json::array()},
                  {"verdict", "PASS"}});
  return doc;
}

std::string render_one(const json& doc, const std::string& path = "t.json") {
  check_document(doc, path);
  return render_report({RunDocument{path, doc}}, {});
}

// A file under a fresh temporary directory, removed with it.
struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    dir = std::filesystem::temp_directory_path() / fmt::format("railbench-report-test-{}", ::getpid());
    std::filesystem::create_directories(dir);
  }
  ~TempDir() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

}  // namespace

TEST_CASE("report: bad input names the file and the problem", "[report]") {
  TempDir tmp;
  const auto fails_with = [](const std::string& path, const std::string& words) {
    try {
      load_run(path);
      FAIL("no error for " << path);
    } catch (const UsageError& e) {
      const std::string what = e.what();
      CHECK(what.find(path) != std::string::npos);
      CHECK_THAT(what, Catch::Contains(words));
    }
  };
  fails_with((tmp.dir / "nosuch.json").string(), "cannot read the results file");
  fails_with(tmp.write("broken.json", "{\"schema\": \"railbench.result\", "), "not JSON");
  fails_with(tmp.write("other.json", "{\"hello\": 1}"), "not a railbench results file");
  fails_with(tmp.write("newer.json", R"({"schema": "railbench.result", "schema_version": 7, "command": "allreduce"})"),
             "schema_version 7 is not one this railbench reads (1..1)");
  fails_with(tmp.write("noversion.json", R"({"schema": "railbench.result", "command": "allreduce"})"),
             "\"schema_version\" is missing");
  fails_with(
      tmp.write("nofield.json", R"({"schema": "railbench.result", "schema_version": 1, "command": "allreduce"})"),
      "no 'railbench_version' field");
  fails_with(tmp.write("cmd.json", header_doc("frobnicate").dump()), "unknown command 'frobnicate'");
  fails_with(tmp.dir.string(), "is a directory");
  // A field of the wrong type is bad input naming the file, not a crash.
  json doc = validate_doc(2, 0.9);
  doc["rails"] = json::array({42});
  CHECK_THROWS_WITH(render_one(doc, "typed.json"), Catch::Contains("typed.json: a field has an unexpected type"));
}

TEST_CASE("report: a 4x2 validate report has 2 heatmaps of 16 cells per metric, the faulty link's cells marked",
          "[report]") {
  const std::string page = render_report({fixture("validate-faulty")}, {});
  // node03 rail1 at 25% of its rate: the run's one FAIL finding (tests/netns/cases.sh degraded).
  CHECK_THAT(page, Catch::Contains("FAIL: 1 failure(s)"));
  CHECK_THAT(page, Catch::Contains("<a href=\"#run1-bw-r1-row-2\">node03 rail1 (leaf1)</a>"));
  for (const char* metric : {"bw", "p50", "p99"}) {
    for (int rail = 0; rail < 2; ++rail) {
      INFO(metric << " rail " << rail);
      const auto cells = cell_classes(svg_by_id(page, fmt::format("run1-{}-r{}", metric, rail)));
      REQUIRE(cells.size() == 16);
      for (int a = 0; a < 4; ++a) {
        for (int b = 0; b < 4; ++b) {
          const std::string& c = cells[a * 4 + b];
          INFO("cell " << a << "," << b << ": " << c);
          if (a == b) {
            CHECK(has_class(c, "self"));
          } else if (rail == 1 && (a == 2 || b == 2)) {
            CHECK(has_class(c, "bad"));  // node03's row (it sends) and column (it receives)
          } else {
            CHECK_FALSE(has_class(c, "bad"));
          }
        }
      }
    }
  }
  // The anchor the finding links to exists.
  CHECK(count(page, "id=\"run1-bw-r1-row-2\"") == 1);
  // A healthy run: no cell marked, a PASS banner.
  const std::string healthy = render_report({fixture("validate-healthy")}, {});
  CHECK_THAT(healthy, Catch::Contains("banner pass"));
  for (const char* metric : {"bw", "p50", "p99"})
    for (int rail = 0; rail < 2; ++rail)
      for (const auto& c : cell_classes(svg_by_id(healthy, fmt::format("run1-{}-r{}", metric, rail))))
        CHECK_FALSE(has_class(c, "bad"));
}

TEST_CASE("report: bandwidth colour is anchored to the line rate, not to the data's range", "[report]") {
  // Every cell at 94% of line rate: one colour, the one 94% has, whatever the spread.
  const std::string page = render_one(validate_doc(4, 0.94));
  const auto cells = cell_classes(svg_by_id(page, "run1-bw-r0"));
  REQUIRE(cells.size() == 16);
  for (size_t i = 0; i < cells.size(); ++i)
    if (i % 5) CHECK(has_class(cells[i], viridis_class(0.94)));
  // Two cells a hair apart stay a hair apart: min/max scaling would paint them black and yellow.
  json doc = validate_doc(2, 0.94);
  doc["rails"][0]["bw_gbs"][0][1] = 50 * 0.93;
  const auto two = cell_classes(svg_by_id(render_one(doc), "run1-bw-r0"));
  REQUIRE(two.size() == 4);
  CHECK(has_class(two[1], viridis_class(0.93)));
  CHECK(has_class(two[2], viridis_class(0.94)));
  CHECK(viridis_class(0.93) != "v0");
  // A slow cable is dark.
  doc["rails"][0]["bw_gbs"][0][1] = 50 * 0.1;
  CHECK(has_class(cell_classes(svg_by_id(render_one(doc), "run1-bw-r0"))[1], viridis_class(0.1)));
}

TEST_CASE("report: cells without a measurement look different from slow ones", "[report]") {
  json doc = validate_doc(3, 0.9);
  doc["rails"][0]["bw_gbs"][0][1] = nullptr;                                           // not measured
  doc["rails"][0]["errors"] = {{{"a", "n02"}, {"b", "n03"}, {"error", "timed out"}}};  // failed pair test
  doc["rails"][0]["bw_gbs"][1][2] = nullptr;
  doc["rails"][0]["bw_gbs"][2][1] = nullptr;
  const std::string svg = svg_by_id(render_one(doc), "run1-bw-r0");
  const auto cells = cell_classes(svg);
  REQUIRE(cells.size() == 9);
  CHECK(has_class(cells[1], "missing"));
  CHECK(has_class(cells[5], "failed"));
  CHECK(has_class(cells[7], "failed"));
  CHECK(count(svg, "fill=\"url(#rb-hatch)\"") == 1);
  CHECK(count(svg, "fill=\"url(#rb-hatch-failed)\"") == 2);
  CHECK_THAT(svg, Catch::Contains("n02\u2192n03: the pair test failed: timed out"));
}

TEST_CASE("report: every kind of results file renders, with and without a baseline", "[report]") {
  for (const char* name : {"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv", "kvcache", "workload",
                           "validate-healthy", "validate-faulty", "allreduce-failed"}) {
    INFO(name);
    const RunDocument run = fixture(name);
    const std::string page = render_report({run}, {});
    CHECK_THAT(page, Catch::StartsWith("<!DOCTYPE html>"));
    CHECK_THAT(page, Catch::Contains("<code>" + esc(run.doc["argv"][0].get<std::string>())));
    CHECK_THAT(page, Catch::Contains("class=\"status " + run.doc["status"].get<std::string>()));
    CHECK_THAT(page, Catch::Contains("<svg"));
    // Self-contained: nothing is fetched, nothing runs.
    CHECK(count(page, "<script") == 0);
    CHECK(count(page, "http://") + count(page, "https://") + count(page, "src=") + count(page, "<link") == 0);
  }
  // Several runs on one page, each with its baseline.
  const std::string page = render_report(
      {fixture("validate-faulty"), fixture("allreduce"), fixture("alltoall"), fixture("sendrecv"), fixture("kvcache")},
      {fixture("validate-healthy-base"), fixture("allreduce-base"), fixture("alltoall-base"), fixture("sendrecv-base"),
       fixture("kvcache-base")});
  CHECK(count(page, "<section class=\"run\"") == 5);
  CHECK(count(page, "dashed in every chart") == 5);
  CHECK(count(page, "class=\"line baseline\"") >= 8);
  // validate's delta heatmap: node03 rail1 (25% of its rate) against the healthy baseline.
  const auto delta = cell_classes(svg_by_id(page, "run1-delta-r1"));
  REQUIRE(delta.size() == 16);
  CHECK(has_class(delta[2 * 4 + 0], "regressed"));
  CHECK(has_class(delta[0 * 4 + 2], "regressed"));
  // A baseline of another command is not used.
  const std::string alone = render_report({fixture("allreduce")}, {fixture("kvcache-base")});
  CHECK(count(alone, "(baseline)") + count(alone, "dashed in every chart") == 0);
}

TEST_CASE("report: a failed run renders what it measured, with its error", "[report]") {
  const RunDocument run = fixture("allreduce-failed");
  REQUIRE(run.doc["status"] == "failed");
  const std::string page = render_report({run}, {});
  CHECK_THAT(page, Catch::Contains("This run failed: interrupted by SIGTERM"));
  // Every size it measured is a row of the table.
  const size_t sizes = run.doc["results"].size();
  REQUIRE(sizes > 0);
  CHECK(count(page, "<tr><td>") >= sizes);
}

TEST_CASE("report: a file left \"running\" names the process that wrote it", "[report]") {
  RunDocument run = fixture("allreduce-failed");
  run.doc["status"] = "running";
  run.doc.erase("error");
  run.doc.erase("finished_at");
  run.doc["world"]["ranks"][0]["pid"] = 41234;
  run.doc["world"]["ranks"][0]["host"] = "node07";
  const std::string page = render_report({run}, {});
  CHECK_THAT(page, Catch::Contains("it is still running, or it died without a verdict"));
  CHECK_THAT(page, Catch::Contains("written by pid 41234 on node07"));
  // A file from before the pid was recorded still gets the banner, without the pid.
  run.doc["world"]["ranks"][0].erase("pid");
  const std::string older = render_report({run}, {});
  CHECK_THAT(older, Catch::Contains("died without a verdict"));
  CHECK(count(older, "written by pid") == 0);
}

TEST_CASE("report: text from a results file is escaped", "[report]") {
  json doc = validate_doc(2, 0.9);
  doc["argv"] = {"railbench", "<script>alert(1)</script>", "a&b"};
  doc["rails"][0]["nodes"] = {"<img src=x>", "n\"2"};
  doc["error"] = "<b>";
  const std::string page = render_one(doc);
  CHECK(count(page, "<script") == 0);
  CHECK(count(page, "<img") == 0);
  CHECK_THAT(page, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK_THAT(page, Catch::Contains("a&amp;b"));
  CHECK_THAT(page, Catch::Contains("n&quot;2"));
}

TEST_CASE("report: a file without the fields newer versions add still renders", "[report]") {
  // Older schema-1 files lack launcher, bw_spread, link_downs, retest_pairs, collectives...
  json doc = validate_doc(3, 0.9);
  doc.erase("findings");
  doc.erase("verdict");
  const std::string page = render_one(doc);
  CHECK_THAT(page, Catch::Contains("No verdict"));
  CHECK(cell_classes(svg_by_id(page, "run1-bw-r0")).size() == 9);
  const json minimal = header_doc("allreduce");
  CHECK_THAT(render_one(minimal), Catch::Contains("No size was measured"));
}

TEST_CASE("report: colour scales and numbers", "[report]") {
  CHECK(viridis(0) == "#440154");
  CHECK(viridis(1) == "#fde725");
  CHECK(viridis(-3) == viridis(0));
  CHECK(fill_colour(viridis_class(1)) == "#fde725");
  CHECK(ratio_colour(1) == "#f7f7f7");
  CHECK(fill_colour(ratio_class(1)) == "#f7f7f7");
  CHECK(ratio_class(0.25) == ratio_class(0.5));  // clamped at half
  CHECK(text_on("#440154") == "#fff");
  CHECK(text_on("#fde725") == "#000");
  CHECK(num(0.047213) == "0.0472");
  CHECK(num(4096) == "4096");
  CHECK(num(12.345) == "12.3");
  CHECK(num(std::nan("")) == "-");
  CHECK(size_label(4096) == "4K");
  CHECK(size_label(13) == "13 B");
  CHECK(esc("<a href='x'>&\"") == "&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
}

// ---- validate at scale: more than 64 nodes per rail is drawn as leaf x leaf blocks.

namespace {

// `nodes` x 1 rail at 90% of line rate with node index `slow` at 10%, blamed by a FAIL.
json large_doc(int nodes, int slow) {
  json doc = validate_doc(nodes, 0.9);
  for (int x = 0; x < nodes; ++x)
    if (x != slow) doc["rails"][0]["bw_gbs"][slow][x] = doc["rails"][0]["bw_gbs"][x][slow] = 5.0;
  doc["findings"] = {{{"severity", "FAIL"},
                      {"kind", "bandwidth"},
                      {"subject", fmt::format("n{:02} rail0", slow + 1)},
                      {"reason", "slow"},
                      {"node", slow},
                      {"rail", 0}}};
  doc["verdict"] = "FAIL";
  return doc;
}

json leaves_of(int nodes, int per_leaf) {
  json leaves = json::array();
  for (int x = 0; x < nodes; ++x) {
    if (x % per_leaf == 0)
      leaves.push_back({{"leaf", fmt::format("leaf{}", x / per_leaf + 1)}, {"nodes", json::array()}});
    leaves.back()["nodes"].push_back(fmt::format("n{:02}", x + 1));
  }
  return leaves;
}

}  // namespace

TEST_CASE("report: a large SU is drawn per leaf pair, one hover per block, the slow link's blocks marked", "[report]") {
  json doc = large_doc(96, 40);  // n41: leaf 2 of 3
  doc["rails"][0]["leaves"] = leaves_of(96, 32);
  const std::string page = render_one(doc);
  CHECK(svg_by_id(page, "run1-bw-r0").empty());  // no 96 x 96 map
  const std::string summary = svg_by_id(page, "run1-sum-r0");
  const auto blocks = cell_classes(summary);
  REQUIRE(blocks.size() == 9);
  CHECK(count(summary, "<title>") == 9 + 2 * 3);  // a hover per block and per leaf label
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) CHECK(has_class(blocks[i * 3 + j], "bad") == (i == 1 || j == 1));
  CHECK_THAT(summary, Catch::Contains("leaf2\u2192leaf1 rail0: 1024 links; worst n41\u2192n01 5 GB/s (10%)"));
  // The node strip: one cell per node, only the slow node's marked.
  const auto strip = cell_classes(svg_by_id(page, "run1-nodes"));
  REQUIRE(strip.size() == 96);
  for (int x = 0; x < 96; ++x) CHECK(has_class(strip[x], "bad") == (x == 40));
  CHECK_THAT(svg_by_id(page, "run1-nodes"), Catch::Contains("n41: worst link rail0 (leaf2): 5 GB/s, 10% of line rate"));
  CHECK_THAT(page, Catch::Contains("the leaves each rail lists with its nodes"));
  // The worst link first, linked to its cell in the leaf pair drawn in full.
  const size_t table = page.find("<table class=\"worst\">");
  REQUIRE(table != std::string::npos);
  CHECK_THAT(page.substr(table, 600), Catch::Contains("<a href=\"#run1-cell-r0-0-40\">n01 &#8594; n41</a>"));
  CHECK_THAT(page, Catch::Contains("id=\"run1-cell-r0-0-40\""));
  CHECK_THAT(page, Catch::Contains("<div class=\"lpair\" id=\"run1-lp-r0-0-1\">"));
  CHECK_THAT(summary, Catch::Contains("<a href=\"#run1-lp-r0-0-1\"><rect class=\"cell"));
}

TEST_CASE("report: a large SU that stopped before the rail checks says so", "[report]") {
  json doc = large_doc(80, 5);
  json inventory = json::array();
  for (const auto& name : doc["rails"][0]["nodes"]) inventory.push_back({{"node", name}, {"slot", 0}});
  doc["inventory"] = inventory;
  doc.erase("rails");
  const std::string page = render_one(doc);
  CHECK_THAT(page, Catch::Contains("No rail was measured"));
  CHECK_THAT(page, !Catch::Contains("run1-sum-r"));
}

TEST_CASE("report: leaves from a leaf per node, or fixed blocks said on the page when the results name none",
          "[report]") {
  json doc = large_doc(80, 5);
  json per_node = json::array();
  for (int x = 0; x < 80; ++x) per_node.push_back(x % 2 ? "odd" : "even");
  doc["rails"][0]["node_leaves"] = per_node;
  std::string summary = svg_by_id(render_one(doc), "run1-sum-r0");
  CHECK(cell_classes(summary).size() == 4);
  CHECK_THAT(summary, Catch::Contains("even\u2192odd rail0: 1600 links"));
  doc["rails"][0].erase("node_leaves");  // only "leaf": "leaf1", one per rail
  const std::string page = render_one(doc);
  CHECK(cell_classes(svg_by_id(page, "run1-sum-r0")).size() == 9);  // 32 + 32 + 16
  CHECK_THAT(page, Catch::Contains("blocks of 32 nodes in node order: the results name one leaf per rail (leaf1) and "
                                   "no leaf per node, so a block is not a switch"));
  CHECK_THAT(svg_by_id(page, "run1-sum-r0"), Catch::Contains(">nodes 65-80</text>"));
}

TEST_CASE("report: the worst links are each pair once, slower direction, worst first, unmeasured pairs left out",
          "[report]") {
  json doc = validate_doc(4, 0.9);
  doc["rails"][0]["bw_gbs"][2][1] = 10.0;  // n03 -> n02 the slowest
  doc["rails"][0]["bw_gbs"][1][2] = 12.0;
  doc["rails"][0]["bw_gbs"][0][3] = 20.0;
  doc["rails"][0]["bw_gbs"][3][0] = nullptr;  // one way measured: that way counts
  doc["rails"][0]["bw_gbs"][1][3] = doc["rails"][0]["bw_gbs"][3][1] = nullptr;
  const ValidateRun v = ValidateRun::read(doc);
  const auto grids = read_rail_grids(v, nullptr);
  const auto worst = worst_links(grids, 3);
  REQUIRE(worst.size() == 3);
  CHECK((worst[0].a == 2 && worst[0].b == 1 && worst[0].gbs == Approx(10)));
  CHECK((worst[1].a == 0 && worst[1].b == 3 && worst[1].gbs == Approx(20)));
  CHECK(worst[2].gbs == Approx(45));  // then the healthy pairs, in node order: n01-n02
  CHECK((worst[2].a == 0 && worst[2].b == 1));
  CHECK(worst_links(grids, 10).size() == 5);  // 6 pairs, n02-n04 never measured
}

TEST_CASE("report: a large file's matrices read as floats render the same page as the whole document", "[report]") {
  json doc = large_doc(70, 3);
  doc["rail_pairs"] = json::array({{{"node_a", 0}, {"node_b", 1}}});
  MatrixStore store;
  json lean;
  parse_with_matrices(doc.dump(), lean, store);
  CHECK(lean["rails"][0]["bw_gbs"].is_null());
  CHECK(lean["rail_pairs"].is_null());
  CHECK(lean["rails"][0]["nodes"] == doc["rails"][0]["nodes"]);
  const RailMatrix* bw = store.find(0, "bw_gbs");
  REQUIRE(bw != nullptr);
  CHECK(bw->n == 70);
  CHECK(std::isnan(bw->at(5, 5)));
  CHECK(bw->at(3, 4) == Approx(5.0));
  RunDocument lean_run{"t.json", lean};
  lean_run.matrices = std::make_shared<MatrixStore>(store);
  CHECK(render_report({lean_run}, {}) == render_one(doc));
  // An escaped key is off the fast path (a structural split, from_chars): the SAX parse
  // reads it to the same page.
  std::string text = doc.dump();
  text.insert(1, "\"t\\u0065st\": 1, ");
  MatrixStore sax_store;
  json sax_doc;
  parse_with_matrices(text, sax_doc, sax_store);
  CHECK(sax_doc["test"] == 1);
  sax_doc.erase("test");
  CHECK(sax_doc == lean);
  REQUIRE(sax_store.find(0, "bw_gbs") != nullptr);
  const auto& sax_cells = sax_store.find(0, "bw_gbs")->cells;
  CHECK(std::equal(sax_cells.begin(), sax_cells.end(), bw->cells.begin(), bw->cells.end(),
                   [](float x, float y) { return x == y || (std::isnan(x) && std::isnan(y)); }));
  json broken;
  CHECK_THROWS_AS(parse_with_matrices(doc.dump().substr(0, 5000), broken, store), nlohmann::json::parse_error);
}

TEST_CASE("report: a workload's step timeline draws every recorded op on its kind's lane", "[report]") {
  const RunDocument run = fixture("workload");
  const auto& tl = run.doc.at("step_timeline");
  const std::string page = render_report({run}, {});
  const auto at = page.find("<svg class=\"timeline\"");
  REQUIRE(at != std::string::npos);
  const std::string svg = page.substr(at, page.find("</svg>", at) - at);
  // One bar with one hover per op, and a lane label per kind that has ops.
  CHECK(count(svg, "<rect") == tl.at("ops").size());
  CHECK(count(svg, "<title>") == tl.at("ops").size());
  std::set<std::string> lanes;
  for (const auto& op : tl.at("ops")) lanes.insert(op.at("lane").get<std::string>());
  for (const auto& lane : lanes) CHECK_THAT(svg, Catch::Contains(">" + lane + "</text>"));
  CHECK(count(svg, "font-size=\"12\"") == lanes.size());
  // The first communicating op's hover names it.
  for (const auto& op : tl.at("ops"))
    if (op.at("lane") != "compute") {
      CHECK_THAT(svg, Catch::Contains(esc(op.at("label").get<std::string>())));
      break;
    }
  CHECK_THAT(page, Catch::Contains("the slowest rank of the middle timed step"));
}

TEST_CASE("report: the fabric drawn, each link coloured by its verdict, with its evidence and the ECMP balance",
          "[report]") {
  auto link = [](const std::string& leaf, const std::string& spine, int bad, int good, const std::string& finding) {
    return json{{"link", leaf + "-" + spine},
                {"leaf", leaf},
                {"spine", spine},
                {"finding", finding},
                {"votes", bad / 2.0},
                {"bad_flows", bad},
                {"good_flows", good},
                {"median_fraction", bad > good ? 0.2 : 0.95},
                {"retransmits", 3},
                {"blamed", finding.rfind("FAIL", 0) == 0}};
  };
  json links = json::array();
  for (const char* leaf : {"su1-leaf0", "su2-leaf0"})
    for (const char* spine : {"spine0", "spine1"}) links.push_back(link(leaf, spine, 0, 8, ""));
  links[1] = link("su1-leaf0", "spine1", 8, 0, "FAIL: 20% of the expected 0.4 Gb/s <slow>");
  links[2] = link("su2-leaf0", "spine0", 2, 0, "");
  links[2]["chance_p"] = 0.0048;
  const json doc{{"fabric",
                  {{"links", links},
                   {"flows", json::array({{{"health", "good"}, {"reached", true}}, {{"health", "skipped"}}})},
                   {"ecmp", json::array({{{"leaf", "su1-leaf0"},
                                          {"flows", 16},
                                          {"flows_per_uplink", {{"spine0", 12}, {"spine1", 4}}},
                                          {"max_over_mean", 1.5},
                                          {"uplinks_used", 2}}})},
                   {"host_side", json::array({"node03 rail1"})},
                   {"discovery_s", 0.3},
                   {"measure_s", 6.3}}}};
  const std::string html = fabric_section(doc);
  // 2 spines and 2 leaves, one line per link: red for the named one, amber for the one
  // chance explains, green for the rest.
  CHECK(std::regex_search(html, std::regex("1 flow\\(s\\) over 4 leaf-spine link\\(s\\), 1 reached")));
  CHECK(std::count(html.begin(), html.end(), '\n') > 0);
  const auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("<line ") == 4);
  CHECK(count("<rect ") == 4);
  CHECK(count("stroke=\"#d62728\"") == 1);
  CHECK(count("stroke=\"#e6a100\"") == 1);
  CHECK(count("stroke=\"#2e8b57\"") == 2);
  // The named link is drawn last (on top), its hover holds its evidence, escaped.
  const auto red = html.find("stroke=\"#d62728\"");
  CHECK(red > html.find("stroke=\"#e6a100\""));
  CHECK(html.find("su1-leaf0-spine1: 8 bad and 0 good flow(s), median 20% of the expected rate, votes 4", red) !=
        std::string::npos);
  CHECK(html.find("&lt;slow&gt;") != std::string::npos);
  CHECK(html.find("<slow>") == std::string::npos);
  // The evidence table: the two links with bad flows, most votes first; the healthy ones left out.
  const auto named_row = html.find("<td>su1-leaf0-spine1</td>"), chance_row = html.find("<td>su2-leaf0-spine0</td>");
  REQUIRE(named_row != std::string::npos);
  REQUIRE(chance_row != std::string::npos);
  CHECK(named_row < chance_row);
  CHECK(html.find("<td>su1-leaf0-spine0</td>") == std::string::npos);
  CHECK(html.find("0.0048") != std::string::npos);
  CHECK(html.find("spine0 12, spine1 4") != std::string::npos);
  CHECK(html.find("node03 rail1") != std::string::npos);
  // No fabric phase, no section.
  CHECK(fabric_section(json{{"findings", json::array()}}).empty());
}
