// The metrics writer (lib/results/metrics_text.h): the exposition format's rules that a
// scraper enforces, checked without one (the export test runs promtool on real files).
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "lib/core/errors.h"
#include "lib/results/metrics_text.h"

using namespace railbench;
using Catch::Matchers::Contains;

TEST_CASE("metrics: families are grouped, label values escaped, missing figures left out", "[metrics]") {
  MetricsText m;
  m.gauge("railbench_link_tx_bytes_per_second", "Sending bandwidth", "bytes_per_second");
  m.gauge("railbench_link_downs", "Downs");
  m.sample("railbench_link_tx_bytes_per_second", {{"node", "gpu001"}, {"rail", "0"}}, 4.5e10);
  m.sample("railbench_link_downs", {{"node", "a\"b\\c\nd"}}, 3);
  m.sample("railbench_link_tx_bytes_per_second", {{"node", "gpu002"}, {"rail", "0"}}, NAN);
  m.sample("railbench_link_tx_bytes_per_second", {{"node", "gpu003"}, {"rail", "0"}}, 1.5e10);
  const std::string text = m.render(MetricsFormat::prometheus);
  CHECK(text ==
        "# HELP railbench_link_tx_bytes_per_second Sending bandwidth\n"
        "# TYPE railbench_link_tx_bytes_per_second gauge\n"
        "railbench_link_tx_bytes_per_second{node=\"gpu001\",rail=\"0\"} 45000000000\n"
        "railbench_link_tx_bytes_per_second{node=\"gpu003\",rail=\"0\"} 15000000000\n"
        "# HELP railbench_link_downs Downs\n"
        "# TYPE railbench_link_downs gauge\n"
        "railbench_link_downs{node=\"a\\\"b\\\\c\\nd\"} 3\n");
  const std::string om = m.render(MetricsFormat::openmetrics);
  CHECK_THAT(om, Contains("# UNIT railbench_link_tx_bytes_per_second bytes_per_second\n"));
  CHECK(om.size() >= 6);
  CHECK(om.substr(om.size() - 6) == "# EOF\n");
}

TEST_CASE("metrics: a family with no samples is not written", "[metrics]") {
  MetricsText m;
  m.gauge("railbench_findings", "Findings");
  m.sample("railbench_findings", {}, NAN);
  CHECK(m.render(MetricsFormat::prometheus).empty());
}

TEST_CASE("metrics: names Prometheus refuses are a bug, caught when declared", "[metrics]") {
  MetricsText m;
  CHECK_THROWS_AS(m.gauge("railbench-link", "x"), std::logic_error);
  CHECK_THROWS_AS(m.gauge("9lives", "x"), std::logic_error);
  CHECK_THROWS_AS(m.gauge("railbench_latency_ms", "x", "seconds"), std::logic_error);
  CHECK_THROWS_AS(m.sample("railbench_undeclared", {}, 1), std::logic_error);
  m.gauge("railbench_ok", "x");
  CHECK_THROWS_AS(m.gauge("railbench_ok", "other help"), std::logic_error);
  CHECK_THROWS_AS(m.sample("railbench_ok", {{"__reserved", "v"}}, 1), std::logic_error);
  CHECK_THROWS_AS(m.sample("railbench_ok", {{"bad-label", "v"}}, 1), std::logic_error);
}

TEST_CASE("metrics: the run's series come from the header", "[metrics]") {
  const nlohmann::json doc = {{"command", "validate"},
                              {"railbench_version", "1.2"},
                              {"railbench_commit", "abc"},
                              {"status", "complete"},
                              {"transport", {{"name", "verbs"}, {"provider", "mlx5"}}},
                              {"started_at", "2026-01-02T03:04:05Z"},
                              {"finished_at", "2026-01-02T03:05:05Z"},
                              {"world", {{"size", 16}, {"hosts", {"a", "b"}}}},
                              {"verdict", "WARN"}};
  MetricsText m;
  run_metrics(doc, m);
  const std::string text = m.render(MetricsFormat::prometheus);
  CHECK_THAT(text, Contains("railbench_run_info{command=\"validate\",version=\"1.2\",commit=\"abc\",status="
                            "\"complete\",transport=\"verbs:mlx5\"} 1\n"));
  CHECK_THAT(text, Contains("railbench_run_start_timestamp_seconds{command=\"validate\"} 1767323045\n"));
  CHECK_THAT(text, Contains("railbench_run_end_timestamp_seconds{command=\"validate\"} 1767323105\n"));
  CHECK_THAT(text, Contains("railbench_run_hosts{command=\"validate\"} 2\n"));
  CHECK_THAT(text, Contains("railbench_run_verdict{command=\"validate\",verdict=\"WARN\"} 1\n"));
  CHECK_THAT(text, Contains("railbench_run_verdict{command=\"validate\",verdict=\"FAIL\"} 0\n"));
  CHECK_THROWS_AS(parse_metrics_format("xml"), UsageError);
}
