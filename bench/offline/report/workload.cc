// workload: the step (p50/p99, exposed communication, the ideal at line rate), where a
// step's time goes per group kind (a bar per kind, the median iteration), the middle
// step's timeline on its slowest rank, the per-kind op figures, the what-if over NIC
// speeds and the straggler tables.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "bench/offline/report/html.h"
#include "bench/offline/report/sections.h"

namespace railbench::report {

namespace {

using nlohmann::json;

constexpr const char* kKinds[] = {"tp", "pp", "dp", "ep", "edp"};

// The median iteration's time per kind as bars scaled to its step (script-free HTML).
std::string step_bars(const json& results) {
  if (!results.is_array() || results.empty()) return "";
  std::vector<const json*> sorted;
  for (const auto& r : results) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(),
            [](const json* a, const json* b) { return number_at(*a, "step_us") < number_at(*b, "step_us"); });
  const json& mid = *sorted[sorted.size() / 2];
  const double step = std::max(number_at(mid, "step_us"), 1e-9);
  std::string out = fmt::format(
      "<h3>Where the median step goes</h3><p class=\"note\">iteration {}: step {} ms, exposed communication {} ms, "
      "compute {} ms; time inside each kind's ops (the slowest rank's; async DP overlaps compute).</p>"
      "<table class=\"bars\">",
      num(number_at(mid, "iteration")), num(step / 1e3), num(number_at(mid, "exposed_us") / 1e3),
      num(number_at(mid, "compute_us") / 1e3));
  const json kinds = mid.value("kind_us", json::object());
  for (const char* k : kKinds) {
    const double us = number_at(kinds, k);
    if (!(us > 0)) continue;
    out += fmt::format(
        "<tr><td>{}</td><td style=\"width:24em\"><div style=\"background:#4a78b5;height:0.9em;width:{:.1f}%\" "
        "title=\"{} {} ms\"></div>"
        "</td><td>{} ms</td></tr>",
        k, std::min(100.0, 100 * us / step), k, num(us / 1e3), num(us / 1e3));
  }
  return out + "</table>\n";
}

// The middle timed step on the rank that set its pace: a lane per group kind (and one
// for compute), each op a bar from its start to its end with one hover text; async
// buckets drawn lighter, as they overlap the compute after them.
std::string step_timeline(const json& t) {
  const json& ops = member(t, "ops");
  if (!ops.is_array() || ops.empty()) return "";
  static const std::vector<std::pair<std::string, const char*>> kLanes = {{"compute", "#9a9a9a"}, {"tp", "#4a78b5"},
                                                                          {"pp", "#7a5ab5"},      {"dp", "#3a9a5b"},
                                                                          {"ep", "#c7792b"},      {"edp", "#b54a4a"}};
  std::vector<int> lane_row(kLanes.size(), -1);
  double step = number_at(t, "step_us");
  for (const auto& o : ops) {
    step = std::max(step, number_at(o, "start_us") + number_at(o, "us"));
    for (size_t l = 0; l < kLanes.size(); ++l)
      if (text_at(o, "lane") == kLanes[l].first) lane_row[l] = 0;
  }
  int rows = 0;
  for (int& r : lane_row)
    if (r == 0) r = rows++;
  if (!(step > 0) || rows == 0) return "";
  constexpr double kLeft = 64, kWidth = 900, kLane = 22, kBar = 16, kAxis = 18;
  const double height = rows * kLane + kAxis;
  std::string svg = fmt::format(
      "<svg class=\"timeline\" viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" "
      "aria-label=\"step timeline of rank {}\">",
      kLeft + kWidth + 8, height, num(number_at(t, "rank")));
  for (size_t l = 0; l < kLanes.size(); ++l)
    if (lane_row[l] >= 0)
      svg +=
          fmt::format("<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>", lane_row[l] * kLane + 14, kLanes[l].first);
  for (const auto& o : ops) {
    const auto lane =
        std::find_if(kLanes.begin(), kLanes.end(), [&](const auto& k) { return k.first == text_at(o, "lane"); });
    if (lane == kLanes.end()) continue;
    const double start = number_at(o, "start_us"), us = number_at(o, "us");
    const bool async = o.value("async", false);
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"{}><title>{} {}{}: {} ms "
        "at +{} ms</title></rect>",
        kLeft + kWidth * start / step, lane_row[static_cast<size_t>(lane - kLanes.begin())] * kLane + 3,
        std::max(0.5, kWidth * us / step), kBar, lane->second, async ? " fill-opacity=\"0.5\"" : "",
        esc(text_at(o, "type")), esc(text_at(o, "label")), async ? " (async)" : "", num(us / 1e3), num(start / 1e3));
  }
  for (int q = 0; q <= 4; ++q)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"{}\">{} ms</text>",
                       kLeft + kWidth * q / 4, height - 4,
                       q == 0   ? "start"
                       : q == 4 ? "end"
                                : "middle",
                       num(step * q / 4 / 1e3));
  const size_t shown = ops.size();
  const double in_step = number_at(t, "ops_in_step");
  return fmt::format(
             "<h3>A step's timeline</h3><p class=\"note\">iteration {}, rank {} ({}), the slowest rank of the middle "
             "timed step: {} ms; {}hover a bar for the op.</p>",
             num(number_at(t, "iteration")), num(number_at(t, "rank")), esc(text_at(t, "node")),
             num(number_at(t, "step_us") / 1e3),
             in_step > static_cast<double>(shown)
                 ? fmt::format("the {} longest of its {} ops; ", shown, num(in_step, 9))
                 : "") +
         svg + "</svg>\n";
}

