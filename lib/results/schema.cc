#include "lib/results/schema.h"

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

using nlohmann::json;

namespace {

void check_version(const json& doc) {
  const auto version = doc.find("schema_version");
  if (version == doc.end() || !version->is_number_integer())
    throw IoError("\"schema_version\" is missing or not an integer; the file is damaged: write it again with --json");
  const int v = version->get<int>();
  if (v >= kOldestResultSchemaVersion && v <= kResultSchemaVersion) return;
  throw IoError(fmt::format(
      "schema_version {} is not one this railbench reads ({}..{}): it is {} than this railbench; read it with the "
      "railbench that wrote it (railbench_version {})",
      v, kOldestResultSchemaVersion, kResultSchemaVersion, v > kResultSchemaVersion ? "newer" : "older",
      doc.value("railbench_version", "unknown")));
}

}  // namespace

void validate_result_document(const json& doc) {
  if (!doc.is_object() || doc.value("schema", "") != kResultSchema)
    throw IoError(
        fmt::format("not a railbench results file (no \"schema\": \"{}\"); give the file a command wrote with --json",
                    kResultSchema));
  check_version(doc);
  auto require = [&](const char* field, json::value_t type) {
    if (!doc.contains(field))
      throw IoError(
          fmt::format("results document has no '{}' field; the file is damaged: write it again with --json", field));
    const auto& v = doc.at(field);
    if (v.type() != type)
      throw IoError(
          fmt::format("results field '{}' has type {}, not {}; the file is damaged: write it again with --json", field,
                      v.type_name(), json(type).type_name()));
  };
  require("railbench_version", json::value_t::string);
  require("command", json::value_t::string);
  require("config", json::value_t::object);
  require("world", json::value_t::object);
  require("transport", json::value_t::object);
  require("results", json::value_t::array);
  require("status", json::value_t::string);
}

}  // namespace railbench
