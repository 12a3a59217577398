#include "bench/offline/compare/load.h"

#include <vector>

#include <fmt/format.h>

#include "bench/offline/compare/figures.h"
#include "lib/core/config_path.h"
#include "lib/core/errors.h"
#include "lib/results/read.h"

namespace railbench::compare {

using nlohmann::json;

json load_results(const std::string& path) {
  // A validate file's pair records are read one at a time and only the few its figures
  // read are kept: a 1,024 x 8 file holds 4 M of them.
  ValidatePairKeeper keeper;
  try {
    json doc = read_results_file(path, "compare", {{"rail_pairs", [&](const json& p) { keeper.add(p); }}});
    if (doc.contains("rail_pairs")) doc["rail_pairs"] = keeper.kept();
    return doc;
  } catch (const json::exception& e) {
    throw UsageError(
        fmt::format("compare: {}: a rail_pairs record lacks a field ({}): is it a results file (--json) "
                    "of this railbench version?",
                    path, cut_for_error(e.what(), 200)));
  }
}

namespace {

std::string word(const json& doc, const json::json_pointer& at) {
  if (!doc.contains(at)) return "(none)";
  const json& v = doc.at(at);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// How many rails the run measured: an SU's (its per-rail sections, else its config's GPUs
// per node: a run over an SU opens one rail a rank, so the transport's count is not the
// SU's), else the transport's.
std::string rails_of(const json& doc) {
  if (doc.contains("rails") && doc.at("rails").is_array()) return std::to_string(doc.at("rails").size());
  if (doc.contains(json::json_pointer("/config/gpus_per_node")))
    return word(doc, json::json_pointer("/config/gpus_per_node"));
  return word(doc, json::json_pointer("/transport/rails"));
}

}  // namespace

void check_comparable(const json& base, const std::string& base_path, const json& next, const std::string& next_path) {
  struct Aspect {
    const char* what;
    std::string base, next;
  };
  const std::vector<Aspect> aspects{
      {"command", word(base, json::json_pointer("/command")), word(next, json::json_pointer("/command"))},
      {"transport", word(base, json::json_pointer("/config/transport")),
       word(next, json::json_pointer("/config/transport"))},
      {"provider", word(base, json::json_pointer("/transport/provider")),
       word(next, json::json_pointer("/transport/provider"))},
      {"world size", word(base, json::json_pointer("/world/size")), word(next, json::json_pointer("/world/size"))},
      {"rails", rails_of(base), rails_of(next)},
  };
  std::string differs;
  for (const auto& a : aspects) {
    if (a.base == a.next) continue;
    differs += fmt::format("{}{}: {} in {}, {} in {}", differs.empty() ? "" : "; ", a.what, a.base, base_path, a.next,
                           next_path);
  }
  if (!differs.empty()) {
    throw UsageError(
        fmt::format("compare: {} and {} cannot be compared: {}. Compare two runs of the same command over the same "
                    "transport, world size and rails",
                    base_path, next_path, differs));
  }
}

}  // namespace railbench::compare
