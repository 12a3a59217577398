#include "bench/runner/burn_in.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <limits>

#include <fmt/format.h>

#include "bench/runner/status_line.h"
#include "lib/core/config_path.h"
#include "lib/core/errors.h"
#include "lib/core/stats.h"

namespace railbench {

using nlohmann::json;

namespace {

std::string utc_now() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

double parse_duration(const std::string& text) {
  const std::string fix = "use a number and a unit: 90s, 10m, 1h (a plain number is seconds)";
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (text.empty() || ec != std::errc() || !std::isfinite(value))
    throw UsageError(fmt::format("--duration '{}' is not a duration: {}", text, fix));
  const std::string unit(ptr, end);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  if (unit == "m" || unit == "min") scale = 60;
  if (unit == "h") scale = 3600;
  if (scale == 0)
    throw UsageError(fmt::format("--duration '{}': unknown unit '{}': {}", text, cut_for_error(unit, 16), fix));
  const double seconds = value * scale;
  if (!(seconds > 0))
    throw UsageError(fmt::format("--duration '{}' must be more than 0: e.g. --duration 10m, or leave it out", text));
  if (seconds > kMaxBurnInSeconds)
    throw UsageError(fmt::format("--duration '{}' is longer than the 30-day limit: use at most 720h", text));
  return seconds;
}

std::string BurnInPlan::describe() const {
  if (cycles > 0) return fmt::format("{} cycle{}", cycles, cycles == 1 ? "" : "s");
  if (duration_s > 0) return fmt::format("{:g} s", duration_s);
  return "off";
}

BurnInPlan make_burn_in_plan(const std::string& duration, int cycles) {
  BurnInPlan plan;
  if (!duration.empty() && cycles > 0)
    throw UsageError("--duration and --cycles both given: a burn-in stops by time or by count, give one of them");
  if (cycles < 0) throw UsageError(fmt::format("--cycles {} must be 1 or more", cycles));
  if (!duration.empty()) plan.duration_s = parse_duration(duration);
  plan.cycles = cycles;
  return plan;
}

std::string BurnInLink::reason(const std::vector<WindowTime>& times) const {
  // "3 of 12 windows low: 2 below 80% of the rail1 median in the same window (0.0591 GB/s
  // over the run), the link went down in 2, 1 did not finish"
  std::vector<std::string> parts;
  if (under)
    parts.push_back(
        per_window
            ? fmt::format("{} below {:.0f}% of the {} median in the same window ({:.3g} {} over the run)", under,
                          below * 100, group, reference, unit)
            : fmt::format("{} below {:.0f}% of the {} median ({:.3g} {})", under, below * 100, group, reference, unit));
  if (flagged) parts.push_back(fmt::format("{} in {}", why, flagged));
  if (missing) parts.push_back(fmt::format("{} did not finish", missing));
  std::string out = fmt::format("{} of {} windows low", low, windows);
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? ": " : ", ") + parts[i];
  if (worst >= 0 && static_cast<size_t>(worst) < times.size()) {
    const WindowTime& w = times[static_cast<size_t>(worst)];
    out += fmt::format(
        ", worst {} at +{:.0f} s ({})",
        std::isnan(worst_value) ? std::string("did not finish") : fmt::format("{:.3g} {}", worst_value, unit),
        w.start_s, w.wall);
  }
  return out;
}

void BurnInLog::begin_window(double start_s, std::string wall) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Once windows were merged, a window holds passes_ passes: a pass that does not start
  // a window folds into the last one (each figure the worse of the two).
  if (!times_.empty() && passes_in_last_ < passes_) {
    ++passes_in_last_;
    for (auto& [link, s] : series_) {
      s.carry = s.values.back();
      s.carrying = true;
      s.values.back() = nan;  // stays missing unless this pass adds it
    }
    return;
  }
  if (times_.size() >= kBurnInMaxWindows) merge_pairs();
  times_.push_back(WindowTime{start_s, start_s, wall.empty() ? utc_now() : std::move(wall)});
  passes_in_last_ = 1;
  for (auto& [link, s] : series_) {
    s.values.push_back(nan);
    s.flagged.push_back(0);
    s.carrying = false;
  }
}

void BurnInLog::flag(const std::string& link, const std::string& why) {
  auto it = series_.find(link);
  if (it == series_.end() || times_.empty()) return;
  it->second.flagged.back() = 1;
  it->second.why = why;
}

