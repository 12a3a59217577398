#include "bench/runner/status_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>

#include <fmt/format.h>

#include "lib/core/sizes.h"

namespace railbench {

StatusLine::Mode StatusLine::mode_for(bool quiet, bool is_root, bool stderr_tty) {
  if (quiet || !is_root) return Mode::off;
  return stderr_tty ? Mode::live : Mode::lines;
}

StatusLine::StatusLine(Mode mode, std::FILE* out, int width)
    : mode_(mode), out_(out), width_(width), start_(Clock::now()) {
  if (width_ <= 0) {
    struct winsize ws {};
    width_ = ::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  }
}

StatusLine::~StatusLine() {
  clear();
}

double StatusLine::elapsed_s() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void StatusLine::step(const std::string& text) {
  if (mode_ == Mode::off) return;
  if (mode_ == Mode::lines) {
    fmt::print(out_, "{}\n", text);
    std::fflush(out_);
    return;
  }
  text_ = text;
  draw();
}

void StatusLine::update(const std::string& text) {
  if (mode_ != Mode::live) return;
  text_ = text;
  draw();
}

void StatusLine::draw() {
  // One column short of the width: a line that fills the last column wraps on some terminals.
  const size_t room = static_cast<size_t>(std::max(width_ - 1, 1));
  // \r to the line's start, the text, then erase what a longer previous text left.
  fmt::print(out_, "\r{}\033[K", text_.size() > room ? text_.substr(0, room) : text_);
  std::fflush(out_);
  shown_ = true;
}

void StatusLine::hide() {
  if (!shown_) return;
  fmt::print(out_, "\r\033[K");
  std::fflush(out_);
  shown_ = false;
}

void StatusLine::show() {
  if (mode_ == Mode::live && !text_.empty()) draw();
}

void StatusLine::clear() {
  hide();
  text_.clear();
}

std::string format_clock(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(seconds, 0.0)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

std::string sweep_step_text(const std::string& command, size_t index, size_t count, uint64_t bytes, double elapsed_s) {
  return fmt::format("{}: size {}/{} ({}), {} elapsed", command, index, count, format_size(bytes),
                     format_clock(elapsed_s));
}

}  // namespace railbench
