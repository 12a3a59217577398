// sendrecv: latency p50/p99/p99.9 and bandwidth (a->b, b->a, both) against size, a line
// per pair when there are few, the median pair with a band to the worst when there are
// many; and per rail the rank x rank matrix of bandwidth at one size.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "bench/offline/report/colour.h"
#include "bench/offline/report/html.h"
#include "bench/offline/report/sections.h"
#include "bench/offline/report/svg.h"
#include "lib/core/stats.h"

namespace railbench::report {

namespace {

// Beyond this many pairs (x rails) a chart shows the median and the worst, not every pair.
constexpr size_t kMaxPairLines = 8;

using PairKey = std::tuple<int, int, int>;  // a, b, rail

struct Metric {
  const char* field;  // summary field of the pair record
  const char* stat;   // which statistic of it
  const char* title;
  const char* unit;
  bool higher_is_better;
};

constexpr Metric kLatency[] = {{"latency_us", "p50", "latency p50", "latency (us)", false},
                               {"latency_us", "p99", "latency p99", "latency (us)", false},
                               {"latency_us", "p99_9", "latency p99.9", "latency (us)", false}};
constexpr Metric kBandwidth[] = {{"bw_ab_gbps", "p50", "bandwidth a->b (median window)", "GB/s", true},
                                 {"bw_ba_gbps", "p50", "bandwidth b->a (median window)", "GB/s", true},
                                 {"bw_bidir_gbps", "p50", "bandwidth both ways (median window)", "GB/s", true}};

PairKey key_of(const nlohmann::json& p) {
  return {p.value("a", -1), p.value("b", -1), p.value("rail", 0)};
}

std::map<PairKey, int> pair_keys(const nlohmann::json& results) {
  std::map<PairKey, int> keys;
  for (const auto& r : results)
    for (const auto& p : r.value("pairs", nlohmann::json::array())) keys.emplace(key_of(p), 0);
  int i = 0;
  for (auto& [k, v] : keys) v = i++;
  return keys;
}

std::string pair_name(const PairKey& k) {
  return fmt::format("{}<->{} rail{}", std::get<0>(k), std::get<1>(k), std::get<2>(k));
}

// One chart's series: per pair, or the median pair with a band out to the worst.
std::vector<Series> metric_series(const nlohmann::json& results, const Metric& m, bool per_pair, bool baseline) {
  std::vector<Series> out;
  const std::string suffix = baseline ? " (baseline)" : "";
  if (per_pair) {
    for (const auto& [key, index] : pair_keys(results)) {
      Series s{pair_name(key) + suffix, {}, {}, {}, {}, index, baseline};
      for (const auto& r : results) {
        for (const auto& p : r.value("pairs", nlohmann::json::array())) {
          if (key_of(p) != key) continue;
          s.x.push_back(static_cast<double>(r.value("bytes", uint64_t{0})));
          s.y.push_back(stat(p.value(m.field, nlohmann::json::object()), m.stat));
        }
      }
      out.push_back(std::move(s));
    }
    return out;
  }
  Series med{"median pair" + suffix, {}, {}, {}, {}, 0, baseline};
  Series worst{"worst pair" + suffix, {}, {}, {}, {}, 5, baseline};
  for (const auto& r : results) {
    std::vector<double> v;
    for (const auto& p : r.value("pairs", nlohmann::json::array())) {
      const double x = stat(p.value(m.field, nlohmann::json::object()), m.stat);
      if (!std::isnan(x)) v.push_back(x);
    }
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    const double middle = median(v), bad = m.higher_is_better ? v.front() : v.back();
    med.x.push_back(static_cast<double>(r.value("bytes", uint64_t{0})));
    med.y.push_back(middle);
    worst.x.push_back(med.x.back());
    worst.y.push_back(bad);
    if (!baseline) {
      med.lo.push_back(std::min(middle, bad));
      med.hi.push_back(std::max(middle, bad));
    }
  }
  out.push_back(std::move(med));
  out.push_back(std::move(worst));
  return out;
}

// A rail's line rate in GB/s from the ranks' NICs (0: not known, e.g. tcp over lo).
double line_rate_gbs(const nlohmann::json& world, int rail) {
  double best = 0;
  for (const auto& r : world.value("ranks", nlohmann::json::array()))
    for (const auto& nic : r.value("rails", nlohmann::json::array()))
      if (nic.value("index", -1) == rail) best = std::max(best, number_at(nic, "link_gbps") / 8);
  return std::isnan(best) ? 0 : best;
}

std::string rail_matrices(const RunContext& ctx, const nlohmann::json& results) {
  std::string note;
  const nlohmann::json* e = entry_at_size(results, ctx.options.matrix_bytes, note);
  const auto world = ctx.run.doc.value("world", nlohmann::json::object());
  const int n = world.value("size", 0);
  if (!e || n <= 1 || n > 4096) return "";
  std::map<int, std::vector<const nlohmann::json*>> by_rail;
  for (const auto& p : member(*e, "pairs")) by_rail[p.value("rail", 0)].push_back(&p);
  const uint64_t bytes = e->value("bytes", uint64_t{0});
  std::string out = fmt::format("<h3>Pair matrices at {}</h3>", esc(size_label(bytes)));
  if (!note.empty()) out += "<p class=\"note\">" + esc(note) + "</p>";
  out += "<div class=\"charts\">";
  for (const auto& [rail, pairs] : by_rail) {
    double anchor = line_rate_gbs(world, rail);
    std::string anchor_text = fmt::format("line rate {} GB/s", num(anchor));
    if (!(anchor > 0)) {
      for (const auto* p : pairs)
        for (const char* f : {"bw_ab_gbps", "bw_ba_gbps"})
          anchor = std::max(anchor, stat(p->value(f, nlohmann::json::object()), "p50"));
      anchor_text = fmt::format("the best pair, {} GB/s (no line rate in the file)", num(anchor));
    }
    Heatmap h;
    h.id = fmt::format("{}-rail{}", ctx.id, rail);
    h.title = fmt::format("rail {}: GB/s, row sends to column", rail);
    h.corner = "from\\to";
    h.row_labels = h.col_labels = rank_labels(world, n);
    h.group_starts = host_starts(world, n);
    h.cells.assign(static_cast<size_t>(n) * n, HeatCell{NAN, "", "missing", "", ""});
    for (int i = 0; i < n; ++i) h.cells[static_cast<size_t>(i) * n + i] = HeatCell{NAN, "", "self", "", ""};
    for (const auto* p : pairs) {
      const int a = p->value("a", -1), b = p->value("b", -1);
      if (a < 0 || b < 0 || a >= n || b >= n) continue;
      const auto lat = p->value("latency_us", nlohmann::json::object());
      for (const auto& [from, to, field] : {std::tuple{a, b, "bw_ab_gbps"}, std::tuple{b, a, "bw_ba_gbps"}}) {
        const double v = stat(p->value(field, nlohmann::json::object()), "p50");
        HeatCell& c = h.cells[static_cast<size_t>(from) * n + to];
        c.value = v;
        c.classes = p->value("wrong", 0) > 0 ? "bad" : "";
        c.fill = std::isnan(v) ? "" : viridis_class(v / anchor);
        c.text = num(v, 2);
        c.title = fmt::format(
            "rank {} -> rank {}, rail {}, {}: {} GB/s ({} of {}); both ways {} GB/s; latency p50 {} us, p99 {} us, "
            "p99.9 {} us; {} wrong bytes",
            from, to, rail, size_label(bytes), num(v), pct(v / anchor), anchor_text,
            num(stat(p->value("bw_bidir_gbps", nlohmann::json::object()), "p50")), num(stat(lat, "p50")),
            num(stat(lat, "p99")), num(stat(lat, "p99_9")), p->value("wrong", 0));
      }
    }
    out +=
        "<div>" + colour_key({viridis(0), viridis(0.5), viridis(1)}, "0", "", anchor_text, true) + h.svg() + "</div>";
  }
  return out + "</div>\n";
}

}  // namespace

std::string sendrecv_section(const RunContext& ctx) {
  const auto results = ctx.run.doc.value("results", nlohmann::json::array());
  if (results.empty()) return "<p class=\"note\">No size was measured.</p>\n";
  const auto base = ctx.baseline ? ctx.baseline->doc.value("results", nlohmann::json::array()) : nlohmann::json();
  const bool per_pair = pair_keys(results).size() <= kMaxPairLines;
  std::string out = fmt::format("<p class=\"note\">{} pair(s) x rail(s): {}.</p>", pair_keys(results).size(),
                                per_pair ? "one line per pair" : "the median pair, with a band out to the worst");
  for (const auto* group : {kLatency, kBandwidth}) {
    out += "<div class=\"charts\">";
    for (int i = 0; i < 3; ++i) {
      const Metric& m = group[i];
      LineChart c{m.title, m.unit, !m.higher_is_better, metric_series(results, m, per_pair, false)};
      if (ctx.baseline)
        for (auto& s : metric_series(base, m, per_pair, true)) c.series.push_back(std::move(s));
      out += c.html(440, 260);
    }
    out += "</div>\n";
  }
  return out + rail_matrices(ctx, results);
}

}  // namespace railbench::report
