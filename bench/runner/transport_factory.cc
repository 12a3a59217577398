#include "bench/runner/transport_factory.h"

#include <charconv>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

TransportSpec parse_transport_spec(const std::string& transport, const std::string& rails) {
  TransportSpec spec;
  auto colon = transport.find(':');
  spec.name = transport.substr(0, colon);
  if (colon != std::string::npos) spec.provider = transport.substr(colon + 1);
  const TransportEntry& entry = find_transport(spec.name, transport);
  if (colon != std::string::npos && spec.provider.empty()) {
    std::string example = entry.name;  // the entry's first form with a provider, if any
    for (const auto& form : entry.forms) {
      if (form.find(':') != std::string::npos) {
        example = form;
        break;
      }
    }
    throw UsageError(fmt::format("transport '{}' names no provider after ':': e.g. -t {}", transport, example));
  }
  if (!rails.empty()) {
    int n = 0;
    auto [ptr, ec] = std::from_chars(rails.data(), rails.data() + rails.size(), n);
    const bool number =
        (ec == std::errc() || ec == std::errc::result_out_of_range) && ptr == rails.data() + rails.size();
    if (number) {
      if (ec == std::errc::result_out_of_range) n = rails[0] == '-' ? 0 : kMaxRails + 1;
      if (n < 1) throw UsageError(fmt::format("--rails {} must be 1 or more", rails));
      if (n > kMaxRails)
        throw UsageError(
            fmt::format("--rails {} is more than the {} rails railbench opens: give at most --rails {} "
                        "(one per NIC)",
                        rails, kMaxRails, kMaxRails));
      spec.num_rails = n;
    } else {
      size_t start = 0;
      while (start <= rails.size()) {
        size_t comma = rails.find(',', start);
        std::string name = rails.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (name.empty())
          throw UsageError(fmt::format("--rails '{}' has an empty name: e.g. --rails eth0,eth1", rails));
        spec.rail_names.push_back(name);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      if (spec.rail_names.size() > static_cast<size_t>(kMaxRails))
        throw UsageError(fmt::format("--rails names {} rails, more than the {} railbench opens: name at most {}",
                                     spec.rail_names.size(), kMaxRails, kMaxRails));
      spec.num_rails = static_cast<int>(spec.rail_names.size());
    }
  }
  return spec;
}

}  // namespace railbench
