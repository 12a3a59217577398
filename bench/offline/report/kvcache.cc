// kvcache: per token count and mode the request time (p50/p99/p99.9) and GB/s, the ratio
// to one contiguous write of the same bytes, and the what-if table over line rates.
#include <algorithm>
#include <cmath>
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
  return out + what_if_table(d.value("what_if", nlohmann::json()));
}

}  // namespace railbench::report