// Windows 2i and 2i+1 become window i: a figure is the worse of the two (a pass that did
// not finish wins), so a low pass is never averaged away.
void BurnInLog::merge_pairs() {
  const size_t n = times_.size() / 2;
  for (size_t i = 0; i < n; ++i)
    times_[i] = WindowTime{times_[2 * i].start_s, times_[2 * i + 1].end_s, times_[2 * i].wall};
  const bool odd = times_.size() % 2;
  if (odd) times_[n] = times_.back();
  times_.resize(n + odd);
  for (auto& [link, s] : series_) {
    for (size_t i = 0; i < n; ++i) {
      const double a = s.values[2 * i], b = s.values[2 * i + 1];
      s.values[i] = std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::min(a, b);
    }
    if (odd) s.values[n] = s.values.back();
    s.values.resize(n + odd);
    for (size_t i = 0; i < n; ++i) s.flagged[i] = s.flagged[2 * i] | s.flagged[2 * i + 1];
    if (odd) s.flagged[n] = s.flagged.back();
    s.flagged.resize(n + odd);
  }
  passes_ *= 2;
}

void BurnInLog::end_window(double end_s) {
  if (!times_.empty()) times_.back().end_s = end_s;
}

void BurnInLog::add(const std::string& link, const std::string& group, const std::string& unit, double value) {
  if (times_.empty()) begin_window(0);
  auto [it, fresh] = series_.try_emplace(link);
  Series& s = it->second;
  if (fresh) {
    order_.push_back(link);
    s.group = group;
    s.unit = unit;
    s.values.assign(times_.size(), std::numeric_limits<double>::quiet_NaN());
    s.flagged.assign(times_.size(), 0);
  }
  // Folding a pass into its window: missing in either pass is missing, else the lower.
  if (s.carrying) value = std::isnan(s.carry) ? s.carry : std::min(s.carry, value);
  s.values.back() = value;
}

std::vector<BurnInLink> BurnInLog::summarize() const {
  // A link is judged against its group: a rail's links against their rail's median in
  // the same window, so that what slows every link at once (the first window's
  // connection set-up, a busy host, a switch reconverging) is no one link's fault; a
  // group of fewer links (a size of a sweep, the one pair of two ranks) against its own
  // median over the run. A link slow in every window is then low throughout (the plain
  // verdict's business) and a flapping one only in some.
  std::map<std::string, std::vector<double>> by_group;
  std::map<std::string, int> links_in;
  for (const auto& [link, s] : series_) {
    ++links_in[s.group];
    for (double v : s.values)
      if (!std::isnan(v)) by_group[s.group].push_back(v);
  }
  std::map<std::string, double> reference;
  for (auto& [g, v] : by_group) reference[g] = median(std::move(v));
  std::map<std::string, std::vector<double>> window_reference;  // per group, per window
  for (const auto& [g, n] : links_in) {
    auto& per = window_reference[g];
    for (size_t w = 0; w < times_.size(); ++w) {
      std::vector<double> v;
      for (const auto& [link, s] : series_)
        if (s.group == g && !std::isnan(s.values[w])) v.push_back(s.values[w]);
      per.push_back(n >= kBurnInPerWindowLinks && !v.empty() ? median(std::move(v)) : reference[g]);
    }
  }

  std::vector<BurnInLink> out;
  for (const auto& link : order_) {
    const Series& s = series_.at(link);
    BurnInLink l;
    l.link = link;
    l.group = s.group;
    l.unit = s.unit;
    l.windows = static_cast<int>(s.values.size());
    l.reference = reference[s.group];
    l.below = below_;
    l.why = s.why;
    l.per_window = links_in[s.group] >= kBurnInPerWindowLinks;
    const auto& refs = window_reference[s.group];
    double worst_ratio = 0;
    std::vector<double> finished;
    for (size_t w = 0; w < s.values.size(); ++w) {
      const double v = s.values[w];
      const bool missing = std::isnan(v);
      l.missing += missing;
      if (!missing) finished.push_back(v);
      const bool under = !missing && v < below_ * refs[w];
      l.flagged += s.flagged[w];
      l.under += under;
      if (missing || s.flagged[w] || under) ++l.low;
      // The worst window: one that did not finish, else the lowest against its reference.
      // ... and among the rest a flagged one before an unflagged one.
      const double ratio = missing ? -1e9 : (s.flagged[w] ? -1e6 : 0) + (refs[w] > 0 ? v / refs[w] : 1);
      if (l.worst < 0 || ratio < worst_ratio) l.worst = static_cast<int>(w), l.worst_value = v, worst_ratio = ratio;
    }
    if (!finished.empty()) {
      l.min = *std::min_element(finished.begin(), finished.end());
      l.max = *std::max_element(finished.begin(), finished.end());
      l.median = median(finished);
    }
    out.push_back(std::move(l));
  }
  return out;
}

