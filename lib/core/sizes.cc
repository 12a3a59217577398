#include "lib/core/sizes.h"

#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

uint64_t parse_size(std::string_view text) {
  auto fail = [&]() -> uint64_t {
    throw UsageError(
        fmt::format("cannot parse size '{}': use a whole number of bytes with an optional K, M or G suffix "
                    "(powers of 1024), e.g. 8, 4K, 1M, 1G",
                    text));
  };
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i == text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return fail();
  uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return fail();
    value = value * 10 + digit;
    ++i;
  }
  std::string suffix;
  for (; i < text.size(); ++i) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) continue;
    suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
  }
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else if (suffix == "K" || suffix == "KB" || suffix == "KIB") {
    shift = 10;
  } else if (suffix == "M" || suffix == "MB" || suffix == "MIB") {
    shift = 20;
  } else if (suffix == "G" || suffix == "GB" || suffix == "GIB") {
    shift = 30;
  } else if (suffix == "T" || suffix == "TB" || suffix == "TIB") {
    shift = 40;
  } else {
    return fail();
  }
  if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) return fail();
  return value << shift;
}

std::string format_size(uint64_t bytes) {
  constexpr const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  uint64_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{}{}", v, units[u]);
}

std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, uint64_t factor, uint64_t step_bytes) {
  if (min_bytes > max_bytes) {
    throw UsageError(fmt::format("min bytes ({}) is larger than max bytes ({}): make -b <= -e", format_size(min_bytes),
                                 format_size(max_bytes)));
  }
  std::vector<uint64_t> sizes;
  if (step_bytes == 0 && min_bytes != max_bytes) {
    if (factor < 2) throw UsageError(fmt::format("step factor must be 2 or more (got {}): e.g. -f 2", factor));
    if (min_bytes == 0) throw UsageError("min bytes is 0 with a step factor: start the sweep at 1 byte or more (-b 1)");
  }
  // Counted before anything is built: a fixed step over a wide range would otherwise
  // allocate (and then run) billions of sizes.
  if (step_bytes != 0 && (max_bytes - min_bytes) / step_bytes >= kMaxSweepSizes) {
    throw UsageError(fmt::format(
        "-b {} -e {} -i {} gives more than {} sizes (the most one sweep runs): raise -i, narrow -b/-e, or use "
        "-f instead of -i",
        format_size(min_bytes), format_size(max_bytes), format_size(step_bytes), kMaxSweepSizes));
  }
  for (uint64_t s = min_bytes; s <= max_bytes;) {
    sizes.push_back(s);
    if (s == max_bytes) break;
    uint64_t next = step_bytes ? s + step_bytes : s * factor;
    if (next <= s) break;  // overflow
    s = next;              // as nccl-tests: a step past max ends the sweep
  }
  return sizes;
}

}  // namespace railbench
