#include "bench/kinds/result_kind.h"

#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

namespace {

// Built on first use: the static initializers that register kinds may run before this
// file's. Sorted by name, so error messages list the kinds in a stable order.
std::map<std::string, ResultKind>& registry() {
  static std::map<std::string, ResultKind> kinds;
  return kinds;
}

bool has(const ResultKind& kind, ResultPart part) {
  switch (part) {
    case ResultPart::csv: return kind.csv != nullptr;
    case ResultPart::figures: return kind.figures != nullptr;
    case ResultPart::report_section: return kind.report_section != nullptr;
    case ResultPart::metrics: return kind.metrics != nullptr;
  }
  return false;
}

}  // namespace

bool register_result_kind(ResultKind kind) {
  const std::string name = kind.name;
  if (!registry().emplace(name, std::move(kind)).second)
    throw std::logic_error("result kind '" + name + "' is registered twice: give each command one *_kind.cc");
  return true;
}

const ResultKind* find_result_kind(const std::string& name, ResultPart part) {
  const auto it = registry().find(name);
  return it != registry().end() && has(it->second, part) ? &it->second : nullptr;
}

std::string result_kind_names(ResultPart part) {
  std::string out;
  for (const auto& [name, kind] : registry())
    if (has(kind, part)) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::string results_metrics_text(const nlohmann::json& doc, const MetricsOptions& options, MetricsFormat format,
                                 const std::string& path) {
  const std::string command = doc.value("command", "");
  const ResultKind* kind = find_result_kind(command, ResultPart::metrics);
  if (kind == nullptr) {
    throw UsageError(fmt::format("{}: no metrics for '{}' results; metrics come from the results of {}", path, command,
                                 result_kind_names(ResultPart::metrics)));
  }
  MetricsText out;
  run_metrics(doc, out);
  kind->metrics(doc, options, out);
  return out.render(format);
}

}  // namespace railbench
