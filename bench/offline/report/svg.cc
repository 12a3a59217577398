#include "bench/offline/report/svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/offline/report/colour.h"
#include "bench/offline/report/html.h"
#include "lib/core/sizes.h"

namespace railbench::report {

namespace {

// 1, 2 or 5 times a power of ten, at least `raw`: the step of a linear axis.
double nice_step(double raw) {
  if (!(raw > 0)) return 1;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

struct Axes {
  double x0, x1, y0, y1;  // data range (x in log2 bytes; y in log10 when log_y)
  int left = 62, right = 14, top = 24, bottom = 38, width, height;
  double px(double lx) const { return left + (lx - x0) / (x1 - x0) * (width - left - right); }
  double py(double ly) const { return height - bottom - (ly - y0) / (y1 - y0) * (height - top - bottom); }
};

std::string path_of(const std::vector<std::pair<double, double>>& pts) {
  std::string d;
  for (size_t i = 0; i < pts.size(); ++i)
    d += fmt::format("{}{:.1f},{:.1f}", i ? " L" : "M", pts[i].first, pts[i].second);
  return d;
}

}  // namespace

namespace {

// The data's extent: x in log2 of its values, y as measured (y values, bands included;
// none at or below 0 on a log axis). Empty (min > max) when nothing was measured.
struct Extent {
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  bool empty() const { return !(xmin <= xmax) || !(ymin <= ymax); }
};

// Where x lands on the chart's x axis: log2 of a size, or the value itself.
double xpos(bool linear, double x) {
  return linear ? x : std::log2(x);
}

Extent extent_of(const std::vector<Series>& series, bool log_y, bool x_linear) {
  Extent e;
  const auto take_y = [&](double v) {
    if (std::isnan(v) || (log_y && v <= 0)) return;
    e.ymin = std::min(e.ymin, v), e.ymax = std::max(e.ymax, v);
  };
  for (const auto& s : series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!(s.x[i] > 0)) continue;
      e.xmin = std::min(e.xmin, xpos(x_linear, s.x[i])), e.xmax = std::max(e.xmax, xpos(x_linear, s.x[i]));
      take_y(s.y[i]);
      if (i < s.lo.size()) take_y(s.lo[i]);
      if (i < s.hi.size()) take_y(s.hi[i]);
    }
  }
  return e;
}

// The axes for a non-empty extent, and the y ticks (in the axis' units: decades on a log
// axis, round steps from 0 on a linear one).
Axes axes_for(Extent e, bool log_y, int width, int height, std::vector<double>& yticks) {
  if (e.xmin == e.xmax) e.xmin -= 1, e.xmax += 1;
  Axes a{e.xmin, e.xmax, 0, 1};
  a.width = width, a.height = height;
  if (log_y) {
    a.y0 = std::floor(std::log10(e.ymin)), a.y1 = std::ceil(std::log10(e.ymax));
    if (a.y0 == a.y1) a.y1 += 1;
    for (double d = a.y0; d <= a.y1; ++d) yticks.push_back(d);
  } else {
    const double step = nice_step(e.ymax / 5);
    a.y0 = 0, a.y1 = std::max(step, std::ceil(e.ymax / step) * step);
    for (double v = 0; v <= a.y1 + step / 2; v += step) yticks.push_back(v);
  }
  return a;
}

// Grid lines, tick labels and the two axis labels.
void draw_axes(std::string& out, const LineChart& c, const Axes& a, const std::vector<double>& yticks) {
  for (double t : yticks) {
    const double y = a.py(t);
    out += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>", a.left,
                       a.width - a.right, y, y);
    out += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", a.left - 4, y + 4,
                       c.log_y ? num(std::pow(10, t)) : num(t));
  }
  const int span = static_cast<int>(std::ceil(a.x1) - std::floor(a.x0));
  const int max_labels = std::max(2, (a.width - a.left - a.right) / 42);  // "256 B" needs ~40 px
  const int every = c.x_linear ? static_cast<int>(nice_step(std::max(1.0, static_cast<double>(span) / max_labels)))
                               : std::max(1, (span + max_labels) / max_labels);
  for (int e = static_cast<int>(std::ceil(a.x0)); e <= static_cast<int>(std::floor(a.x1)); ++e) {
    if (e % every) continue;
    const double x = a.px(e);
    out += fmt::format("<line class=\"grid\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\"/>", x, x, a.top,
                       a.height - a.bottom);
    out += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>", x,
                       a.height - a.bottom + 14,
                       esc(c.x_linear  ? num(e)
                           : c.x_bytes ? size_label(uint64_t{1} << std::clamp(e, 0, 62))
                                       : format_size(uint64_t{1} << std::clamp(e, 0, 62))));
  }
  out += fmt::format("<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                     (a.left + a.width - a.right) / 2, a.height - 6, esc(c.x_label));
  out += fmt::format("<text class=\"axis\" transform=\"translate(13,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
                     (a.top + a.height - a.bottom) / 2, esc(c.y_label));
}

