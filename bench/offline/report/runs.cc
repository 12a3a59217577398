// Helpers every section uses to read a results document.
#include <cmath>

#include <fmt/format.h>

#include "bench/offline/report/html.h"
#include "bench/offline/report/sections.h"

namespace railbench::report {

const nlohmann::json* entry_at_size(const nlohmann::json& results, uint64_t bytes, std::string& note) {
  const nlohmann::json* largest = nullptr;
  for (const auto& r : results) {
    const uint64_t b = r.value("bytes", uint64_t{0});
    if (bytes && b == bytes) return &r;
    if (!largest || b > largest->value("bytes", uint64_t{0})) largest = &r;
  }
  if (bytes && largest)
    note = fmt::format("{} was not measured in this run: showing the largest size, {}.", size_label(bytes),
                       size_label(largest->value("bytes", uint64_t{0})));
  return largest;
}

const nlohmann::json* same_size(const nlohmann::json& results, uint64_t bytes) {
  for (const auto& r : results)
    if (r.value("bytes", uint64_t{0}) == bytes) return &r;
  return nullptr;
}

std::vector<std::string> rank_labels(const nlohmann::json& world, int ranks) {
  std::vector<std::string> out(static_cast<size_t>(ranks));
  const auto list = world.value("ranks", nlohmann::json::array());
  for (int i = 0; i < ranks; ++i) {
    std::string host;
    for (const auto& r : list)
      if (r.value("rank", -1) == i) host = text_at(r, "host");
    out[i] = host.empty() ? fmt::format("r{}", i) : fmt::format("r{} {}", i, host);
  }
  return out;
}

std::vector<int> host_starts(const nlohmann::json& world, int ranks) {
  std::vector<std::string> host(static_cast<size_t>(ranks));
  for (const auto& r : world.value("ranks", nlohmann::json::array())) {
    const int i = r.value("rank", -1);
    if (i >= 0 && i < ranks) host[i] = text_at(r, "host");
  }
  std::vector<int> out;
  for (int i = 1; i < ranks; ++i)
    if (host[i] != host[i - 1]) out.push_back(i);
  return out;
}

std::string change(double now, double base) {
  if (std::isnan(now) || std::isnan(base) || base == 0) return "";
  const double c = (now / base - 1) * 100;
  return fmt::format("{:+.{}f}%", c, std::fabs(c) < 10 ? 1 : 0);
}

double stat(const nlohmann::json& summary, const char* field) {
  return number_at(summary, field);
}

}  // namespace railbench::report
