#include "bench/offline/db/trends.h"

#include <algorithm>
#include <cmath>

#include "lib/core/stats.h"

namespace railbench::db {

namespace {

struct Fit {
  double slope = 0, intercept = 0, residual_sd = 0;
};

// Theil-Sen over the runs' order 0..n-1: the slope is the median of every pair's slope,
// the intercept the median of y - slope x, and the residuals' spread 1.4826 x their MAD.
// One run that the host's load moved (a rail's median slowed by its neighbours while the
// link itself was capped) moves none of the three, as it would a least-squares line.
Fit fit(const std::vector<double>& y) {
  std::vector<double> slopes;
  for (size_t i = 0; i < y.size(); ++i)
    for (size_t j = i + 1; j < y.size(); ++j) slopes.push_back((y[j] - y[i]) / static_cast<double>(j - i));
  Fit f;
  f.slope = median(slopes);
  std::vector<double> at_zero, residuals;
  for (size_t i = 0; i < y.size(); ++i) at_zero.push_back(y[i] - f.slope * static_cast<double>(i));
  f.intercept = median(at_zero);
  for (size_t i = 0; i < y.size(); ++i) residuals.push_back(y[i] - (f.intercept + f.slope * static_cast<double>(i)));
  f.residual_sd = scaled_mad(residuals);
  return f;
}

// A thing's run-to-run noise: the scaled MAD of the changes between its consecutive
// runs, over sqrt(2) (a change is the difference of two noisy values). A steady drift
// moves every change alike, so it adds little to their MAD.
double run_to_run_noise(const std::vector<store::SeriesPoint>& p) {
  if (p.size() < 3) return 0;
  std::vector<double> d;
  for (size_t i = 1; i < p.size(); ++i) d.push_back(p[i].value - p[i - 1].value);
  return scaled_mad(d) / std::sqrt(2.0);
}

std::vector<store::SeriesPoint> last_window(const store::Series& s, int window) {
  const size_t n = s.points.size(), w = static_cast<size_t>(window);
  return {s.points.begin() + static_cast<std::ptrdiff_t>(n > w ? n - w : 0), s.points.end()};
}

// The z a slope must reach so that, of `tests` things without any drift, one is named
// by chance in 1 of 100 calls (Bonferroni: each at 0.01 / tests, both tails), and at
// least `floor`: a fleet of 2,048 NICs x 2 directions asks for about 4.8.
double z_needed(size_t tests, double floor) {
  const double alpha = 0.01 / static_cast<double>(std::max<size_t>(tests, 1));
  double lo = 0, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erfc(mid / std::sqrt(2.0)) > alpha ? lo : hi) = mid;
  }
  return std::max(hi, floor);
}

}  // namespace

std::vector<Drift> drifting(const std::vector<store::Series>& series, bool higher_better, std::optional<double> limit,
                            const TrendOptions& opt) {
  // The fleet's noise: the median of every thing's run-to-run noise of this metric, so a
  // thing with a quiet window is not judged against its own luck.
  std::vector<double> noises;
  for (const auto& s : series)
    if (const double n = run_to_run_noise(s.points); n > 0) noises.push_back(n);
  const double fleet_noise = noises.empty() ? 0 : median(noises);

  size_t judged = 0;
  for (const auto& s : series)
    judged += static_cast<int>(std::min<size_t>(s.points.size(), opt.window)) >= opt.min_runs;
  const double z = z_needed(judged, opt.noise_k);

  std::vector<Drift> out;
  for (const auto& s : series) {
    const auto w = last_window(s, opt.window);
    if (static_cast<int>(w.size()) < opt.min_runs) continue;
    if (!std::all_of(w.begin(), w.end(), [](const store::SeriesPoint& p) { return p.passed; })) continue;
    std::vector<double> y;
    for (const auto& p : w) y.push_back(p.value);
    const Fit f = fit(y);
    const double first = f.intercept, last = f.intercept + f.slope * static_cast<double>(w.size() - 1);
    const double change = last - first;
    const bool worse = higher_better ? change < 0 : change > 0;
    const double noise = std::max(f.residual_sd, fleet_noise);
    // The slope's standard error under that noise, over the window's runs 0..n-1 (as for
    // least squares: Theil-Sen's is a little wider, which the z margin absorbs).
    const double n = static_cast<double>(w.size());
    const double slope_se = noise / std::sqrt(n * (n * n - 1) / 12);
    if (!worse || std::abs(f.slope) <= z * slope_se) continue;
    if (first == 0 || std::abs(change / first) < opt.min_change) continue;
    Drift d{s.thing, s.metric, s.unit, static_cast<int>(w.size()), first, last};
    d.per_run = f.slope;
    const double span_days = w.back().t_days - w.front().t_days;
    d.per_week = span_days > 0 ? change / span_days * 7 : 0;
    d.noise = noise;
    d.change = change / first;
    if (limit && span_days > 0) {
      const double per_day = change / span_days;
      const double days = (*limit - last) / per_day;
      if (days > 0) d.crosses_in_days = days;
    }
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(),
            [](const Drift& a, const Drift& b) { return std::abs(a.change) > std::abs(b.change); });
  return out;
}

std::vector<Flaky> flaky(const std::vector<store::Series>& series, const TrendOptions& opt) {
  std::vector<Flaky> out;
  for (const auto& s : series) {
    const auto w = last_window(s, opt.window);
    Flaky f{s.thing, static_cast<int>(w.size())};
    for (size_t i = 0; i < w.size(); ++i) {
      f.pattern += w[i].passed ? 'P' : 'F';
      f.failed += !w[i].passed;
      if (i > 0 && w[i].passed != w[i - 1].passed) ++f.changes;
    }
    if (f.failed >= 2 && f.runs - f.failed >= 2 && f.changes >= 3) out.push_back(std::move(f));
  }
  return out;
}

std::string sparkline(const std::vector<double>& values) {
  static const char* const kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (values.empty()) return "";
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  std::string out;
  for (double v : values) {
    const int i = *hi > *lo ? static_cast<int>(std::lround((v - *lo) / (*hi - *lo) * 7)) : 3;
    out += kBars[std::clamp(i, 0, 7)];
  }
  return out;
}

}  // namespace railbench::db