// Where a value lands on the chart's y axis, and whether it can be drawn there.
struct YScale {
  bool log_y;
  double operator()(double v) const { return log_y ? std::log10(v) : v; }
  bool ok(double v) const { return !std::isnan(v) && (!log_y || v > 0); }
};

// Each series' p50..p99 band, as one closed path.
void draw_bands(std::string& out, const LineChart& c, const Axes& a) {
  const YScale ly{c.log_y};
  for (const auto& s : c.series) {
    if (s.lo.size() != s.x.size() || s.hi.size() != s.x.size()) continue;
    std::vector<std::pair<double, double>> up, down;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!(s.x[i] > 0) || !ly.ok(s.lo[i]) || !ly.ok(s.hi[i])) continue;
      up.emplace_back(a.px(xpos(c.x_linear, s.x[i])), a.py(ly(s.hi[i])));
      down.emplace_back(a.px(xpos(c.x_linear, s.x[i])), a.py(ly(s.lo[i])));
    }
    if (up.empty()) continue;
    std::reverse(down.begin(), down.end());
    up.insert(up.end(), down.begin(), down.end());
    out += fmt::format("<path class=\"band{}\" d=\"{} Z\" fill=\"{}\"><title>{}: p50..p99</title></path>",
                       s.baseline ? " baseline" : "", path_of(up), series_colour(s.colour), esc(s.name));
  }
}

// Each series' line, broken where a point is missing, and its points with their hovers.
void draw_lines(std::string& out, const LineChart& c, const Axes& a) {
  const YScale ly{c.log_y};
  for (const auto& s : c.series) {
    const std::string colour = series_colour(s.colour);
    std::vector<std::pair<double, double>> run;
    std::string marks;
    const auto flush = [&] {
      if (run.size() > 1)
        out += fmt::format("<path class=\"line{}\" d=\"{}\" stroke=\"{}\"/>", s.baseline ? " baseline" : "",
                           path_of(run), colour);
      run.clear();
    };
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!(s.x[i] > 0) || !ly.ok(s.y[i])) {
        flush();
        continue;
      }
      const double x = a.px(xpos(c.x_linear, s.x[i])), y = a.py(ly(s.y[i]));
      run.emplace_back(x, y);
      marks += fmt::format(
          "<circle class=\"pt{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"><title>{}: {} &#8594; "
          "{}</title></circle>",
          s.baseline ? " baseline" : "", x, y, s.baseline ? 2 : 3, colour, esc(s.name),
          esc(c.x_linear  ? c.x_label + " " + num(s.x[i])
              : c.x_bytes ? size_label(static_cast<uint64_t>(s.x[i]))
                          : num(s.x[i])),
          num(s.y[i], 4));
    }
    flush();
    out += marks;
  }
}

}  // namespace

