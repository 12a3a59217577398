// Monotonic time and deadlines shared by every layer.
#pragma once

#include <chrono>
#include <cstdint>

namespace railbench {

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A point in time after which a wait on a peer gives up and names the peer.
class Deadline {
 public:
  static Deadline after(double seconds) {
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
  }
  static Deadline never() { return Deadline(Clock::time_point::max()); }

  bool passed() const { return Clock::now() >= at_; }
  bool passed(Clock::time_point now) const { return now >= at_; }
  Clock::time_point at() const { return at_; }
  double remaining_seconds() const {
    auto now = Clock::now();
    return now >= at_ ? 0.0 : seconds_between(now, at_);
  }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace railbench
