// allreduce, allgather, reducescatter, alltoall: busbw and iteration time against size
// for both placements, the algorithm per size, and for alltoall the step time of every
// link (src -> dst) at one size.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/offline/report/colour.h"
#include "bench/offline/report/html.h"
#include "bench/offline/report/sections.h"
#include "bench/offline/report/svg.h"
#include "lib/core/stats.h"

namespace railbench::report {

namespace {

constexpr std::pair<const char*, const char*> kPlacements[] = {{"out_of_place", "out of place"},
                                                               {"in_place", "in place"}};

// One series per placement of `field` of each size (busbw, or the iteration time's p50
// with its p50..p99 band).
std::vector<Series> placement_series(const nlohmann::json& results, bool iteration_time, bool baseline) {
  std::vector<Series> out;
  int colour = 0;
  for (const auto& [key, name] : kPlacements) {
    Series s{std::string(name) + (baseline ? " (baseline)" : ""), {}, {}, {}, {}, colour++, baseline};
    bool any = false;
    for (const auto& r : results) {
      if (!r.contains(key)) continue;
      any = true;
      const auto& side = r[key];
      s.x.push_back(static_cast<double>(r.value("bytes", uint64_t{0})));
      if (iteration_time) {
        const auto it = side.value("iteration_us", nlohmann::json::object());
        s.y.push_back(stat(it, "p50"));
        if (!baseline) {
          s.lo.push_back(stat(it, "p50"));
          s.hi.push_back(stat(it, "p99"));
        }
      } else {
        s.y.push_back(number_at(side, "busbw_gbps"));
      }
    }
    if (any) out.push_back(std::move(s));
  }
  return out;
}

std::string size_table(const RunContext& ctx, const nlohmann::json& results, const nlohmann::json* base_results) {
  std::vector<std::string> head{"size", "count", "type", "redop", "algo"};
  for (const auto& [key, name] : kPlacements)
    for (const char* h : {"time (us)", "algbw (GB/s)", "busbw (GB/s)", "p50 (us)", "p99 (us)", "#wrong"})
      head.push_back(fmt::format("{}<br>{}", name, h));
  if (base_results)
    for (const auto& [key, name] : kPlacements) head.push_back(fmt::format("{}<br>busbw vs baseline", name));
  Table t(head);
  for (const auto& r : results) {
    const uint64_t bytes = r.value("bytes", uint64_t{0});
    std::vector<std::string> cells{esc(size_label(bytes)), fmt::format("{}", r.value("count", uint64_t{0})),
                                   esc(text_at(r, "type")), esc(text_at(r, "redop")), esc(text_at(r, "algo"))};
    bool wrong = false, regressed = false;
    for (const auto& [key, name] : kPlacements) {
      const auto side = r.value(key, nlohmann::json::object());
      const auto it = side.value("iteration_us", nlohmann::json::object());
      const double w = number_at(side, "wrong");
      wrong = wrong || w > 0;
      for (double v : {number_at(side, "time_us"), number_at(side, "algbw_gbps"), number_at(side, "busbw_gbps"),
                       stat(it, "p50"), stat(it, "p99")})
        cells.push_back(num(v, 4));
      cells.push_back(std::isnan(w) ? "-" : fmt::format("{}", static_cast<uint64_t>(w)));
    }
    if (base_results) {
      const nlohmann::json* b = same_size(*base_results, bytes);
      for (const auto& [key, name] : kPlacements) {
        const double now = number_at(r.value(key, nlohmann::json::object()), "busbw_gbps");
        const double then = b ? number_at(b->value(key, nlohmann::json::object()), "busbw_gbps") : NAN;
        const bool worse = now < then * (1 - ctx.options.regression_fraction);
        regressed = regressed || worse;
        cells.push_back(worse ? "<b>" + change(now, then) + "</b>" : change(now, then));
      }
    }
    t.row(cells, wrong ? "bad" : regressed ? "warn" : "");
  }
  return t.html();
}

// The alltoall src -> dst step-time matrix at one size, coloured by how far each link
// is from the median link (the median and faster: yellow; twice the median: half way).
std::string step_matrix(const RunContext& ctx, const nlohmann::json& results) {
  std::string note;
  const nlohmann::json* e = entry_at_size(results, ctx.options.matrix_bytes, note);
  if (!e || !e->contains("pairs")) return "";
  const int n = ctx.run.doc.value("world", nlohmann::json::object()).value("size", 0);
  if (n <= 0 || n > 4096) return "";
  std::vector<double> p50(static_cast<size_t>(n) * n, NAN);
  std::vector<const nlohmann::json*> at(p50.size(), nullptr);
  for (const auto& p : (*e)["pairs"]) {
    const int s = p.value("src", -1), d = p.value("dst", -1);
    if (s < 0 || d < 0 || s >= n || d >= n) continue;
    p50[static_cast<size_t>(s) * n + d] = stat(p.value("step_us", nlohmann::json::object()), "p50");
    at[static_cast<size_t>(s) * n + d] = &p;
  }
  std::vector<double> measured;
  for (double v : p50)
    if (!std::isnan(v)) measured.push_back(v);
  if (measured.empty()) return "";
  const double reference = median(std::move(measured));
  Heatmap h;
  h.id = ctx.id + "-steps";
  h.title = fmt::format("step time src &#8594; dst at {} (p50, us)", esc(size_label(e->value("bytes", uint64_t{0}))));
  h.corner = "src\\dst";
  h.row_labels = h.col_labels = rank_labels(ctx.run.doc.value("world", nlohmann::json::object()), n);
  h.group_starts = host_starts(ctx.run.doc.value("world", nlohmann::json::object()), n);
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const size_t i = static_cast<size_t>(s) * n + d;
      HeatCell c;
      c.value = p50[i];
      if (std::isnan(p50[i])) {
        c.classes = s == d ? "self" : "missing";
        c.title = s == d ? "" : fmt::format("rank {} -> rank {}: not measured", s, d);
      } else {
        c.fill = viridis_class(std::min(1.0, reference / p50[i]));
        const auto st = at[i]->value("step_us", nlohmann::json::object());
        c.title = fmt::format("rank {} -> rank {}: step p50 {} us, p99 {} us, {} GB/s ({} of the median link)", s, d,
                              num(p50[i]), num(stat(st, "p99")), num(number_at(*at[i], "gbps")),
                              num(p50[i] / reference, 2) + "x");
        c.text = num(p50[i], 2);
      }
      h.cells.push_back(std::move(c));
    }
  }
  std::string out = "<h3>alltoall: step time per link</h3>";
  if (!note.empty()) out += "<p class=\"note\">" + esc(note) + "</p>";
  out += colour_key({viridis(0), viridis(0.5), viridis(1)}, "4x the median or slower", "2x",
                    "the median link (" + num(reference) + " us) or faster", true);
  return out + h.svg();
}

}  // namespace

