// The run's --timeline, if it has one: per rail, the busiest link's per-ms throughput
// against the same bytes averaged over 1 s and over 5 minutes (what an SNMP graph polled
// every 5 minutes shows), over the whole run and over its busiest second at full
// resolution with the collective iterations marked; and every link's figures in a table.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "bench/offline/report/html.h"
#include "bench/offline/report/sections.h"
#include "lib/core/errors.h"

namespace railbench::report {

namespace {

// A chart's x axis holds at most this many points; longer runs keep each column's
// busiest millisecond, so a burst never disappears between two columns.
constexpr size_t kMaxPoints = 1800;
constexpr int kWidth = 860, kHeight = 250, kLeft = 56, kRight = 12, kTop = 24, kBottom = 36;

struct Line {
  std::string name;
  std::string css;                            // stroke colour and dash
  std::vector<std::pair<double, double>> pt;  // (seconds, Gb/s)
};

double nice_step(double range, int ticks) {
  const double raw = range / ticks;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

std::string chart(const std::string& title, double x0, double x1, const std::vector<Line>& lines,
                  const std::vector<std::pair<double, double>>& marks) {
  double ymax = 0;
  for (const auto& l : lines)
    for (const auto& [x, y] : l.pt) ymax = std::max(ymax, y);
  if (!(ymax > 0)) ymax = 1;
  ymax *= 1.08;
  if (!(x1 > x0)) x1 = x0 + 1e-3;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto X = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * pw; };
  auto Y = [&](double y) { return kTop + ph - y / ymax * ph; };
  std::string svg = fmt::format(
      "<svg class=\"linechart timeline\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">"
      "<text class=\"ctitle\" x=\"{}\" y=\"14\">{}</text>",
      kWidth, kHeight, kWidth, kHeight, kLeft, esc(title));
  const double ystep = nice_step(ymax, 5);
  for (double y = 0; y <= ymax; y += ystep)
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/><text class=\"tick\" "
        "x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
        X(x0), X(x1), Y(y), Y(y), X(x0) - 4, Y(y) + 3, num(y));
  const double xstep = nice_step(x1 - x0, 8);
  for (double x = std::ceil(x0 / xstep) * xstep; x <= x1 + 1e-9; x += xstep)
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/><text class=\"tick\" "
        "x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
        X(x), X(x), Y(0), Y(ymax), X(x), Y(0) + 13, num(x));
  svg += fmt::format(
      "<text class=\"axis\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">time since the run's start (s)</text>"
      "<text class=\"axis\" transform=\"translate(12,{:.1f}) rotate(-90)\" text-anchor=\"middle\">Gb/s</text>",
      kLeft + pw / 2, kHeight - 4, kTop + ph / 2);
  for (const auto& [s, e] : marks)
    svg += fmt::format("<line class=\"iter\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#999\"/>", X(s),
                       X(s), kTop + ph, kTop + ph + 5);
  std::string legend;
  for (const auto& l : lines) {
    std::string points;
    for (const auto& [x, y] : l.pt) points += fmt::format("{:.1f},{:.1f} ", X(x), Y(y));
    svg += fmt::format("<polyline class=\"tl\" fill=\"none\" style=\"{}\" points=\"{}\"><title>{}</title></polyline>",
                       l.css, points, esc(l.name));
    legend += fmt::format(
        "<span class=\"key\"><svg width=\"22\" height=\"8\"><line x1=\"0\" x2=\"22\" y1=\"4\" y2=\"4\" "
        "style=\"{}\"/></svg>{}</span>",
        l.css, esc(l.name));
  }
  svg += "</svg>";
  return "<figure>" + svg + "<figcaption class=\"legend\">" + legend + "</figcaption></figure>\n";
}

// Per-ms values over [from, to) as (seconds, Gb/s), at most kMaxPoints: each point the
// busiest bucket of its column.
std::vector<std::pair<double, double>> per_ms(const uint64_t* b, size_t from, size_t to, uint32_t bucket_us) {
  std::vector<std::pair<double, double>> out;
  const size_t n = to - from;
  const size_t per = std::max<size_t>(1, (n + kMaxPoints - 1) / kMaxPoints);
  const double bucket_s = bucket_us * 1e-6;
  for (size_t i = from; i < to; i += per) {
    uint64_t peak = 0;
    for (size_t j = i; j < std::min(to, i + per); ++j) peak = std::max(peak, b[j]);
    out.emplace_back(static_cast<double>(i) * bucket_s, static_cast<double>(peak) * 8 / bucket_s / 1e9);
  }
  return out;
}

