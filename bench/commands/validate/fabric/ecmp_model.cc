#include "bench/commands/validate/fabric/ecmp_model.h"

#include <algorithm>
#include <limits>

namespace railbench {
namespace {

// Progressive filling over the flows in `active`: their rates, by position in `active`.
std::vector<double> fill(const std::vector<FluidFlow>& flows, const std::vector<int>& active,
                         const std::vector<double>& capacity) {
  std::vector<double> left = capacity;
  std::vector<double> rate(active.size(), 0);
  std::vector<bool> frozen(active.size(), false);
  size_t growing = active.size();
  while (growing > 0) {
    std::vector<int> users(capacity.size(), 0);
    for (size_t i = 0; i < active.size(); ++i)
      if (!frozen[i])
        for (int r : flows[active[i]].resources) ++users[r];
    double step = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < capacity.size(); ++r)
      if (users[r] > 0) step = std::min(step, left[r] / users[r]);
    for (size_t i = 0; i < active.size(); ++i)
      if (!frozen[i]) rate[i] += step;
    for (size_t r = 0; r < capacity.size(); ++r) left[r] -= step * users[r];
    // A resource within a millionth of its capacity is full: its flows stop growing.
    for (size_t i = 0; i < active.size(); ++i) {
      if (frozen[i]) continue;
      for (int r : flows[active[i]].resources) {
        if (left[r] <= 1e-6 * capacity[r]) {
          frozen[i] = true;
          --growing;
          break;
        }
      }
    }
  }
  return rate;
}

bool usable(const FluidFlow& f, const std::vector<double>& capacity) {
  if (f.resources.empty() || f.bytes <= 0) return false;
  return std::all_of(f.resources.begin(), f.resources.end(),
                     [&](int r) { return r >= 0 && static_cast<size_t>(r) < capacity.size() && capacity[r] > 0; });
}

}  // namespace

std::vector<double> max_min_rates(const std::vector<FluidFlow>& flows, const std::vector<double>& capacity) {
  std::vector<int> active;
  for (size_t i = 0; i < flows.size(); ++i)
    if (usable(flows[i], capacity)) active.push_back(static_cast<int>(i));
  const auto rates = fill(flows, active, capacity);
  std::vector<double> out(flows.size(), 0);
  for (size_t i = 0; i < active.size(); ++i) out[active[i]] = rates[i];
  return out;
}

double fluid_completion_s(const std::vector<FluidFlow>& flows, const std::vector<double>& capacity) {
  std::vector<int> active;
  std::vector<double> remaining(flows.size(), 0);
  for (size_t i = 0; i < flows.size(); ++i) {
    if (!usable(flows[i], capacity)) continue;
    active.push_back(static_cast<int>(i));
    remaining[i] = flows[i].bytes;
  }
  double t = 0;
  while (!active.empty()) {
    const auto rate = fill(flows, active, capacity);
    double dt = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < active.size(); ++i) dt = std::min(dt, remaining[active[i]] / rate[i]);
    t += dt;
    std::vector<int> still;
    for (size_t i = 0; i < active.size(); ++i) {
      remaining[active[i]] -= rate[i] * dt;
      // Finished within a millionth of its bytes: rounding, not a flow still going.
      if (remaining[active[i]] > 1e-6 * flows[active[i]].bytes) still.push_back(active[i]);
    }
    active = std::move(still);
  }
  return t;
}

}  // namespace railbench