std::string collective_section(const RunContext& ctx) {
  const auto& d = ctx.run.doc;
  const auto results = d.value("results", nlohmann::json::array());
  const nlohmann::json base_results =
      ctx.baseline ? ctx.baseline->doc.value("results", nlohmann::json::array()) : nlohmann::json::array();
  const nlohmann::json* base = ctx.baseline ? &base_results : nullptr;
  std::string out;
  if (results.empty()) return out + "<p class=\"note\">No size was measured.</p>\n";
  LineChart busbw{"busbw against size", "busbw (GB/s)", false, placement_series(results, false, false)};
  LineChart iter{"iteration time (p50, band to p99)", "iteration time (us)", true,
                 placement_series(results, true, false)};
  if (base) {
    for (auto& s : placement_series(*base, false, true)) busbw.series.push_back(std::move(s));
    for (auto& s : placement_series(*base, true, true)) iter.series.push_back(std::move(s));
  }
  out += "<div class=\"charts\">" + busbw.html() + iter.html() + "</div>\n";
  out += "<h3>Every size</h3>";
  if (base)
    out += fmt::format(
        "<p class=\"note\">Rows in yellow: busbw more than {} below the baseline's at that size; red: wrong data "
        "(-c).</p>",
        pct(ctx.options.regression_fraction));
  out += size_table(ctx, results, base);
  // Drawn wherever the entries carry each pair's step times (all-to-all's exchanges);
  // step_matrix draws nothing for a collective whose entries have none.
  out += step_matrix(ctx, results);
  return out;
}

}  // namespace railbench::report
