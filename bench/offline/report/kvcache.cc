// kvcache: per token count and mode the request time (p50/p99/p99.9) and GB/s, the ratio
// to one contiguous write of the same bytes, and the what-if table over line rates; for
// --serve --find-max-rate, the latency against offered load with the knee marked.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "bench/offline/report/html.h"
#include "bench/offline/report/sections.h"
#include "bench/offline/report/svg.h"

namespace railbench::report {

namespace {

// Modes in the order the tables print them: the contiguous reference first.
std::vector<std::string> modes_of(const nlohmann::json& results) {
  std::vector<std::string> out;
  for (const auto& r : results) {
    const std::string m = text_at(r, "mode");
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  }
  return out;
}

std::vector<Series> mode_series(const nlohmann::json& results, bool time, bool baseline) {
  std::vector<Series> out;
  int colour = 0;
  for (const auto& mode : modes_of(results)) {
    Series s{mode + (baseline ? " (baseline)" : ""), {}, {}, {}, {}, colour++, baseline};
    for (const auto& r : results) {
      if (text_at(r, "mode") != mode) continue;
      s.x.push_back(number_at(r, "tokens"));
      const auto t = r.value("request_us", nlohmann::json::object());
      s.y.push_back(time ? stat(t, "p50") / 1000 : number_at(r, "gbps"));
      if (time && !baseline) {
        s.lo.push_back(stat(t, "p50") / 1000);
        s.hi.push_back(stat(t, "p99_9") / 1000);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

const nlohmann::json* same_request(const nlohmann::json& results, double tokens, const std::string& mode) {
  for (const auto& r : results)
    if (number_at(r, "tokens") == tokens && text_at(r, "mode") == mode) return &r;
  return nullptr;
}

std::string what_if_table(const nlohmann::json& w) {
  if (!w.is_object() || !w.contains("rows")) return "";
  std::string out = fmt::format(
      "<h3>What if</h3><p class=\"note\">Each preset's request at line rate, divided by the {} mode's efficiency "
      "measured here ({}), kv dtype {}; ms.</p>",
      esc(text_at(w, "mode", "per-block")), num(number_at(w, "efficiency"), 2), esc(text_at(w, "kv_dtype", "?")));
  Table t({"model", "tokens", "bytes", "400 Gb/s", "800 Gb/s", "1600 Gb/s"});
  for (const auto& r : w["rows"])
    t.row({esc(text_at(r, "model")), num(number_at(r, "tokens"), 9), num(number_at(r, "bytes"), 15),
           num(number_at(r, "ms_at_400gbps")), num(number_at(r, "ms_at_800gbps")),
           num(number_at(r, "ms_at_1600gbps"))});
  return out + t.html();
}

// --serve --find-max-rate: the total time's p50 and its value at the SLO's percentile
// against the offered rate (the mean of the probes at a rate), the knee (the highest rate
// meeting the SLO) and the measured capacity as vertical lines, and every probe in a table
// with the knee's rows marked and each miss's reason.
std::string serve_curve(const nlohmann::json& m) {
  if (!m.is_object() || !m.contains("curve") || m["curve"].empty()) return "";
  const std::string slo = text_at(m, "slo", "?");
  std::map<double, std::array<double, 3>> by_rate;  // sum of p50, sum at the SLO, probes (ms)
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& p : m["curve"]) {
    auto& a = by_rate[number_at(p, "rate")];
    a[0] += number_at(p, "p50_us") / 1000;
    a[1] += number_at(p, "slo_us") / 1000;
    a[2] += 1;
  }
  Series p50{"total p50", {}, {}, {}, {}, 0, false}, at_slo{"total at " + slo, {}, {}, {}, {}, 1, false};
  for (const auto& [rate, a] : by_rate) {
    p50.x.push_back(rate);
    p50.y.push_back(a[0] / a[2]);
    at_slo.x.push_back(rate);
    at_slo.y.push_back(a[1] / a[2]);
    lo = std::min({lo, a[0] / a[2], a[1] / a[2]});
    hi = std::max({hi, a[0] / a[2], a[1] / a[2]});
  }
  const double knee = number_at(m, "max_rate");
  Series mark{
      fmt::format("knee: max rate meeting {} ({} req/s)", slo, num(knee)), {knee, knee}, {lo, hi}, {}, {}, 2, false};
  LineChart chart{"total time against offered load", "total time (ms)", true, {p50, at_slo, mark}};
  const double capacity = number_at(m, "capacity_rps");
  if (capacity > 0)
    chart.series.push_back(Series{
        fmt::format("measured capacity ({} req/s)", num(capacity)), {capacity, capacity}, {lo, hi}, {}, {}, 3, false});
  chart.x_label = "offered load (req/s)";
  chart.x_bytes = false;
  std::string out = fmt::format(
      "<h3 id=\"kvcache-max-rate\">Latency against offered load</h3><p class=\"note\">--find-max-rate {}: the "
      "highest rate meeting it is {} req/s{}{}; below the knee the total stays near the transfer time, past it "
      "the queue grows.</p>",
      esc(slo), num(knee),
      capacity > 0 ? fmt::format(", {} of the measured capacity of {} req/s", num(number_at(m, "capacity_share"), 2),
                                 num(capacity))
                   : "",
      m.contains("fraction_of_capacity")
          ? fmt::format(", {} of the analytical capacity", num(number_at(m, "fraction_of_capacity"), 2))
          : "");
  Table t({"offered (req/s)", "carried (req/s)", "total p50 (ms)", "total at " + esc(slo) + " (ms)", "SLO"});
  for (const auto& p : m["curve"]) {
    const bool met = p.value("met", false);
    t.row({num(number_at(p, "rate")), num(number_at(p, "carried_rps")), num(number_at(p, "p50_us") / 1000, 4),
           num(number_at(p, "slo_us") / 1000, 4),
           number_at(p, "rate") == knee ? "met (knee)"
           : met                        ? "met"
                 : "missed" + (text_at(p, "why", "").empty() ? "" : ": " + esc(text_at(p, "why", "")))},
          number_at(p, "rate") == knee ? "warn"
          : met                        ? ""
                                       : "bad");
  }
  return out + "<div class=\"charts\">" + chart.html() + "</div>\n" + t.html();
}

// --serve: each rail's utilisation in every run (every probe of --find-max-rate): the KV
// bytes it carried over the serving window in GB/s and, with --line-rate, the fraction of
// its line rate, so an idle or saturated rail shows beside the latency.
std::string serve_rails(const nlohmann::json& results) {
  Table t({"run", "offered (req/s)", "rail", "bytes", "GB/s", "of line rate"});
  size_t rows = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& e = results[i];
    if (!e.contains("rails") || !e["rails"].is_array()) continue;
    const std::string run = e.contains("probe") ? fmt::format("probe {}", num(number_at(e, "probe"))) : "serve";
    for (const auto& r : e["rails"]) {
      const double f = number_at(r, "line_fraction");
      t.row({run, num(number_at(e, "offered_rps")), num(number_at(r, "rail")), num(number_at(r, "bytes"), 15),
             num(number_at(r, "gbps"), 4), std::isnan(f) ? "-" : num(f, 3)},
            !std::isnan(f) && f > 0.9 ? "warn" : "");
      ++rows;
    }
  }
  if (rows == 0) return "";
  return "<h3 id=\"kvcache-rails\">Rail utilisation</h3><p class=\"note\">Per rail: the KV bytes the prefill ranks "
         "posted on it over the serving window (first arrival to the last ack), and with --line-rate the fraction "
         "of the rail's line rate between the pools (the smaller pool's links x the rate).</p>" +
         t.html();
}

}  // namespace

std::string kvcache_section(const RunContext& ctx) {
  const auto& d = ctx.run.doc;
  const auto results = d.value("results", nlohmann::json::array());
  const auto base = ctx.baseline ? ctx.baseline->doc.value("results", nlohmann::json::array()) : nlohmann::json();
  const auto cfg = d.value("config", nlohmann::json::object());
  std::string out = fmt::format(
      "<p class=\"note\">model {} ({}), {} bytes per token ({}), {} tokens per block, {} request(s) per pair per "
      "mode, {} in flight, protocol {}.</p>\n",
      esc(text_at(cfg, "model", "custom")), esc(text_at(cfg, "attention", "?")),
      num(number_at(cfg, "bytes_per_token"), 12), esc(text_at(cfg, "formula", "")), num(number_at(cfg, "block_tokens")),
      num(number_at(cfg, "requests")), num(number_at(cfg, "concurrency")), esc(text_at(cfg, "protocol", "?")));
  if (results.empty()) return out + "<p class=\"note\">No request was measured.</p>\n";
  LineChart gbps{"GB/s per mode", "GB/s (bytes/req / p50)", false, mode_series(results, false, false)};
  LineChart time{"request time (p50, band to p99.9)", "request time (ms)", true, mode_series(results, true, false)};
  gbps.x_label = time.x_label = "tokens per request";
  gbps.x_bytes = time.x_bytes = false;
  if (ctx.baseline) {
    for (auto& s : mode_series(base, false, true)) gbps.series.push_back(std::move(s));
    for (auto& s : mode_series(base, true, true)) time.series.push_back(std::move(s));
  }
  out += "<div class=\"charts\">" + gbps.html() + time.html() + "</div>\n";
  std::vector<std::string> head{"tokens",   "mode",       "bytes/req", "blocks/req", "writes/req", "p50 (ms)",
                                "p99 (ms)", "p99.9 (ms)", "GB/s",      "blocks/s",   "vs 1 write", "#wrong"};
  if (ctx.baseline) head.insert(head.end(), {"baseline GB/s", "change"});
  Table t(head);
  for (const auto& r : results) {
    const auto rq = r.value("request_us", nlohmann::json::object());
    const double ratio = number_at(r, "ratio_to_contiguous"), wrong = number_at(r, "wrong");
    std::vector<std::string> cells{
        num(number_at(r, "tokens"), 9),
        esc(text_at(r, "mode")),
        num(number_at(r, "bytes"), 15),
        num(number_at(r, "blocks"), 9),
        num(number_at(r, "ops"), 9),
        num(stat(rq, "p50") / 1000, 4),
        num(stat(rq, "p99") / 1000, 4),
        num(stat(rq, "p99_9") / 1000, 4),
        num(number_at(r, "gbps")),
        num(number_at(r, "blocks_per_s")),
        fmt::format("<span class=\"ratio\"><span style=\"width:{:.0f}px\"></span></span> {}",
                    std::isnan(ratio) ? 0.0 : std::clamp(ratio, 0.0, 1.5) * 60, num(ratio, 2)),
        std::isnan(wrong) ? "-" : fmt::format("{}", static_cast<uint64_t>(wrong))};
    bool regressed = false;
    if (ctx.baseline) {
      const nlohmann::json* b = same_request(base, number_at(r, "tokens"), text_at(r, "mode"));
      const double then = b ? number_at(*b, "gbps") : NAN, now = number_at(r, "gbps");
      regressed = now < then * (1 - ctx.options.regression_fraction);
      cells.push_back(num(then));
      cells.push_back(regressed ? "<b>" + change(now, then) + "</b>" : change(now, then));
    }
    t.row(cells, wrong > 0 ? "bad" : regressed ? "warn" : "");
  }
  out += "<h3>Every token count and mode</h3>" + t.html();
  out += serve_rails(results);
  out += serve_curve(d.value("max_rate", nlohmann::json()));
  return out + what_if_table(d.value("what_if", nlohmann::json()));
}

}  // namespace railbench::report
