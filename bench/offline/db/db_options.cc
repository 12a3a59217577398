#include "bench/offline/db/db_options.h"

#include <cstdlib>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::db {

double since_days(const std::string& text, std::time_t now) {
  if (text == "all") return -1e9;
  char* end = nullptr;
  const double n = std::strtod(text.c_str(), &end);
  const std::string unit = end ? end : "";
  double days = -1;
  if (end != text.c_str() && n >= 0) {
    if (unit == "d") days = n;
    if (unit == "w") days = n * 7;
    if (unit == "h") days = n / 24;
  }
  if (days < 0)
    throw UsageError(fmt::format("--since '{}': give a span back from now, as 30d, 12w or 48h, or all", text));
  return static_cast<double>(now) / 86400.0 - days;
}

}  // namespace railbench::db
