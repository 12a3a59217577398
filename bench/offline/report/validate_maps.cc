// validate's heatmaps: per rail a node x node matrix (row sends to column) of bandwidth,
// latency p50 and p99, and with a baseline the ratio of each link's bandwidth to the
// baseline's. Rails are grouped by their leaf. Bandwidth is coloured against the rail's
// line rate, not the data's range, so a healthy rail is uniformly yellow and one slow
// cable is a dark cross (its row and its column).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "bench/offline/report/colour.h"
#include "bench/offline/report/html.h"
#include "bench/offline/report/svg.h"
#include "bench/offline/report/validate_data.h"
#include "lib/core/stats.h"

namespace railbench::report {

namespace {

struct Metric {
  RailMatrix RailGrid::*matrix;  // of the rail's matrices (validate_grid.h)
  const char* id;                // in HTML ids
  const char* title;             // above the maps
  bool bandwidth;
};
constexpr Metric kMetrics[] = {{&RailGrid::bw, "bw", "Bandwidth a &#8594; b (GB/s, row sends to column)", true},
                               {&RailGrid::p50, "p50", "Latency p50 (us)", false},
                               {&RailGrid::p99, "p99", "Latency p99 (us)", false}};

// A cell of a matrix (NaN outside it: a baseline may lack a node).
double at(const RailMatrix& m, int a, int b) {
  return a < 0 || b < 0 || a >= m.n || b >= m.n ? NAN : static_cast<double>(m.at(a, b));
}

// Latency has no line rate: the scale runs from the median of every measured cell of the
// run (and below: yellow) to ten times it (dark), on a log scale.
double latency_reference(const std::vector<RailGrid>& grids, RailMatrix RailGrid::*matrix) {
  std::vector<double> all;
  for (const auto& g : grids) {
    const RailMatrix& m = g.*matrix;
    for (int a = 0; a < m.n; ++a)
      for (int b = 0; b < m.n; ++b)
        if (a != b && !std::isnan(at(m, a, b))) all.push_back(at(m, a, b));
  }
  if (all.empty()) return NAN;
  return median(std::move(all));
}

// The hover of a row or column label: the link's medians over its partners.
std::string link_summary(const nlohmann::json& rail, const std::string& node, const nlohmann::json* l) {
  if (!l) return node + ": no link figures";
  return fmt::format(
      "{} rail{} ({}): over {} partner(s), {} failed: sends {} GB/s, receives {} GB/s, both {} GB/s (medians); "
      "latency p50 {} us, p99 {} us; window spread {}; {} link down(s)",
      node, rail.value("rail", 0), text_at(rail, "leaf"), num(number_at(*l, "pairs")), num(number_at(*l, "failed")),
      num(number_at(*l, "tx_gbs")), num(number_at(*l, "rx_gbs")), num(number_at(*l, "bidir_gbs")),
      num(number_at(*l, "lat_p50_us")), num(number_at(*l, "lat_p99_us")), num(number_at(*l, "bw_spread"), 2),
      num(number_at(*l, "link_downs")));
}

// The failed pair tests of a rail, both directions, with their errors.
std::map<std::pair<int, int>, std::string> failed_pairs(const ValidateRun& v, const nlohmann::json& rail) {
  std::map<std::pair<int, int>, std::string> out;
  for (const auto& e : rail.value("errors", nlohmann::json::array())) {
    const int a = v.node_index(text_at(e, "a")), b = v.node_index(text_at(e, "b"));
    if (a < 0 || b < 0) continue;
    out[{a, b}] = out[{b, a}] = text_at(e, "error");
  }
  return out;
}

// Re-tests on `rail` that involve node a or b, one line each.
std::string retest_lines(const ValidateRun& v, int rail, int a, int b) {
  std::string out;
  for (const auto& p : v.retests) {
    if (p.value("rail_a", -1) != rail) continue;
    const int x = p.value("node_a", -1), y = p.value("node_b", -1);
    if (x != a && x != b && y != a && y != b) continue;
    if (x < 0 || y < 0 || x >= static_cast<int>(v.nodes.size()) || y >= static_cast<int>(v.nodes.size())) continue;
    out += p.value("ok", false)
               ? fmt::format("\nre-test {} vs {}: {} / {} GB/s, p50 {} us", v.nodes[x], v.nodes[y],
                             num(number_at(p, "bw_ab")), num(number_at(p, "bw_ba")), num(number_at(p, "lat_p50")))
               : fmt::format("\nre-test {} vs {}: failed: {}", v.nodes[x], v.nodes[y], text_at(p, "error"));
  }
  return out;
}

Heatmap rail_map(const RunContext& ctx, const ValidateRun& v, const nlohmann::json& rail, const RailGrid& g,
                 const Metric& m, double reference, const std::set<std::tuple<int, int, int>>& anchored) {
  const int n = static_cast<int>(v.nodes.size()), r = rail.value("rail", 0);
  const double line_rate = number_at(rail, "line_rate_gbps") / 8;  // Gb/s -> GB/s
  const RailMatrix& matrix = g.*m.matrix;
  const RailMatrix& bidir = g.bidir;
  const auto failed = failed_pairs(v, rail);
  Heatmap h;
  h.id = fmt::format("{}-{}-r{}", ctx.id, m.id, r);
  h.title = esc(fmt::format("rail {} ({}, {})", r, text_at(rail, "nic"), text_at(rail, "leaf")));
  h.corner = "to";
  h.row_labels = h.col_labels = v.nodes;
  // The link figures once per rail, on the bandwidth map's labels (not on every map: a
  // 32 x 8 page would carry them six times).
  if (m.bandwidth) {
    std::vector<const nlohmann::json*> links(v.nodes.size(), nullptr);
    for (const auto& l : member(rail, "links"))
      if (const int x = v.node_index(text_at(l, "node")); x >= 0) links[x] = &l;
    for (int x = 0; x < n; ++x) h.row_titles.push_back(link_summary(rail, v.nodes[x], links[x]));
    h.col_titles = h.row_titles;
  }
  h.cells.reserve(static_cast<size_t>(n) * n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      HeatCell c;
      c.value = at(matrix, a, b);
      // The map names the rail; a cell's hover names only the pair (at 32 x 8, 24 maps of
      // 1,024 cells, every byte of a hover is 24 KB of page).
      const std::string where = fmt::format("{}{}{}", v.nodes[a], m.bandwidth ? "\u2192" : "\u2194", v.nodes[b]);
      if (a == b) {
        c.classes = "self";
        h.cells.push_back(std::move(c));
        continue;
      }
      if (const auto f = failed.find({a, b}); f != failed.end()) {
        c.classes = "failed";
        c.title = fmt::format("{}: the pair test failed: {}", where, f->second);
      } else if (std::isnan(c.value)) {
        c.classes = "missing";
        c.title = where + ": not measured";
      } else if (m.bandwidth) {
        c.fill = viridis_class(c.value / line_rate);
        c.text = num(c.value, 2);
        c.title = fmt::format("{}: {} GB/s ({}), both ways {}{}", where, num(c.value), pct(c.value / line_rate),
                              num(at(bidir, a, b)), retest_lines(v, r, a, b));
      } else {
        c.fill = viridis_class(1 - std::log10(std::max(1.0, c.value / reference)));
        c.text = num(c.value, 2);
        c.title = fmt::format("{}: {} us", where, num(c.value));
      }
      if (m.bandwidth && anchored.count({r, a, b})) c.id = cell_anchor(ctx, r, a, b);
      mark_findings(v, r, a, b, c);
      h.cells.push_back(std::move(c));
    }
  }
  return h;
}

// The ratio of each cell's bandwidth to the baseline's, matched by node names and rail.
Heatmap delta_map(const RunContext& ctx, const ValidateRun& v, const ValidateRun& base, const nlohmann::json& rail,
                  const RailGrid& g, const std::vector<RailGrid>& base_grids, int& regressed) {
  const int n = static_cast<int>(v.nodes.size()), r = rail.value("rail", 0);
  static const RailMatrix kNone;
  const RailMatrix* then = &kNone;
  for (const auto& bg : base_grids)
    if (bg.rail == r) then = &bg.bw;
  const RailMatrix& now = g.bw;
  Heatmap h;
  h.id = fmt::format("{}-delta-r{}", ctx.id, r);
  h.title = esc(fmt::format("rail {} ({}): this run / baseline", r, text_at(rail, "leaf")));
  h.corner = "to";
  h.row_labels = h.col_labels = v.nodes;
  const double limit = 1 - ctx.options.regression_fraction;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      HeatCell c;
      if (a == b) {
        c.classes = "self";
        h.cells.push_back(std::move(c));
        continue;
      }
      const std::string where = fmt::format("{}\u2192{} rail{}", v.nodes[a], v.nodes[b], r);
      const double x = at(now, a, b), y = at(*then, base.node_index(v.nodes[a]), base.node_index(v.nodes[b]));
      c.value = x / y;
      if (std::isnan(c.value) || !(y > 0)) {
        c.classes = "missing";
        c.title = fmt::format("{}: {} GB/s now, {} in the baseline: nothing to compare", where, num(x), num(y));
      } else {
        c.fill = ratio_class(c.value);
        c.text = num(c.value, 2);
        c.title = fmt::format("{}: {} GB/s, baseline {}: {}", where, num(x), num(y), change(x, y));
        if (c.value < limit) c.classes = "regressed", ++regressed;
      }
      h.cells.push_back(std::move(c));
    }
  }
  return h;
}

