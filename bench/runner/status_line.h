// Where a long run is, on stderr, from rank 0 only: "allreduce: size 12/24 (1M), 00:03
// elapsed", "validate: phase 2 rail checks, round 7/31, 00:42 elapsed, ~01:15 left".
// On a terminal it is one live line, rewritten in place and erased before any other
// output (and at the end), so the tables stay clean; on a file or pipe, one line per
// step; with --quiet, nothing.
#pragma once

#include <cstdio>
#include <string>

#include "lib/core/clock.h"

namespace railbench {

class StatusLine {
 public:
  enum class Mode { off, live, lines };
  // off for --quiet and for every rank but 0; live when stderr is a terminal.
  static Mode mode_for(bool quiet, bool is_root, bool stderr_tty);

  // `width`: the terminal's columns (a live line longer than that would wrap, and \r
  // could not take it back); 0 asks the terminal on `out`.
  explicit StatusLine(Mode mode, std::FILE* out = stderr, int width = 0);
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  // A step (a size, a validate round): the live line, or one line of its own.
  void step(const std::string& text);
  // A finer update inside a step (a sendrecv round): the live line only.
  void update(const std::string& text);
  // Around other output to the terminal: erase the live line, then show it again.
  void hide();
  void show();
  // The run is over: erase the live line for good.
  void clear();

  Mode mode() const { return mode_; }
  double elapsed_s() const;

 private:
  void draw();

  Mode mode_;
  std::FILE* out_;
  int width_;
  std::string text_;
  bool shown_ = false;
  Clock::time_point start_;
};

// "00:42", "12:03", "1:02:03": minutes and seconds, hours once there are any.
std::string format_clock(double seconds);

// "allreduce: size 12/24 (1M), 00:03 elapsed"
std::string sweep_step_text(const std::string& command, size_t index, size_t count, uint64_t bytes, double elapsed_s);

}  // namespace railbench
