#include "bench/runner/fabric_counters.h"

namespace railbench {

using json = nlohmann::json;

FabricCounters::FabricCounters(const Transport& t, bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
  for (int i = 0; i < t.num_rails(); ++i) {
    rail_names_.push_back(t.rail_info(i).name);
    readers_.emplace_back(find_counter_sources(rail_names_.back()));
  }
  before_.resize(readers_.size());
}

json FabricCounters::sources_json(int rail) const {
  if (!enabled_ || rail < 0 || static_cast<size_t>(rail) >= readers_.size()) return json::array();
  return readers_[static_cast<size_t>(rail)].sources().describe();
}

void FabricCounters::begin() {
  for (size_t i = 0; i < readers_.size(); ++i) before_[i] = readers_[i].snapshot();
}

json FabricCounters::end_local() {
  if (!enabled_) return nullptr;
  json mine = json::array();
  for (size_t i = 0; i < readers_.size(); ++i) {
    const CounterDeltas d = counter_delta(before_[i], readers_[i].snapshot());
    if (d.empty()) continue;
    mine.push_back(
        json{{"rail", i}, {"rail_name", rail_names_[i]}, {"kinds", kind_totals_json(d)}, {"deltas", to_json(d)}});
  }
  return mine;
}

json FabricCounters::end(Bootstrap& b, const std::vector<std::string>& hosts) {
  if (!enabled_) return nullptr;
  const json mine = end_local();
  json all = json::array();
  const auto gathered = b.gather_strings(mine.dump());
  for (size_t r = 0; r < gathered.size(); ++r) {
    for (auto& e : json::parse(gathered[r])) {
      json entry{{"rank", r}, {"host", r < hosts.size() ? hosts[r] : std::string()}};
      entry.update(e);
      all.push_back(std::move(entry));
    }
  }
  return all;
}

}  // namespace railbench
