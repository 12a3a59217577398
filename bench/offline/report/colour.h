// Colour scales a colour-blind reader can read: viridis (sequential: dark purple is
// bad, yellow is good) for bandwidth and latency, a purple-orange diverging scale
// (ColorBrewer PuOr) for ratios to a baseline, and the Okabe-Ito palette for the lines
// of a chart. Computed here, so the page needs no library.
#pragma once

#include <string>

namespace railbench::report {

// t in [0, 1] (clamped): 0 = dark purple, 1 = yellow. "#rrggbb".
std::string viridis(double t);

// A ratio to a baseline: 1 is neutral (near white), below 1 orange (0.5 and less the
// darkest), above 1 purple (2 and more the darkest). "#rrggbb".
std::string ratio_colour(double ratio);

// Series colour i of the Okabe-Ito palette (cycles after 8).
std::string series_colour(int i);

// Black or white, whichever reads on `background` ("#rrggbb").
std::string text_on(const std::string& background);

// Heatmap cells take their colour from a class, one per step of a scale, so a 32 x 32 x 8
// page carries "v41" in each cell rather than a colour: 64 steps of viridis ("v0".."v63")
// and 33 of the ratio scale ("d0".."d32", "d16" neutral), indistinguishable from the
// continuous scale by eye. fill_colour("v41") is the colour that class paints.
std::string viridis_class(double t);
std::string ratio_class(double ratio);
std::string fill_colour(const std::string& fill);  // a class or "#rrggbb" -> "#rrggbb"
// The CSS of those classes, once per page.
std::string scale_css();

}  // namespace railbench::report