// Rails in leaf order (as the config lists them), each leaf a box around its rails.
template <typename Draw>
std::string by_leaf(const nlohmann::json& rails, Draw draw) {
  std::vector<std::string> leaves;
  for (const auto& r : rails)
    if (std::find(leaves.begin(), leaves.end(), text_at(r, "leaf")) == leaves.end())
      leaves.push_back(text_at(r, "leaf"));
  std::string out = "<div class=\"charts\">";
  for (const auto& leaf : leaves) {
    out += fmt::format("<div class=\"leaf\"><span class=\"leafname\">{}</span>", esc(leaf.empty() ? "leaf ?" : leaf));
    for (size_t i = 0; i < rails.size(); ++i)
      if (text_at(rails[i], "leaf") == leaf) out += draw(rails[i], i);
    out += "</div>";
  }
  return out + "</div>\n";
}

}  // namespace

// Classes and hover lines for a cell whose row or column link a finding blames.
void mark_findings(const ValidateRun& v, int rail, int a, int b, HeatCell& c) {
  std::string worst;
  for (int node : {a, b}) {
    const auto it = v.by_link.find({node, rail});
    if (it == v.by_link.end()) continue;
    for (size_t i : it->second) {
      const auto& f = v.findings[i];
      c.title += fmt::format("\nfinding #{} {} {}: {}", f.number, f.severity, f.kind, f.subject);
      if (f.severity == "FAIL") worst = "bad";
      if (f.severity == "WARN" && worst.empty()) worst = "warn";
    }
  }
  if (!worst.empty()) c.classes += (c.classes.empty() ? "" : " ") + worst;
}

