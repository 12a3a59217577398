// Result kinds (bench/kinds/result_kind.h): a kind registered here, by no command, is what
// --csv, compare and report make of its results files, found through the registry; a
// results file of a kind nobody registered is refused, naming the file and the kinds known.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <unistd.h>

#include "bench/kinds/result_kind.h"
#include "bench/offline/compare/diff.h"
#include "bench/offline/compare/figures.h"
#include "bench/offline/compare/load.h"
#include "bench/offline/report/report.h"
#include "bench/offline/report/sections.h"
#include "bench/runner/results_csv.h"
#include "lib/core/errors.h"

using namespace railbench;
using nlohmann::json;

namespace {

// A results file as ResultsFile writes it, of `command`, with one widget rate per size.
json results_doc(const std::string& command, double scale = 1) {
  json results = json::array();
  for (int bytes : {8, 64}) results.push_back({{"bytes", bytes}, {"widgets_per_s", scale * bytes / 8}});
  return json{{"schema", "railbench.result"}, {"schema_version", 1},      {"railbench_version", "test"},
              {"command", command},           {"config", json::object()}, {"world", json::object()},
              {"transport", json::object()},  {"results", results},       {"status", "complete"}};
}

// The fake kind's parts: each says it was called, so a test sees which part ran.
CsvTable widget_csv(const json& doc) {
  CsvTable t;
  t.header = {"bytes", "widgets_per_s"};
  for (const auto& r : doc.at("results")) t.rows.push_back({csv_cell(r.at("bytes")), csv_cell(r.at("widgets_per_s"))});
  return t;
}

void widget_figures(const json& doc, double, std::vector<compare::Figure>& out) {
  for (const auto& r : doc.at("results")) {
    const double v = r.at("widgets_per_s").get<double>();
    out.push_back({fmt::format("{} B", r.at("bytes").get<int>()), "widgets", "1/s", true, v, v * 0.99, v * 1.01});
  }
}

std::string widget_section(const report::RunContext& ctx) {
  return fmt::format("<p id=\"{}-widgets\">{} widget sizes</p>\n", ctx.id, ctx.run.doc.at("results").size());
}

// A file under a fresh temporary directory, removed with it.
struct KindsDir {
  std::filesystem::path dir;
  KindsDir() {
    dir = std::filesystem::temp_directory_path() / fmt::format("railbench-kinds-test-{}", ::getpid());
    std::filesystem::create_directories(dir);
  }
  ~KindsDir() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const json& doc) const {
    std::ofstream(dir / name) << doc.dump(2);
    return (dir / name).string();
  }
};

}  // namespace

TEST_CASE("result kinds: a registered kind is what --csv, compare and report make of its files", "[report][kinds]") {
  KindsDir tmp;
  const std::string path = tmp.write("widgets.json", results_doc("widgetbench"));
  // Unknown to every reader until registered: no reader has a case of its own for it.
  CHECK(find_result_kind("widgetbench", ResultPart::csv) == nullptr);
  CHECK_THROWS_WITH(report::load_run(path), Catch::Contains("unknown command 'widgetbench'"));

  register_result_kind({"widgetbench", widget_csv, widget_figures, widget_section});
  CHECK_THAT(result_kind_names(ResultPart::figures), Catch::Contains("widgetbench"));

  // --csv: the kind's table.
  const CsvTable t = results_csv(compare::load_results(path));
  CHECK(t.header == std::vector<std::string>{"bytes", "widgets_per_s"});
  CHECK(t.rows == std::vector<std::vector<std::string>>{{"8", "1.0"}, {"64", "8.0"}});
  CHECK(results_csv_text(results_doc("widgetbench")) == "bytes,widgets_per_s\r\n8,1.0\r\n64,8.0\r\n");

  // compare: the kind's figures, judged as any others (half the rate is a regression).
  const auto base = compare::figures_of(compare::load_results(path), path);
  REQUIRE(base.size() == 2);
  CHECK(base[1].key() == "64 B | widgets");
  const compare::Diff d = compare::diff(base, compare::figures_of(results_doc("widgetbench", 0.5), "slow.json"), 0.1);
  CHECK(d.count(compare::Verdict::regression) == 2);

  // report: the run's header, then the kind's section.
  const std::string page = report::render_report({report::load_run(path)}, {});
  CHECK_THAT(page, Catch::Contains("<p id=\"run1-widgets\">2 widget sizes</p>"));
  CHECK_THAT(page, Catch::Contains("railbench widgetbench: widgets.json"));

  // A second kind of the same name is a bug, found at start-up.
  CHECK_THROWS_AS(register_result_kind({"widgetbench", widget_csv, nullptr, nullptr}), std::logic_error);
}

TEST_CASE("result kinds: a reader refuses a kind without its part, naming the kinds that have it", "[report][kinds]") {
  KindsDir tmp;
  register_result_kind({"widgetbench-csv-only", widget_csv, nullptr, nullptr});
  const std::string path = tmp.write("widgetbench-csv-only.json", results_doc("widgetbench-csv-only"));
  CHECK(results_csv(results_doc("widgetbench-csv-only")).rows.size() == 2);
  CHECK_THROWS_WITH(
      compare::figures_of(compare::load_results(path), path),
      Catch::Contains(path + ": command 'widgetbench-csv-only' has no figures to compare (compare reads allgather"));
  CHECK_THROWS_WITH(report::load_run(path), Catch::Contains(path + ": unknown command 'widgetbench-csv-only'"));
}

TEST_CASE("result kinds: a results file of a kind nobody registered is refused, naming the file and the kinds known",
          "[report][kinds]") {
  KindsDir tmp;
  const std::string path = tmp.write("nosuch.json", results_doc("nosuch"));
  // The real kinds, registered by the commands' folders (bench/commands/*/..._kind*.cc).
  const std::string known = "allgather, allreduce, alltoall, kvcache, reducescatter, sendrecv, validate";
  try {
    report::load_run(path);
    FAIL("report read a results file of an unknown kind");
  } catch (const UsageError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith(path + ": unknown command 'nosuch' in the results; report draws " + known));
  }
  try {
    compare::figures_of(compare::load_results(path), path);
    FAIL("compare read a results file of an unknown kind");
  } catch (const UsageError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("compare: " + path +
                                           ": command 'nosuch' has no figures to compare "
                                           "(compare reads " +
                                           known));
  }
  // --csv renders the running command's own document: an unknown kind there is a bug.
  // congestion has a table but no figures or section, so only --csv names it.
  CHECK_THROWS_WITH(results_csv(results_doc("nosuch")),
                    Catch::Contains("no CSV table for command 'nosuch': --csv writes those of allgather, allreduce, "
                                    "alltoall, congestion, kvcache, reducescatter, sendrecv, validate"));
}