std::string LineChart::html(int width, int height) const {
  std::string out = "<figure class=\"chart\">";
  const Extent e = extent_of(series, log_y, x_linear);
  if (e.empty()) {
    return out +
           fmt::format("<figcaption>{}</figcaption><p class=\"note\">nothing measured</p></figure>\n", esc(title));
  }
  std::vector<double> yticks;
  const Axes a = axes_for(e, log_y, width, height, yticks);
  out += fmt::format("<svg class=\"linechart\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">", width,
                     height, width, height);
  out += fmt::format("<text class=\"ctitle\" x=\"{}\" y=\"15\">{}</text>", a.left, esc(title));
  draw_axes(out, *this, a, yticks);
  draw_bands(out, *this, a);  // first, so every line stays on top of every band
  draw_lines(out, *this, a);
  out += "</svg><figcaption class=\"legend\">";
  for (const auto& s : series) {
    out += fmt::format(
        "<span class=\"key\"><svg width=\"26\" height=\"10\"><line x1=\"1\" x2=\"25\" y1=\"5\" y2=\"5\" "
        "class=\"line{}\" stroke=\"{}\"/></svg>{}</span>",
        s.baseline ? " baseline" : "", series_colour(s.colour), esc(s.name));
  }
  return out + "</figcaption></figure>\n";
}

namespace {

// One cell: its scale class or fill, its anchor, its hover and, when it is a link, the
// <a> around it. Width and height come from the map's one CSS rule, not from each cell:
// at 8,192 cells a map that is bytes per cell.
void cell_markup(std::string& out, const HeatCell& h, int x, int cell, bool text_inside) {
  if (!h.href.empty()) fmt::format_to(std::back_inserter(out), "<a href=\"#{}\">", esc(h.href));
  const bool scale = !h.fill.empty() && h.fill[0] != '#';
  std::string fill = scale ? "" : h.fill;
  if (h.classes.find("failed") != std::string::npos) fill = "url(#rb-hatch-failed)";
  if (h.classes.find("missing") != std::string::npos) fill = "url(#rb-hatch)";
  fmt::format_to(std::back_inserter(out), "<rect class=\"cell{}{}{}{}\" x=\"{}\"", h.classes.empty() ? "" : " ",
                 h.classes, scale ? " " : "", scale ? h.fill : "", x);
  if (!h.id.empty()) fmt::format_to(std::back_inserter(out), " id=\"{}\"", esc(h.id));
  if (!fill.empty()) fmt::format_to(std::back_inserter(out), " fill=\"{}\"", fill);
  out += '>';
  if (!h.title.empty()) out += "<title>" + esc(h.title) + "</title>";
  out += "</rect>";
  if (!h.href.empty()) out += "</a>";
  if (text_inside && !h.text.empty() && !h.fill.empty())
    fmt::format_to(std::back_inserter(out), "<text class=\"v\" x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>", x + cell / 2,
                   cell / 2 + 4, text_on(fill_colour(h.fill)), esc(h.text));
}

}  // namespace