json BurnInLog::to_json(const BurnInPlan& plan) const {
  json windows = json::array();
  for (size_t w = 0; w < times_.size(); ++w)
    windows.push_back(
        json{{"index", w}, {"start_s", times_[w].start_s}, {"end_s", times_[w].end_s}, {"wall", times_[w].wall}});
  json links = json::array();
  for (const auto& l : summarize()) {
    json values = json::array();
    for (double v : series_.at(l.link).values) values.push_back(std::isnan(v) ? json(nullptr) : json(v));
    json j{{"link", l.link},
           {"group", l.group},
           {"unit", l.unit},
           {"values", values},
           {"min", l.min},
           {"median", l.median},
           {"max", l.max},
           {"reference", l.reference},
           {"low_windows", l.low},
           {"missing_windows", l.missing},
           {"flagged_windows", l.flagged},
           {"intermittent", l.intermittent()}};
    if (l.worst >= 0) {
      const WindowTime& t = times_[static_cast<size_t>(l.worst)];
      j["worst_window"] = l.worst;
      j["worst_at_s"] = t.start_s;
      j["worst_wall"] = t.wall;
    }
    links.push_back(std::move(j));
  }
  json p = json::object();
  if (plan.duration_s > 0) p["duration_s"] = plan.duration_s;
  if (plan.cycles > 0) p["cycles"] = plan.cycles;
  return json{
      {"plan", p}, {"below_fraction", below_}, {"passes_per_window", passes_}, {"windows", windows}, {"links", links}};
}

std::vector<std::string> BurnInLog::table(const std::string& title, const std::string& key) const {
  std::vector<std::string> out;
  const auto links = summarize();
  const double span = times_.empty() ? 0 : times_.back().end_s;
  out.push_back(fmt::format(
      "# burn-in summary: {}, {} window(s) in {:.0f} s; low = below {:.0f}% of the group median", title,
      passes_ > 1 ? fmt::format("{} ({} passes each)", times_.size(), passes_) : fmt::format("{}", times_.size()), span,
      below_ * 100));
  out.push_back(fmt::format("# {:<28} {:>10} {:>10} {:>10} {:>7} {:>13} {:>8}  {}", key, "min", "median", "max", "low",
                            "worst at (s)", "unit", "verdict"));
  int flagged = 0;
  for (const auto& l : links) {
    const double at = l.worst >= 0 ? times_[static_cast<size_t>(l.worst)].start_s : 0;
    const char* verdict = l.intermittent() ? "INTERMITTENT" : l.always_low() ? "low in every window" : "steady";
    flagged += l.intermittent();
    out.push_back(fmt::format("  {:<28} {:>10.4g} {:>10.4g} {:>10.4g} {:>7} {:>13.1f} {:>8}  {}", l.link, l.min,
                              l.median, l.max, fmt::format("{}/{}", l.low, l.windows), at, l.unit, verdict));
  }
  for (const auto& l : links)
    if (l.intermittent()) out.push_back("# " + l.sentence(times_));
  out.push_back(fmt::format("# burn-in: {} intermittent link(s) of {}", flagged, links.size()));
  return out;
}

BurnInClock::BurnInClock(Bootstrap& bootstrap, BurnInPlan plan)
    : bootstrap_(bootstrap), plan_(plan), start_(Clock::now()) {}

bool BurnInClock::next_window() {
  bool go = started_ == 0;
  if (!go && plan_.cycles > 0) go = started_ < plan_.cycles;
  if (!go && plan_.duration_s > 0) go = elapsed_s() < plan_.duration_s;
  // Rank 0's answer is everyone's: clocks differ, and a rank that stopped alone would
  // leave the others waiting for it.
  const auto answers = bootstrap_.all_gather_value<uint8_t>(go ? 1 : 0);
  go = answers.at(0) != 0;
  if (go) ++started_;
  return go;
}

bool BurnInClock::rewrite_due() {
  if (!plan_.on()) return false;
  const auto now = Clock::now();
  if (started_ > 1 && seconds_between(rewritten_, now) < kBurnInRewriteEvery) return false;
  rewritten_ = now;
  return true;
}

std::string window_label(const BurnInClock& clock) {
  const BurnInPlan& p = clock.plan();
  if (p.cycles > 0) return fmt::format("window {}/{}", clock.windows_started(), p.cycles);
  return fmt::format("window {}, {} of {}", clock.windows_started(), format_clock(clock.elapsed_s()),
                     format_clock(p.duration_s));
}

}  // namespace railbench