std::string finding_verdict(const ValidateRun& v, int rail, int a, int b) {
  const ValidateFinding* worst = nullptr;
  for (int node : {a, b}) {
    const auto it = v.by_link.find({node, rail});
    if (it == v.by_link.end()) continue;
    for (size_t i : it->second)
      if (!worst || (v.findings[i].severity == "FAIL" && worst->severity != "FAIL")) worst = &v.findings[i];
  }
  return worst ? fmt::format("{} #{} {}", worst->severity, worst->number, worst->subject) : "";
}

std::string link_anchor(const RunContext& ctx, const ValidateRun& v, int rail, int node) {
  // The node strip has one cell per node, whatever the rail.
  return v.aggregated() ? fmt::format("{}-node-{}", ctx.id, node) : fmt::format("{}-bw-r{}-row-{}", ctx.id, rail, node);
}

std::string cell_anchor(const RunContext& ctx, int rail, int a, int b) {
  return fmt::format("{}-cell-r{}-{}-{}", ctx.id, rail, a, b);
}

std::string validate_heatmaps(const RunContext& ctx, const ValidateRun& v, const std::vector<RailGrid>& grids,
                              const ValidateRun* base, const std::vector<RailGrid>& base_grids,
                              const std::vector<WorstLink>& worst) {
  std::set<std::tuple<int, int, int>> anchored;
  for (const auto& w : worst) anchored.emplace(w.rail, w.a, w.b);
  if (v.rails().empty() || v.nodes.empty())
    return "<p class=\"note\">No rail was measured (the run stopped before the rail checks).</p>\n";
  std::string out;
  for (const auto& m : kMetrics) {
    const double reference = m.bandwidth ? 0 : latency_reference(grids, m.matrix);
    out += fmt::format("<h3>{}</h3>", m.title);
    out += m.bandwidth
               ? colour_key({viridis(0), viridis(0.5), viridis(1)}, "0", "50% of line rate",
                            "line rate (each rail's own)", true)
               : colour_key({viridis(1), viridis(0.5), viridis(0)}, num(reference) + " us (the median) or less",
                            num(reference * std::sqrt(10.0)) + " us", num(reference * 10) + " us or more", true);
    out += by_leaf(v.rails(), [&](const nlohmann::json& r, size_t i) {
      return rail_map(ctx, v, r, grids[i], m, reference, anchored).svg();
    });
  }
  if (base) {
    int regressed = 0;
    std::string maps = by_leaf(v.rails(), [&](const nlohmann::json& r, size_t i) {
      return delta_map(ctx, v, *base, r, grids[i], base_grids, regressed).svg();
    });
    out += "<h3>Bandwidth against the baseline (this run / baseline, per cell)</h3>";
    out += fmt::format(
        "<p class=\"note\">{} cell(s) more than {} below the baseline, outlined (dotted). Cells are matched by node "
        "names and rail.</p>",
        regressed, pct(ctx.options.regression_fraction));
    out += colour_key({ratio_colour(0.5), ratio_colour(1), ratio_colour(2)}, "0.5x or less (slower)", "1x",
                      "2x or more (faster)", true);
    out += maps;
  }
  return out;
}

}  // namespace railbench::report