// Window averages as a step line over [from, to).
std::vector<std::pair<double, double>> steps(const std::vector<double>& avg, double window_s, double from_s,
                                             double to_s) {
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < avg.size(); ++i) {
    const double s = static_cast<double>(i) * window_s, e = s + window_s;
    if (e <= from_s || s >= to_s) continue;
    out.emplace_back(std::max(s, from_s), avg[i]);
    out.emplace_back(std::min(e, to_s), avg[i]);
  }
  return out;
}

const char* kMsStyle = "stroke:#0072b2;stroke-width:1";
const char* kSecStyle = "stroke:#e69f00;stroke-width:2.5";
const char* kFiveStyle = "stroke:#000;stroke-width:2;stroke-dasharray:6 4";

std::string link_charts(const TimelineData& d, uint32_t rank, uint32_t rail, TimelineSeries s,
                        const std::string& host) {
  const uint64_t* b = d.series(rank, rail, s);
  const double bucket_s = d.bucket_us * 1e-6;
  const size_t per_s = std::max<size_t>(1, 1000000 / d.bucket_us);
  const auto sec = window_averages_gbps(b, d.buckets, per_s, d.bucket_us);
  const auto five = window_averages_gbps(b, d.buckets, per_s * 300, d.bucket_us);
  const TimelineWindows w = timeline_windows(b, d.buckets, d.bucket_us);
  const double run_s = static_cast<double>(d.buckets) * bucket_s;
  const std::string who = fmt::format("rail {}, rank {} ({}), {}", rail, rank, host, to_string(s));
  std::string html = fmt::format(
      "<p class=\"note\">{}: peak 1 ms <b>{} Gb/s</b>, peak 1 s <b>{} Gb/s</b>, 5 min average <b>{} Gb/s</b> "
      "(the 1 ms peak is {}x what the 5 minute graph shows); it moved data in {} of its milliseconds.</p>",
      esc(who), num(w.peak_ms_gbps), num(w.peak_1s_gbps), num(w.peak_5min_gbps, 4),
      w.peak_5min_gbps > 0 ? num(w.peak_ms_gbps / w.peak_5min_gbps) : std::string("-"), pct(w.busy_fraction));
  std::vector<Line> whole{{"per 1 ms (busiest ms of each column)", kMsStyle, per_ms(b, 0, d.buckets, d.bucket_us)},
                          {"1 s average", kSecStyle, steps(sec, 1.0, 0, run_s)},
                          {"5 min average (SNMP graph)", kFiveStyle, steps(five, 300.0, 0, run_s)}};
  html += "<div class=\"charts\">";
  html += chart("whole run: " + who, 0, run_s, whole, {});
  // The busiest second, every millisecond of it.
  size_t best = 0;
  for (size_t i = 0; i < sec.size(); ++i)
    if (sec[i] > sec[best]) best = i;
  const size_t from = best * per_s, to = std::min<size_t>(d.buckets, from + per_s);
  std::vector<std::pair<double, double>> marks;
  for (const auto& m : d.marks[rank]) {
    const double st = static_cast<double>(m.start_ns) * 1e-9;
    if (st >= static_cast<double>(from) * bucket_s && st < static_cast<double>(to) * bucket_s)
      marks.emplace_back(st, static_cast<double>(m.end_ns) * 1e-9);
  }
  std::vector<Line> zoom{
      {"per 1 ms", kMsStyle, per_ms(b, from, to, d.bucket_us)},
      {"1 s average", kSecStyle,
       steps(sec, 1.0, static_cast<double>(from) * bucket_s, static_cast<double>(to) * bucket_s)},
      {"5 min average", kFiveStyle,
       steps(five, 300.0, static_cast<double>(from) * bucket_s, static_cast<double>(to) * bucket_s)}};
  html += chart(fmt::format("busiest second ({}-{} s){}", best, best + 1,
                            marks.empty() ? "" : fmt::format(", {} iterations ticked below", marks.size())),
                static_cast<double>(from) * bucket_s, static_cast<double>(to) * bucket_s, zoom, marks);
  html += "</div>\n";
  return html;
}

}  // namespace

