// The checked reading of validate's JSON config: every field's type and range, unknown
// keys as errors, and messages that name the file, the field as a JSON path and what
// was expected. Shared by the SU config (su_config.cc) and its fabric section
// (fabric_config.cc).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/config_path.h"
#include "lib/core/errors.h"
#include "lib/core/sizes.h"

namespace railbench {

class ConfigReader {
 public:
  explicit ConfigReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    // Both may quote the file (a key, a value, a hostlist): cut, so the line stays one line.
    throw UsageError(fmt::format("config {}: {}: {}", path_, cut_for_error(field, 120), cut_for_error(why, 400)));
  }

  // Every key of `obj` must be one of `known`: a typo is an error, not a default.
  void only(const nlohmann::json& obj, const std::string& where, std::initializer_list<const char*> known) const {
    if (!obj.is_object())
      fail(where.empty() ? "(top level)" : where, fmt::format("expected an object, got {}", cut_for_error(obj.dump())));
    for (const auto& [key, value] : obj.items()) {
      bool ok = false;
      std::string list;
      for (const char* k : known) {
        ok = ok || key == k;
        list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
      }
      if (!ok) fail(join(where, key), fmt::format("unknown field; the fields here are: {}", list));
    }
  }

  static std::string join(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }

  double number(const nlohmann::json& obj, const std::string& where, const char* key, double fallback, double lo,
                double hi, bool required = false) const {
    if (!obj.contains(key)) {
      if (required) fail(join(where, key), fmt::format("missing; expected a number in [{}, {}]", lo, hi));
      return fallback;
    }
    const nlohmann::json& v = obj.at(key);
    if (!v.is_number()) fail(join(where, key), fmt::format("expected a number, got {}", cut_for_error(v.dump())));
    const double d = v.get<double>();
    if (d < lo || d > hi) fail(join(where, key), fmt::format("{} is outside [{}, {}]", d, lo, hi));
    return d;
  }

  int integer(const nlohmann::json& obj, const std::string& where, const char* key, int fallback, int lo, int hi,
              bool required = false) const {
    if (obj.contains(key) && !obj.at(key).is_number_integer()) {
      fail(join(where, key), fmt::format("expected a whole number, got {}", cut_for_error(obj.at(key).dump())));
    }
    return static_cast<int>(number(obj, where, key, fallback, lo, hi, required));
  }

  std::string string(const nlohmann::json& obj, const std::string& where, const char* key, const std::string& fallback,
                     bool required = false) const {
    if (!obj.contains(key)) {
      if (required) fail(join(where, key), "missing; expected a string");
      return fallback;
    }
    const nlohmann::json& v = obj.at(key);
    if (!v.is_string() || v.get<std::string>().empty()) {
      fail(join(where, key), fmt::format("expected a non-empty string, got {}", cut_for_error(v.dump())));
    }
    return v.get<std::string>();
  }

  uint64_t size(const nlohmann::json& obj, const std::string& where, const char* key, uint64_t fallback) const {
    if (!obj.contains(key)) return fallback;
    const nlohmann::json& v = obj.at(key);
    try {
      if (v.is_number_unsigned()) return v.get<uint64_t>();
      if (v.is_string()) return parse_size(v.get<std::string>());
    } catch (const UsageError& e) {
      fail(join(where, key), e.what());
    }
    fail(join(where, key), fmt::format("expected a size such as 8, \"4K\" or \"8M\", got {}", cut_for_error(v.dump())));
  }

  bool boolean(const nlohmann::json& obj, const std::string& where, const char* key, bool fallback) const {
    if (!obj.contains(key)) return fallback;
    if (!obj.at(key).is_boolean())
      fail(join(where, key), fmt::format("expected true or false, got {}", cut_for_error(obj.at(key).dump())));
    return obj.at(key).get<bool>();
  }

 private:
  std::string path_;
};

}  // namespace railbench
