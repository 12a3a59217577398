#include "bench/kinds/result_kind.h"

#include <map>
#include <stdexcept>

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

}  // namespace railbench
