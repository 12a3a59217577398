// kvcache's result kind: its --csv rows, the figures compare compares and the report section.
#include <fmt/format.h>

#include "bench/kinds/result_kind.h"
#include "bench/offline/compare/figures.h"
#include "bench/offline/report/kind_sections.h"
#include "bench/runner/results_csv.h"

namespace railbench {
namespace {

// kvcache's table, and for a serving run each rail's utilisation: rail<R>_gbps (its bytes
// over the serving window) and, with --line-rate, rail<R>_line_fraction, one pair of
// columns per rail of the widest entry.
CsvTable kvcache_rails_csv(const nlohmann::json& doc) {
  CsvTable t = kvcache_csv(doc);
  if (!doc.contains("results") || !doc["results"].is_array()) return t;
  const auto& results = doc["results"];
  size_t rails = 0;
  bool line = false;
  for (const auto& e : results) {
    if (!e.contains("rails") || !e["rails"].is_array()) continue;
    rails = std::max(rails, e["rails"].size());
    for (const auto& r : e["rails"]) line = line || r.contains("line_fraction");
  }
  if (rails == 0 || t.rows.size() != results.size()) return t;
  for (size_t r = 0; r < rails; ++r) {
    t.header.push_back(fmt::format("rail{}_gbps", r));
    if (line) t.header.push_back(fmt::format("rail{}_line_fraction", r));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& e = results[i];
    for (size_t r = 0; r < rails; ++r) {
      const bool has = e.contains("rails") && e["rails"].is_array() && r < e["rails"].size();
      const nlohmann::json none;
      const auto& rail = has ? e["rails"][r] : none;
      t.rows[i].push_back(csv_cell(rail.is_object() ? rail.value("gbps", nlohmann::json()) : none));
      if (line) t.rows[i].push_back(csv_cell(rail.is_object() ? rail.value("line_fraction", nlohmann::json()) : none));
    }
  }
  return t;
}

const bool kvcache_kind_registered =
    register_result_kind({"kvcache", kvcache_rails_csv, compare::kvcache_figures, report::kvcache_section});

}  // namespace
}  // namespace railbench
