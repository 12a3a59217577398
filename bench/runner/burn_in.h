// Burn-in (--duration / --cycles): the measurement repeated in windows until rank 0's
// clock or count says stop, keeping one figure per link (or size) per window, never the
// raw samples, so memory grows with windows x links only. At the end each link gets its
// min / median / max window, its worst window and when it was, and an "intermittent"
// verdict when its windows fall below the threshold only some of the time: the loose
// cable or error storm that passes a 10-second test and fails in production.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/clock.h"
#include "lib/runtime/bootstrap.h"

namespace railbench {

// A window whose figure is below this fraction of its group's median (the rail's, or
// the size's own) counts as a low window (bench/runner/README.md, "Burn-in"); validate takes its own from
// the SU config (thresholds.burn_in_below_median).
inline constexpr double kBurnInBelowFraction = 0.8;
// A group of at least this many links (a rail's) is judged window by window against its
// own median in that window; a smaller one (a sweep's size, the one pair of two ranks)
// against its median over the whole run.
inline constexpr int kBurnInPerWindowLinks = 3;
// The most windows kept: when a new window would make more, neighbouring windows are
// merged two into one (its figure the worse of the two), so a window then spans 2, 4,
// ... passes and memory and the results file stay bounded for any duration.
inline constexpr size_t kBurnInMaxWindows = 1024;
// The results file is rewritten after a window at most this often (and after the last).
inline constexpr double kBurnInRewriteEvery = 2.0;
// The longest --duration: 30 days.
inline constexpr double kMaxBurnInSeconds = 30 * 86400.0;

// "90s", "10m", "1h", "1.5h", "45" (seconds). Throws UsageError naming the text and the
// fix for anything else, zero and negative durations included.
double parse_duration(const std::string& text);

// What --duration and --cycles asked for; neither: one window, the run as before.
struct BurnInPlan {
  double duration_s = 0;  // start windows while less than this has passed
  int cycles = 0;         // or run exactly this many windows
  bool on() const { return duration_s > 0 || cycles > 0; }
  std::string describe() const;  // "10m (600 s)" or "3 cycles"
};

// From the option texts (empty duration, cycles 0: off). Throws UsageError.
BurnInPlan make_burn_in_plan(const std::string& duration, int cycles);

// One window's place in time: seconds from the start of the burn-in and wall clock.
struct WindowTime {
  double start_s = 0, end_s = 0;
  std::string wall;  // UTC, ISO 8601, when it started
};

// One link's (or size's) windows, summarized.
struct BurnInLink {
  std::string link;   // "node02 rail1", "rail 0 ranks 0-1", "1048576 B"
  std::string group;  // links judged against each other: "rail1"; a size is its own
  std::string unit;   // "GB/s"
  int windows = 0;    // windows it has a slot in
  int missing = 0;    // windows in which it did not finish (counted as low)
  double min = 0, median = 0, max = 0;
  double reference = 0;     // its group's median over every window
  bool per_window = false;  // low is judged against the group's median in each window
  double below = kBurnInBelowFraction;
  int low = 0;      // windows below `below` x reference, missing and flagged included
  int flagged = 0;  // windows flag()ged, for `why`
  int under = 0;    // finished windows whose figure is below `below` x their reference
  std::string why;
  int worst = -1;  // index of its lowest window (against its reference)
  double worst_value = 0;
  bool intermittent() const { return low > 0 && low < windows; }
  bool always_low() const { return windows > 0 && low == windows; }
  // "3 of 12 windows below 80% of the rail1 median (0.048 GB/s), worst 0.010 GB/s at
  // +42 s (2026-11-23T19:40:12Z)"
  std::string reason(const std::vector<WindowTime>& times) const;
  // "node03 rail1 intermittent: " and the reason.
  std::string sentence(const std::vector<WindowTime>& times) const { return link + " intermittent: " + reason(times); }
};

// The figures of every window, by link. Memory: one double per link per window.
class BurnInLog {
 public:
  // `below`: the fraction of its group's median under which a window is low.
  explicit BurnInLog(double below = kBurnInBelowFraction) : below_(below) {}
  // Starts a window now (`wall`: its wall-clock start, for tests; empty: now).
  void begin_window(double start_s, std::string wall = "");
  void end_window(double end_s);
  // The current window's figure for `link` (NaN: it did not finish). A link first seen
  // in a later window is missing from the earlier ones.
  void add(const std::string& link, const std::string& group, const std::string& unit, double value);
  // Marks the current window low for `link` whatever its figure, for `why` ("the link
  // went down"): an event seen by other means than the figure (validate: the NIC's link
  // down counters). A link not added yet is ignored.
  void flag(const std::string& link, const std::string& why);

  size_t windows() const { return times_.size(); }
  // Passes of the measurement per window: 1, then 2, 4, ... once windows were merged.
  int passes_per_window() const { return passes_; }
  const std::vector<WindowTime>& times() const { return times_; }
  std::vector<BurnInLink> summarize() const;
  // {"plan", "below_fraction", "windows": [{index, start_s, end_s, wall}],
  //  "links": [{link, group, unit, values: [..., null for missing], min, median, max,
  //  reference, low_windows, worst_window, worst_at_s, worst_wall, intermittent}]}
  nlohmann::json to_json(const BurnInPlan& plan) const;
  // The summary table (one line per link, intermittent ones marked), for the output;
  // `key` heads the first column ("link", "size", "pair").
  std::vector<std::string> table(const std::string& title, const std::string& key = "link") const;

 private:
  struct Series {
    std::string group, unit;
    std::vector<double> values;    // per window; NaN: missing
    std::vector<uint8_t> flagged;  // per window: flag() was called
    double carry = 0;              // the window's figure before the pass being folded in
    bool carrying = false;
    std::string why;  // what a flag means
  };
  void merge_pairs();

  double below_;
  int passes_ = 1;          // passes per window
  int passes_in_last_ = 0;  // passes folded into the last window so far
  std::vector<WindowTime> times_;
  std::vector<std::string> order_;  // links in first-seen order
  std::map<std::string, Series> series_;
};

// The window loop's clock and stop rule, the same on every rank: rank 0 decides from its
// own clock whether another window starts and every rank follows its answer (one
// all-gather over the bootstrap, which has its own deadline, per window).
class BurnInClock {
 public:
  BurnInClock(Bootstrap& bootstrap, BurnInPlan plan);
  // Collective. True: run window `windows_started()`; the first call is always true.
  bool next_window();
  double elapsed_s() const { return seconds_between(start_, Clock::now()); }
  int windows_started() const { return started_; }
  const BurnInPlan& plan() const { return plan_; }
  // Whether the results file is due its rewrite after the window just done: a burn-in is
  // on, and the first window or kBurnInRewriteEvery seconds since the last rewrite (a
  // sweep of small sizes runs many windows a second, and every rewrite holds every
  // window so far). The caller rewrites it once more after the last window.
  bool rewrite_due();

 private:
  Bootstrap& bootstrap_;
  BurnInPlan plan_;
  Clock::time_point start_;
  Clock::time_point rewritten_{};
  int started_ = 0;
};

// The progress line's text for a window: "window 3/12" or "window 3, 02:10 of 10:00".
std::string window_label(const BurnInClock& clock);

}  // namespace railbench
