// PyTorch's process-group config, as the process_group:init node carries it: JSON, or
// JSON as the one string of a Python list's text (a Chakra trace's IOInfo values).
#include <algorithm>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "collectives/workload/formats/import.h"
#include "lib/core/errors.h"

namespace railbench::workload::formats {

namespace {

// Where the JSON list of objects starts and ends in `text` (npos: none).
std::pair<size_t, size_t> json_list(std::string_view text) {
  for (size_t p = text.find('['); p != std::string_view::npos; p = text.find('[', p + 1)) {
    size_t q = p + 1;
    while (q < text.size() && (text[q] == ' ' || text[q] == '\n')) ++q;
    if (q >= text.size() || (text[q] != '{' && text[q] != ']')) continue;
    int depth = 0;
    bool in_string = false;
    for (size_t i = p; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if ((c == ']' || c == '}') && --depth == 0) {
        return {p, i + 1};
      }
    }
  }
  return {std::string_view::npos, 0};
}

}  // namespace

std::vector<ProcessGroup> parse_pg_config(std::string_view text, const std::string& where) {
  const auto [from, to] = json_list(text);
  if (from == std::string_view::npos)
    throw UsageError(
        fmt::format("{}: the process-group config holds no JSON list of groups: record the trace with "
                    "a PyTorch that writes pg_config (2.1 or later)",
                    where));
  const auto j = nlohmann::json::parse(text.substr(from, to - from), nullptr, false);
  if (j.is_discarded() || !j.is_array())
    throw UsageError(fmt::format("{}: the process-group config is not valid JSON (cut short?)", where));
  std::vector<ProcessGroup> out;
  for (const auto& g : j) {
    if (!g.is_object() || !g.contains("pg_name"))
      throw UsageError(fmt::format("{}: a process group without \"pg_name\"", where));
    ProcessGroup pg;
    pg.name = g.at("pg_name").is_string() ? g.at("pg_name").get<std::string>() : g.at("pg_name").dump();
    pg.desc = g.value("pg_desc", "");
    if (g.contains("backend_id"))
      pg.backend_id =
          g.at("backend_id").is_string() ? g.at("backend_id").get<std::string>() : g.at("backend_id").dump();
    if (g.contains("ranks") && g.at("ranks").is_array())
      for (const auto& r : g.at("ranks"))
        if (r.is_number_integer()) pg.ranks.push_back(r.get<int>());
    out.push_back(std::move(pg));
  }
  return out;
}

void add_default_group(RankTrace& r, const std::string& name, const std::string& desc) {
  const auto named = [&](const auto& x) { return x.pg == name; };
  const auto defines = [&](const ProcessGroup& g) { return g.name == name; };
  if (std::any_of(r.items.begin(), r.items.end(),
                  [&](const Item& it) { return it.kind == ItemKind::collective && named(it); }) &&
      std::none_of(r.pgs.begin(), r.pgs.end(), defines))
    r.pgs.push_back(ProcessGroup{name, desc, {}});
}

nlohmann::json pg_config(const Trace& t) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t g = 0; g < t.groups.size(); ++g)
    out.push_back({{"pg_name", std::to_string(g)},
                   {"pg_desc", t.groups[g].name},
                   {"backend_config", "cuda:nccl"},
                   {"pg_size", t.groups[g].ranks.size()},
                   {"ranks", t.groups[g].ranks},
                   {"group_count", t.groups.size()}});
  return out;
}

}  // namespace railbench::workload::formats