void attach_timeline(RunDocument& run) {
  const auto& field = member(run.doc, "timeline");
  const std::string file = text_at(field, "file");
  if (file.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path path = file;
  // Moved with its results file: look beside it too.
  if (!fs::exists(path, ec) && path.is_relative()) {
    const fs::path beside = fs::path(run.path).parent_path() / fs::path(file).filename();
    if (fs::exists(beside, ec)) path = beside;
  }
  if (!fs::exists(path, ec)) {
    run.timeline_note = fmt::format(
        "The run recorded a timeline in {}, which is not there (nor beside the results file): copy it next to "
        "the results file to see it here.",
        file);
    return;
  }
  run.timeline = std::make_shared<TimelineData>(read_timeline_file(path.string()));
  if (run.timeline->ranks == 0 || run.timeline->marks.size() != run.timeline->ranks)
    throw UsageError(fmt::format("{}: the timeline {} holds no ranks; rerun with --timeline", run.path, file));
}

std::string timeline_section(const RunContext& ctx) {
  const RunDocument& run = ctx.run;
  if (!run.timeline_note.empty()) return "<h3>Timeline</h3><p class=\"note\">" + esc(run.timeline_note) + "</p>\n";
  if (!run.timeline) return "";
  const TimelineData& d = *run.timeline;
  const auto& world = member(run.doc, "world");
  const auto labels = rank_labels(world, static_cast<int>(d.ranks));
  std::string html = fmt::format(
      "<h3 id=\"{}-timeline\">Timeline: what the 5 minute graph hides</h3><p class=\"note\">{} x {} us buckets "
      "from {} ({} ranks, {} rails). tx: the bytes of this rank's completed sends, writes and collectives on the "
      "rail; iface_tx: the rail's interface counter (all its traffic, headers included). A completion counts "
      "all its bytes in the millisecond it completes, so messages that take longer than a millisecond show as "
      "spikes: read the interface series where there is one. 5 min average: the bytes of each 5 minute window "
      "over the full 5 minutes, as a poller every 5 minutes sees them.</p>\n",
      ctx.id, d.buckets, d.bucket_us, esc(text_at(member(run.doc, "timeline"), "file")), d.ranks, d.rails);
  Table table({"rank", "rail", "series", "bytes", "peak 1 ms (Gb/s)", "peak 1 s (Gb/s)", "5 min (Gb/s)", "1 ms / 5 min",
               "busy ms"});
  for (uint32_t rail = 0; rail < d.rails; ++rail) {
    for (auto s : {TimelineSeries::tx, TimelineSeries::iface_tx}) {
      int best = -1;
      double best_peak = -1;
      for (uint32_t r = 0; r < d.ranks; ++r) {
        if (!d.has(r, rail, s)) continue;
        const TimelineWindows w = timeline_windows(d.series(r, rail, s), d.buckets, d.bucket_us);
        if (w.bytes == 0) continue;
        table.row({labels[r], fmt::format("{}", rail), to_string(s), fmt::format("{}", w.bytes), num(w.peak_ms_gbps),
                   num(w.peak_1s_gbps), num(w.peak_5min_gbps, 4),
                   w.peak_5min_gbps > 0 ? num(w.peak_ms_gbps / w.peak_5min_gbps) : std::string("-"),
                   pct(w.busy_fraction)});
        if (w.peak_ms_gbps > best_peak) {
          best_peak = w.peak_ms_gbps;
          best = static_cast<int>(r);
        }
      }
      if (best >= 0 && rail < 8)
        html += link_charts(d, static_cast<uint32_t>(best), rail, s, labels[static_cast<size_t>(best)]);
    }
  }
  if (!table.empty()) html += "<details><summary>Every link</summary>" + table.html() + "</details>\n";
  return html;
}

}  // namespace railbench::report
