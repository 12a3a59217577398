// The two kinds of picture a report draws, as inline SVG: a line chart over message
// sizes (log2 axis) with optional p50-p99 bands and dashed baseline lines, and a heatmap
// (node x node or rank x rank) whose cells carry their value in a <title> (the hover).
#pragma once

#include <string>
#include <vector>

namespace railbench::report {

struct Series {
  std::string name;
  std::vector<double> x;  // bytes
  std::vector<double> y;  // NaN: no point
  // Optional band drawn under the line (e.g. p50..p99), same length as x.
  std::vector<double> lo, hi;
  int colour = 0;         // series_colour index
  bool baseline = false;  // dashed, thinner: the run compared against
};

struct LineChart {
  std::string title;
  std::string y_label;  // with its unit: "busbw (GB/s)"
  bool log_y = false;
  std::vector<Series> series;
  std::string x_label = "message size";  // x is a count of bytes (or tokens): log2 axis, 4K/1M labels
  bool x_bytes = true;                   // tick labels "64 B" (false: "64", for tokens)
  bool x_linear = false;                 // x as it is on a linear axis (a run's number), not log2
  // The chart and its legend as HTML (a <figure> holding an <svg>).
  std::string html(int width = 560, int height = 280) const;
};

struct HeatCell {
  double value = 0;     // NaN: no measurement
  std::string fill;     // "#rrggbb", a scale class ("v41", colour.h), or "" for the hatch of a missing cell
  std::string classes;  // added to "cell": "bad", "warn", "missing", "failed", "self", "regressed"
  std::string title;    // the hover text
  std::string text;     // printed inside when cells are large enough
  std::string id;       // an anchor on the cell (a worst-k link leads here), or ""
  std::string href;     // the cell is a link to this "#anchor", or ""
  bool absent = false;  // no cell at all (a short row of a ragged grid)
};

struct Heatmap {
  std::string id;     // the <svg>'s id; rows get id + "-row-" + index
  std::string title;  // above the map (HTML: escape it first)
  std::vector<std::string> row_labels, col_labels;
  std::vector<std::string> row_titles, col_titles;  // hover on a label (may be empty)
  std::vector<HeatCell> cells;                      // row-major, rows x cols
  std::vector<int> group_starts;                    // indices where a new group (host, leaf) begins: drawn as lines
  std::string corner;                               // a word for the top-left corner ("to ->")
  int max_cell = 44;                                // px: the largest a cell may be drawn
  std::string svg() const;
};

// A horizontal colour key: `stops` colours evenly spaced, labels under both ends and
// the middle, and swatches for "no measurement" and "self" when asked.
std::string colour_key(const std::vector<std::string>& stops, const std::string& low, const std::string& mid,
                       const std::string& high, bool with_missing);

// The <defs> every page carries once: the hatch patterns of cells without a measurement.
std::string svg_defs();

}  // namespace railbench::report
