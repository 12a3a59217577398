// validate at scale (more than ValidateRun::kDirectMatrixNodes nodes): a 1,024-node rail
// is a million links, far more cells than a page can carry with a hover each. So per
// rail a leaf x leaf summary (each block coloured by its worst link, one hover with its
// worst and median); once, a strip with one cell per node (its worst link over every
// rail); and the full matrix only of the leaf pairs that hold one of the worst links or a
// failed pair test, each a click away from its block and from the worst-links table.
#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "bench/offline/report/colour.h"
#include "bench/offline/report/html.h"
#include "bench/offline/report/validate_data.h"
#include "lib/core/stats.h"

namespace railbench::report {

namespace {

// The most leaf pairs drawn in full for failed pair tests (the worst links' are always
// drawn): a rail whose every pair failed must not bring back the whole matrix.
constexpr size_t kMaxFailedPairSections = 16;

using LeafPair = std::tuple<int, int, int>;  // rail index, row leaf, column leaf

std::string block_anchor(const RunContext& ctx, int rail, int i, int j) {
  return fmt::format("{}-blk-r{}-{}-{}", ctx.id, rail, i, j);
}
std::string pair_anchor(const RunContext& ctx, int rail, int i, int j) {
  return fmt::format("{}-lp-r{}-{}-{}", ctx.id, rail, i, j);
}

// The leaf pairs drawn in full: every worst link's, then failed pair tests', capped.
std::set<LeafPair> chosen_pairs(const std::vector<RailGrid>& grids, const std::vector<WorstLink>& worst) {
  std::set<LeafPair> out;
  for (size_t g = 0; g < grids.size(); ++g)
    for (const auto& w : worst)
      if (w.rail == grids[g].rail) out.emplace(static_cast<int>(g), grids[g].leaf_of[w.a], grids[g].leaf_of[w.b]);
  size_t failed = 0;
  for (size_t g = 0; g < grids.size(); ++g)
    for (const auto& [ab, error] : grids[g].failed)
      if (ab.first < ab.second && failed < kMaxFailedPairSections &&
          out.emplace(static_cast<int>(g), grids[g].leaf_of[ab.first], grids[g].leaf_of[ab.second]).second)
        ++failed;
  return out;
}

struct BlockFigures {
  int links = 0, failed = 0, missing = 0;
  float worst = NAN, median = NAN, p50 = NAN, p99 = NAN;
  int worst_a = -1, worst_b = -1;
};

// One block: its links a -> b (a on leaf i, b on leaf j), worst and median bandwidth, the
// median p50 and the worst p99. `scratch` is reused across blocks.
BlockFigures block_figures(const RailGrid& g, const LeafGroup& li, const LeafGroup& lj, std::vector<float>& bw,
                           std::vector<float>& p50) {
  BlockFigures f;
  bw.clear(), p50.clear();
  for (int a : li.nodes) {
    for (int b : lj.nodes) {
      if (a == b) continue;
      ++f.links;
      const float x = g.bw.at(a, b);
      if (std::isnan(x)) {
        ++(g.failed.count({a, b}) ? f.failed : f.missing);
        continue;
      }
      bw.push_back(x);
      if (!(x >= f.worst)) f.worst = x, f.worst_a = a, f.worst_b = b;
      if (!std::isnan(g.p50.at(a, b))) p50.push_back(g.p50.at(a, b));
      if (!(g.p99.at(a, b) <= f.p99)) f.p99 = std::isnan(g.p99.at(a, b)) ? f.p99 : g.p99.at(a, b);
    }
  }
  const auto middle = [](const std::vector<float>& v) {
    return v.empty() ? static_cast<float>(NAN) : static_cast<float>(median({v.begin(), v.end()}));
  };
  f.median = middle(bw);
  f.p50 = middle(p50);
  return f;
}

// Classes of a block or strip cell that holds a node a finding blames on this rail.
void mark_nodes(const ValidateRun& v, int rail, const std::vector<int>& nodes, HeatCell& c) {
  bool bad = false, warn = false;
  for (int x : nodes) {
    const auto it = v.by_link.find({x, rail});
    if (it == v.by_link.end()) continue;
    for (size_t i : it->second)
      bad = bad || v.findings[i].severity == "FAIL", warn = warn || v.findings[i].severity == "WARN";
  }
  if (bad || warn) c.classes += std::string(c.classes.empty() ? "" : " ") + (bad ? "bad" : "warn");
}

Heatmap leaf_summary(const RunContext& ctx, const ValidateRun& v, const RailGrid& g, int gi,
                     const std::set<LeafPair>& drawn) {
  Heatmap h;
  h.id = fmt::format("{}-sum-r{}", ctx.id, g.rail);
  h.title = esc(fmt::format("rail {} ({}): {} x {} {}", g.rail, g.nic, g.leaves.size(), g.leaves.size(),
                            g.leaves_from_results ? "leaves" : "blocks"));
  h.corner = "to";
  h.max_cell = 24;
  for (const auto& l : g.leaves) {
    h.row_labels.push_back(l.name);
    h.row_titles.push_back(fmt::format("{}: {} node(s), {} .. {}", l.name, l.nodes.size(), v.nodes[l.nodes.front()],
                                       v.nodes[l.nodes.back()]));
  }
  h.col_labels = h.row_labels, h.col_titles = h.row_titles;
  std::vector<float> bw, p50;
  for (size_t i = 0; i < g.leaves.size(); ++i) {
    for (size_t j = 0; j < g.leaves.size(); ++j) {
      const auto& li = g.leaves[i];
      const auto& lj = g.leaves[j];
      const BlockFigures f = block_figures(g, li, lj, bw, p50);
      HeatCell c;
      c.id = block_anchor(ctx, g.rail, static_cast<int>(i), static_cast<int>(j));
      const std::string where = fmt::format("{}\u2192{} rail{}", li.name, lj.name, g.rail);
      if (f.links == 0) {
        c.classes = "self";
      } else if (f.worst_a < 0) {
        c.classes = f.failed ? "failed" : "missing";
        c.title =
            fmt::format("{}: {} link(s), none measured{}", where, f.links, f.failed ? " (pair tests failed)" : "");
      } else {
        c.fill = viridis_class(f.worst / g.line_rate);
        if (f.failed) c.classes = "failed";
        c.title = fmt::format("{}: {} links; worst {}\u2192{} {} GB/s ({}), median {} GB/s; p50 {} us, p99 up to {} us",
                              where, f.links, v.nodes[f.worst_a], v.nodes[f.worst_b], num(f.worst),
                              pct(f.worst / g.line_rate), num(f.median), num(f.p50), num(f.p99));
        if (f.failed) c.title += fmt::format("; {} pair test(s) failed", f.failed);
        if (f.missing) c.title += fmt::format("; {} not measured", f.missing);
      }
      std::vector<int> both = li.nodes;
      both.insert(both.end(), lj.nodes.begin(), lj.nodes.end());
      if (f.links) mark_nodes(v, g.rail, both, c);
      if (drawn.count({gi, static_cast<int>(i), static_cast<int>(j)})) {
        c.href = pair_anchor(ctx, g.rail, static_cast<int>(i), static_cast<int>(j));
        c.title += "\n(click: this leaf pair in full)";
      }
      h.cells.push_back(std::move(c));
    }
  }
  return h;
}

// A node's link on a rail as validate judges it: the median over its partners of what it
// sends (its row) and of what it receives (its column), as fractions of line rate; the
// lower of the two, NaN when nothing was measured.
double link_fraction(const RailGrid& g, int x, std::vector<float>& scratch) {
  double lowest = NAN;
  for (const bool row : {true, false}) {
    scratch.clear();
    for (int y = 0; y < g.bw.n; ++y)
      if (const float f = row ? g.bw.at(x, y) : g.bw.at(y, x); y != x && !std::isnan(f)) scratch.push_back(f);
    if (scratch.empty()) continue;
    const double f = median({scratch.begin(), scratch.end()}) / g.line_rate;
    if (!(f >= lowest)) lowest = f;
  }
  return lowest;
}

// One cell per node, in rows of kNodesPerBlock in node order, coloured by its worst link
// over every rail (validate's link: medians over its partners, so one slow cable marks
// its own node and not every node it was paired with).
Heatmap node_strip(const RunContext& ctx, const ValidateRun& v, const std::vector<RailGrid>& grids) {
  const int n = static_cast<int>(v.nodes.size());
  Heatmap h;
  h.id = fmt::format("{}-nodes", ctx.id);
  h.title = esc(fmt::format("{} nodes, {} per row", n, kNodesPerBlock));
  h.max_cell = 16;
  for (int c = 0; c < kNodesPerBlock; ++c) h.col_labels.push_back(fmt::format("{}", c + 1));
  std::vector<float> scratch;
  for (int row = 0; row * kNodesPerBlock < n; ++row) {
    h.row_labels.push_back(v.nodes[row * kNodesPerBlock]);
    for (int c = 0; c < kNodesPerBlock; ++c) {
      const int x = row * kNodesPerBlock + c;
      HeatCell cell;
      if (x >= n) {
        cell.absent = true;
        h.cells.push_back(std::move(cell));
        continue;
      }
      double worst = NAN;
      const RailGrid* on = nullptr;
      for (const auto& g : grids)
        if (const double f = link_fraction(g, x, scratch); !(f >= worst) && !std::isnan(f)) worst = f, on = &g;
      cell.id = link_anchor(ctx, v, on ? on->rail : 0, x);
      if (!on) {
        cell.classes = "missing";
        cell.title = v.nodes[x] + ": no link measured";
      } else {
        cell.fill = viridis_class(worst);
        cell.title =
            fmt::format("{}: worst link rail{} ({}): {} GB/s, {} of line rate (median over its partners)", v.nodes[x],
                        on->rail, on->leaves[on->leaf_of[x]].name, num(worst * on->line_rate), pct(worst));
        cell.href = fmt::format("{}-sum-r{}-row-{}", ctx.id, on->rail, on->leaf_of[x]);
      }
      std::string severity;  // the worst finding on any of its rails
      for (const auto& g : grids) {
        HeatCell probe;
        mark_nodes(v, g.rail, {x}, probe);
        if (probe.classes == "bad" || (probe.classes == "warn" && severity.empty())) severity = probe.classes;
      }
      if (!severity.empty()) cell.classes += (cell.classes.empty() ? "" : " ") + severity;
      h.cells.push_back(std::move(cell));
    }
  }
  return h;
}

// One leaf pair in full: row sends to column, every cell with its figures.
std::string leaf_pair_matrix(const RunContext& ctx, const ValidateRun& v, const RailGrid& g, int i, int j,
                             const std::set<std::tuple<int, int, int>>& anchored) {
  const auto& li = g.leaves[i];
  const auto& lj = g.leaves[j];
  Heatmap h;
  h.id = fmt::format("{}-lpm-r{}-{}-{}", ctx.id, g.rail, i, j);
  h.title = esc(fmt::format("rail {}: {} \u2192 {} (GB/s, row sends to column)", g.rail, li.name, lj.name));
  h.corner = "to";
  h.max_cell = 20;
  for (int a : li.nodes) h.row_labels.push_back(v.nodes[a]);
  for (int b : lj.nodes) h.col_labels.push_back(v.nodes[b]);
  for (int a : li.nodes) {
    for (int b : lj.nodes) {
      HeatCell c;
      if (a == b) {
        c.classes = "self";
        h.cells.push_back(std::move(c));
        continue;
      }
      const std::string where = fmt::format("{}\u2192{} rail{}", v.nodes[a], v.nodes[b], g.rail);
      const float x = g.bw.at(a, b);
      if (const auto f = g.failed.find({a, b}); f != g.failed.end()) {
        c.classes = "failed";
        c.title = fmt::format("{}: the pair test failed: {}", where, f->second);
      } else if (std::isnan(x)) {
        c.classes = "missing";
        c.title = where + ": not measured";
      } else {
        c.fill = viridis_class(x / g.line_rate);
        c.title = fmt::format("{}: {} GB/s ({}), both ways {}; p50 {} us, p99 {} us", where, num(x),
                              pct(x / g.line_rate), num(g.bidir.at(a, b)), num(g.p50.at(a, b)), num(g.p99.at(a, b)));
      }
      if (anchored.count({g.rail, a, b})) c.id = cell_anchor(ctx, g.rail, a, b);
      mark_findings(v, g.rail, a, b, c);
      h.cells.push_back(std::move(c));
    }
  }
  return fmt::format("<div class=\"lpair\" id=\"{}\">", pair_anchor(ctx, g.rail, i, j)) + h.svg() +
         fmt::format("<p class=\"note\"><a href=\"#{}\">back to the block in rail {}'s summary</a></p></div>",
                     block_anchor(ctx, g.rail, i, j), g.rail);
}

std::string leaf_notes(const std::vector<RailGrid>& grids) {
  std::vector<std::string> sources;
  for (const auto& g : grids)
    if (std::find(sources.begin(), sources.end(), g.leaf_source) == sources.end()) sources.push_back(g.leaf_source);
  std::string out;
  for (const auto& s : sources) out += (out.empty() ? "" : "; ") + s;
  return out;
}

}  // namespace

std::string validate_summary(const RunContext& ctx, const ValidateRun& v, const std::vector<RailGrid>& grids,
                             const std::vector<WorstLink>& worst) {
  const std::set<LeafPair> drawn = chosen_pairs(grids, worst);
  std::set<std::tuple<int, int, int>> anchored;
  for (const auto& w : worst) anchored.emplace(w.rail, w.a, w.b);
  size_t blocks = 0;
  for (const auto& g : grids) blocks += g.leaves.size() * g.leaves.size();
  std::string out = "<h3>Bandwidth per leaf pair (each block coloured by its worst link, row sends to column)</h3>";
  out += fmt::format(
      "<p class=\"note\">{} nodes per rail, more than {}: each rail is drawn as blocks, one per pair of leaves, "
      "coloured by the block's worst link against line rate; hover a block for its worst and median link and "
      "latency. Leaves: {}. Blocks outlined hold a node a finding blames; hatched ones a failed pair test. A block "
      "that is a link opens that leaf pair in full below.</p>",
      v.nodes.size(), ValidateRun::kDirectMatrixNodes, esc(leaf_notes(grids)));
  out +=
      colour_key({viridis(0), viridis(0.5), viridis(1)}, "0", "50% of line rate", "line rate (each rail's own)", true);
  out += "<div class=\"charts\">";
  for (size_t g = 0; g < grids.size(); ++g) out += leaf_summary(ctx, v, grids[g], static_cast<int>(g), drawn).svg();
  out +=
      "</div>\n<h3>Per node: its worst link</h3><p class=\"note\">One cell per node, in node order, coloured "
      "by its worst link over every rail (what it sends or receives, the median over its partners, as validate "
      "judges a link); outlined when a finding blames it. A cell opens its leaf in that rail's summary; a "
      "finding's link opens its cell here.</p><div class=\"charts\">";
  out += node_strip(ctx, v, grids).svg();
  out += "</div>\n<h3>Leaf pairs in full</h3>";
  out += fmt::format(
      "<p class=\"note\">Every link of every leaf pair would be {} cells, too many for a page that opens; drawn "
      "here: the {} leaf pair(s) of {} that hold one of the {} worst links or a failed pair test. Every other "
      "block's hover gives its worst and median link; the results file has every figure.</p><div "
      "class=\"charts\">",
      v.nodes.size() * (v.nodes.size() - 1) * grids.size(), drawn.size(), blocks, worst.size());
  for (const auto& [g, i, j] : drawn) out += leaf_pair_matrix(ctx, v, grids[g], i, j, anchored);
  return out + "</div>\n";
}

std::string worst_links_table(const RunContext& ctx, const ValidateRun& v, const std::vector<RailGrid>& grids,
                              const std::vector<WorstLink>& worst) {
  if (worst.empty()) return "";
  Table t({"#", "rail", "link (a &#8594; b)", "leaf pair", "a &#8594; b (GB/s)", "line rate (GB/s)", "of line rate",
           "verdict"},
          "worst");
  for (size_t k = 0; k < worst.size(); ++k) {
    const auto& w = worst[k];
    const auto g = std::find_if(grids.begin(), grids.end(), [&](const RailGrid& r) { return r.rail == w.rail; });
    const int i = g->leaf_of[w.a], j = g->leaf_of[w.b];
    const std::string leaves = esc(fmt::format("{} \u2192 {}", g->leaves[i].name, g->leaves[j].name));
    const std::string verdict = finding_verdict(v, w.rail, w.a, w.b);
    t.row({fmt::format("{}", k + 1), fmt::format("{}", w.rail),
           fmt::format("<a href=\"#{}\">{} &#8594; {}</a>", cell_anchor(ctx, w.rail, w.a, w.b), esc(v.nodes[w.a]),
                       esc(v.nodes[w.b])),
           v.aggregated() ? fmt::format("<a href=\"#{}\">{}</a>", block_anchor(ctx, w.rail, i, j), leaves) : leaves,
           num(w.gbs), num(g->line_rate), pct(w.fraction), verdict.empty() ? "no finding" : esc(verdict)},
          verdict.starts_with("FAIL")   ? "bad"
          : verdict.starts_with("WARN") ? "warn"
                                        : "");
  }
  return fmt::format(
             "<h3>The {} worst links</h3><p class=\"note\">Each pair once, its slower direction, against its rail's "
             "line rate, over every rail; a link opens its cell{}. Pairs never measured or whose test failed are "
             "not ranked: the findings name them.</p>",
             worst.size(),
             v.aggregated() ? " (the leaf pair, its block in the summary)" : " in the bandwidth heatmap") +
         t.html();
}

}  // namespace railbench::report