std::string bytes_label(double bytes) {
  return std::isfinite(bytes) && bytes >= 0 ? size_label(static_cast<uint64_t>(std::llround(bytes))) : "-";
}

std::string kinds_table(const json& summary) {
  Table t({"kind", "bytes/step", "busbw (GB/s)", "op p50 (us)", "op p99 (us)", "op p99.9 (us)", "ops sampled"});
  for (const char* k : kKinds) {
    const json& s = member(member(summary, "kinds"), k);
    if (!s.is_object()) continue;
    const json& op = member(s, "op_us");
    t.row({k, bytes_label(number_at(s, "bytes_per_step")), num(number_at(s, "busbw_gbps")), num(number_at(op, "p50")),
           num(number_at(op, "p99")), num(number_at(op, "p99_9")), num(number_at(op, "count"), 9)});
  }
  return t.empty() ? "" : "<h3>Per group kind</h3>" + t.html();
}

std::string stragglers_table(const json& s) {
  if (!s.is_object()) return "";
  std::string out = "<h3>Stragglers</h3>";
  const std::string verdict = text_at(member(s, "verdict"), "text");
  if (!verdict.empty()) out += "<p><b>" + esc(verdict) + "</b></p>";
  for (const char* what : {"ranks", "links"}) {
    const json& list = member(s, what);
    if (!list.is_array() || list.empty()) continue;
    Table t({std::string(what) == "ranks" ? "rank (late arrival)" : "link (slow transfer)", "cost (ms)",
             "share of iterations"});
    for (size_t i = 0; i < list.size() && i < 10; ++i)
      t.row(
          {esc(text_at(list[i], "name")), num(number_at(list[i], "cost_us") / 1e3), pct(number_at(list[i], "share"))});
    out += t.html();
  }
  return out;
}

}  // namespace

std::string workload_section(const RunContext& ctx) {
  const auto& d = ctx.run.doc;
  const json cfg = d.value("config", json::object());
  const json spec = cfg.value("spec", json::object());
  const json summary = d.value("summary", json::object());
  std::string out = fmt::format(
      "<p class=\"note\">model {}, tp {} x pp {} x dp {} (ep {}), seq {}, {} micro-batch(es), "
      "zero {}, {} ops per step on rank 0.</p>\n",
      esc(text_at(spec, "model", "(trace)")), num(number_at(spec, "tp")), num(number_at(spec, "pp")),
      num(number_at(spec, "dp")), num(number_at(spec, "ep")), num(number_at(spec, "seq")),
      num(number_at(spec, "micro_batches")), num(number_at(spec, "zero")), num(number_at(cfg, "ops_per_step"), 9));
  if (!summary.is_object() || summary.empty()) return out + "<p class=\"note\">No step was measured.</p>\n";
  const json& step = member(summary, "step_us");
  out += fmt::format(
      "<p>step p50 <b>{} ms</b>, p99 {} ms; exposed communication p50 {} ms; ideal at {} Gb/s per rail "
      "{} ms (measured / ideal {}x).</p>\n",
      num(number_at(step, "p50") / 1e3), num(number_at(step, "p99") / 1e3),
      num(number_at(member(summary, "exposed_us"), "p50") / 1e3), num(number_at(cfg, "line_rate_gbps")),
      num(number_at(summary, "ideal_step_us") / 1e3), num(number_at(summary, "ideal_ratio"), 3));
  out += step_bars(d.value("results", json::array()));
  out += step_timeline(d.value("step_timeline", json()));
  out += kinds_table(summary);
  Table w({"Gb/s per rail", "ideal step (ms)"});
  for (const auto& r : summary.value("what_if", json::array()))
    w.row({num(number_at(r, "gbps_per_rail")), num(number_at(r, "ideal_step_us") / 1e3)});
  if (!w.empty()) out += "<h3>What if</h3>" + w.html();
  return out + stragglers_table(d.value("stragglers", json()));
}

}  // namespace railbench::report
