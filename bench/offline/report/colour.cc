#include "bench/offline/report/colour.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace railbench::report {

namespace {

struct Rgb {
  double r, g, b;
};

// Viridis at 0, 1/8, ..., 1 (matplotlib's table); linear in between is within a shade.
constexpr std::array<Rgb, 9> kViridis{{{68, 1, 84},
                                       {71, 44, 122},
                                       {59, 81, 139},
                                       {44, 113, 142},
                                       {33, 144, 141},
                                       {39, 173, 129},
                                       {92, 200, 99},
                                       {170, 220, 50},
                                       {253, 231, 37}}};

// ColorBrewer PuOr, orange end first: log2(ratio) at -1, -0.5, 0, 0.5, 1.
constexpr std::array<Rgb, 5> kPuOr{{{179, 88, 6}, {241, 163, 64}, {247, 247, 247}, {153, 142, 195}, {84, 39, 136}}};

template <size_t N>
std::string interpolate(const std::array<Rgb, N>& stops, double t) {
  if (std::isnan(t)) t = 0;
  t = std::clamp(t, 0.0, 1.0) * (N - 1);
  const size_t i = std::min(static_cast<size_t>(t), N - 2);
  const double f = t - i;
  const auto mix = [&](double a, double b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(stops[i].r, stops[i + 1].r), mix(stops[i].g, stops[i + 1].g),
                     mix(stops[i].b, stops[i + 1].b));
}

}  // namespace

std::string viridis(double t) {
  return interpolate(kViridis, t);
}

std::string ratio_colour(double ratio) {
  return interpolate(kPuOr, ratio > 0 ? (std::clamp(std::log2(ratio), -1.0, 1.0) + 1) / 2 : 0.5);
}

std::string series_colour(int i) {
  static constexpr std::array<const char*, 8> kOkabeIto{"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                                        "#56b4e9", "#d55e00", "#000000", "#f0e442"};
  return kOkabeIto[static_cast<size_t>(i) % kOkabeIto.size()];
}

std::string text_on(const std::string& background) {
  if (background.size() != 7) return "#000";
  const int r = std::stoi(background.substr(1, 2), nullptr, 16);
  const int g = std::stoi(background.substr(3, 2), nullptr, 16);
  const int b = std::stoi(background.substr(5, 2), nullptr, 16);
  return 0.299 * r + 0.587 * g + 0.114 * b > 140 ? "#000" : "#fff";
}

namespace {
constexpr int kViridisSteps = 64, kRatioSteps = 33;

double ratio_position(double ratio) {
  return ratio > 0 ? (std::clamp(std::log2(ratio), -1.0, 1.0) + 1) / 2 : 0.5;
}
}  // namespace

std::string viridis_class(double t) {
  if (std::isnan(t)) t = 0;
  return fmt::format("v{}", static_cast<int>(std::lround(std::clamp(t, 0.0, 1.0) * (kViridisSteps - 1))));
}

std::string ratio_class(double ratio) {
  return fmt::format("d{}", static_cast<int>(std::lround(ratio_position(ratio) * (kRatioSteps - 1))));
}

std::string fill_colour(const std::string& fill) {
  if (fill.size() < 2 || fill[0] == '#') return fill;
  const int step = std::atoi(fill.c_str() + 1);
  if (fill[0] == 'v') return viridis(static_cast<double>(step) / (kViridisSteps - 1));
  if (fill[0] == 'd') return interpolate(kPuOr, static_cast<double>(step) / (kRatioSteps - 1));
  return fill;
}

std::string scale_css() {
  std::string out;
  for (int i = 0; i < kViridisSteps; ++i) out += fmt::format(".v{}{{fill:{}}}", i, fill_colour(fmt::format("v{}", i)));
  out += "\n";
  for (int i = 0; i < kRatioSteps; ++i) out += fmt::format(".d{}{{fill:{}}}", i, fill_colour(fmt::format("d{}", i)));
  return out + "\n";
}

}  // namespace railbench::report