std::string Heatmap::svg() const {
  const int rows = static_cast<int>(row_labels.size()), cols = static_cast<int>(col_labels.size());
  const int cell = std::clamp(480 / std::max({rows, cols, 1}), 9, std::max(9, max_cell));
  size_t longest = corner.size();
  for (const auto& l : row_labels) longest = std::max(longest, l.size());
  for (const auto& l : col_labels) longest = std::max(longest, l.size());
  const int label = static_cast<int>(longest * 6.6) + 8;
  const int left = label, top = label, width = left + cols * cell + 4, height = top + rows * cell + 4;
  std::string out;
  out.reserve(static_cast<size_t>(rows * cols) * 80 + 4096);
  fmt::format_to(std::back_inserter(out),
                 "<figure class=\"heatmap\"><figcaption>{}</figcaption><svg id=\"{}\" class=\"hm\" width=\"{}\" "
                 "height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\"><style>#{} .cell{{width:{}px;height:{}px}}</style>",
                 title, esc(id), width, height, width, height, esc(id), cell, cell);
  if (!corner.empty())
    fmt::format_to(std::back_inserter(out), "<text class=\"corner\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                   left - 4, top - 4, esc(corner));
  for (int c = 0; c < cols; ++c) {
    const double x = left + c * cell + cell / 2.0 + 4;
    fmt::format_to(std::back_inserter(out),
                   "<text class=\"lbl col\" transform=\"translate({:.1f},{}) rotate(-90)\">{}{}</text>", x, top - 4,
                   c < static_cast<int>(col_titles.size()) && !col_titles[c].empty()
                       ? "<title>" + esc(col_titles[c]) + "</title>"
                       : "",
                   esc(col_labels[c]));
  }
  const bool text_inside = cell >= 28;
  std::string marks;
  for (int r = 0; r < rows; ++r) {
    const int y = top + r * cell;
    fmt::format_to(std::back_inserter(out),
                   "<text class=\"lbl row\" id=\"{}-row-{}\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}{}</text>",
                   esc(id), r, left - 4, y + cell / 2 + 4,
                   r < static_cast<int>(row_titles.size()) && !row_titles[r].empty()
                       ? "<title>" + esc(row_titles[r]) + "</title>"
                       : "",
                   esc(row_labels[r]));
    fmt::format_to(std::back_inserter(out), "<g transform=\"translate({},{})\">", left, y);
    for (int c = 0; c < cols; ++c) {
      const HeatCell& h = cells[static_cast<size_t>(r) * cols + c];
      if (h.absent) continue;
      cell_markup(out, h, c * cell, cell, text_inside);
      for (const char* k : {"bad", "warn", "regressed"}) {
        if ((" " + h.classes + " ").find(std::string(" ") + k + " ") == std::string::npos) continue;
        fmt::format_to(std::back_inserter(marks),
                       "<rect class=\"mark {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", k,
                       left + c * cell + 1.5, y + 1.5, cell - 3, cell - 3);
        break;
      }
    }
    out += "</g>";
  }
  for (int g : group_starts) {
    if (g <= 0) continue;
    if (g < cols)
      fmt::format_to(std::back_inserter(out), "<line class=\"group\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>",
                     left + g * cell, left + g * cell, top - 2, top + rows * cell);
    if (g < rows)
      fmt::format_to(std::back_inserter(out), "<line class=\"group\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>",
                     left - 2, left + cols * cell, top + g * cell, top + g * cell);
  }
  out += marks;
  return out + "</svg></figure>\n";
}

std::string colour_key(const std::vector<std::string>& stops, const std::string& low, const std::string& mid,
                       const std::string& high, bool with_missing) {
  std::string gradient;
  for (size_t i = 0; i < stops.size(); ++i) gradient += (i ? "," : "") + stops[i];
  std::string out = fmt::format(
      "<div class=\"ckey\"><span class=\"lo\">{}</span><span class=\"bar\" style=\"background:linear-gradient(to "
      "right,{})\"></span><span class=\"hi\">{}</span>",
      esc(low), gradient, esc(high));
  if (!mid.empty()) out += fmt::format("<span class=\"mid\">(middle: {})</span>", esc(mid));
  if (with_missing)
    out +=
        "<svg width=\"14\" height=\"14\"><rect width=\"14\" height=\"14\" fill=\"url(#rb-hatch)\"/></svg> not "
        "measured <svg width=\"14\" height=\"14\"><rect width=\"14\" height=\"14\" fill=\"url(#rb-hatch-failed)\"/>"
        "</svg> pair test failed <svg width=\"14\" height=\"14\"><rect class=\"mark bad\" x=\"1.5\" y=\"1.5\" "
        "width=\"11\" height=\"11\"/></svg> a FAIL finding's link <svg width=\"14\" height=\"14\"><rect "
        "class=\"mark warn\" x=\"1.5\" y=\"1.5\" width=\"11\" height=\"11\"/></svg> a WARN's";
  return out + "</div>\n";
}

std::string svg_defs() {
  // Missing: light grey with grey stripes; failed: white with dense black crosses, so
  // neither reads as a colour of the scale, in colour or in print.
  return "<svg class=\"defs\" width=\"0\" height=\"0\" aria-hidden=\"true\"><defs>"
         "<pattern id=\"rb-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
         "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#eee\"/>"
         "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#aaa\" stroke-width=\"2\"/></pattern>"
         "<pattern id=\"rb-hatch-failed\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
         "<rect width=\"6\" height=\"6\" fill=\"#fff\"/><path d=\"M0,0 L6,6 M6,0 L0,6\" stroke=\"#000\" "
         "stroke-width=\"1.2\"/></pattern></defs></svg>\n";
}

}  // namespace railbench::report
