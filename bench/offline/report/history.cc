// report --db: the history section. Each chosen thing's figures over its last runs in the
// run store, one chart per kind of figure (bandwidth, fraction of its rail's median,
// latency and time), the run's number on the x axis, and the runs that carried a finding
// or a drain listed under it: what `railbench history THING` prints, drawn.
#include <map>

#include <fmt/format.h>

#include "bench/offline/report/html.h"
#include "bench/offline/report/report.h"
#include "bench/offline/report/sections.h"
#include "bench/offline/report/svg.h"

namespace railbench::report {

namespace {

// Figures of one scale share a chart: a latency beside a bandwidth would flatten both.
std::string chart_of(const std::string& metric) {
  if (metric.size() > 5 && metric.compare(metric.size() - 5, 5, "/rail") == 0) return "of its rail's median";
  if (metric.rfind("lat", 0) == 0 || metric.find("time") != std::string::npos ||
      metric.find("_ms") != std::string::npos || metric.find("_us") != std::string::npos)
    return "latency and time";
  return "bandwidth and rates";
}

std::string thing_history(const store::ThingRef& thing, const std::vector<store::HistoryRun>& runs) {
  std::string out =
      fmt::format("<h3>{} {}: {} run(s), oldest first</h3>\n", esc(thing.kind), esc(thing.name), runs.size());
  if (runs.empty()) return out + "<p class=\"note\">the store holds no run that measured it</p>\n";
  std::map<std::string, LineChart> charts;  // by chart_of
  std::map<std::string, size_t> series_at;  // metric -> index in its chart
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const auto& [metric, value] : runs[i].figures) {
      LineChart& c = charts[chart_of(metric)];
      auto [it, added] = series_at.try_emplace(metric, c.series.size());
      if (added) {
        c.title = fmt::format("{}: {}", thing.name, chart_of(metric));
        c.y_label = chart_of(metric);
        c.x_label = "run";
        c.x_linear = true;
        Series s;
        s.name = metric;
        s.colour = static_cast<int>(c.series.size());
        s.x.resize(runs.size());
        s.y.assign(runs.size(), NAN);
        for (size_t k = 0; k < runs.size(); ++k) s.x[k] = static_cast<double>(k + 1);
        c.series.push_back(std::move(s));
      }
      c.series[it->second].y[i] = value;
    }
  }
  out += "<div class=\"charts\">";
  for (const auto& [_, chart] : charts) out += chart.html();
  out += "</div>\n";
  std::string rows;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    if (r.findings.empty()) continue;
    std::string list;
    for (const auto& f : r.findings) list += (list.empty() ? "" : "<br>") + esc(f);
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", i + 1, esc(r.started_at),
                        esc(r.command), esc(r.verdict), list);
  }
  if (!rows.empty())
    out +=
        "<table class=\"findings\"><tr><th>run</th><th>started</th><th>command</th><th>verdict</th>"
        "<th>findings and drains</th></tr>" +
        rows + "</table>\n";
  return out;
}

}  // namespace

std::string history_section(const ReportOptions& options) {
  if (options.history_store.empty()) return "";
  std::string out = fmt::format(
      "<section class=\"run\" id=\"history\">\n<h2>History &mdash; {}</h2>\n<p class=\"note\">Each thing's figures "
      "in its last runs in the run store, run 1 the oldest (<code>railbench history THING</code> prints the same "
      "figures). A point's hover names the metric, the run and the value.</p>\n",
      esc(options.history_store));
  if (options.history.empty())
    out +=
        "<p class=\"note\">no thing chosen: name one with --history THING, or put a validate run with findings "
        "on the page</p>\n";
  for (const auto& [thing, runs] : options.history) out += thing_history(thing, runs);
  return out + "</section>\n";
}

}  // namespace railbench::report
