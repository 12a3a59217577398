#include "collectives/kvcache/geometry.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "lib/config_path.h"
#include "lib/errors.h"

namespace railbench {

namespace fs = std::filesystem;

int parse_kv_dtype(const std::string& name) {
  if (name == "fp16" || name == "bf16") return 2;
  if (name == "fp8") return 1;
  throw UsageError(fmt::format("unknown --kv-dtype '{}': use fp16, bf16 or fp8", name));
}

int kv_planes(const KvModel& m) {
  return m.attention == KvAttention::gqa ? 2 : 1;
}

uint64_t kv_plane_token_bytes(const KvModel& m, int dtype_bytes) {
  const uint64_t values = m.attention == KvAttention::gqa ? static_cast<uint64_t>(m.kv_heads) * m.head_dim
                                                          : static_cast<uint64_t>(m.latent_dim) + m.rope_dim;
  return values * static_cast<uint64_t>(dtype_bytes);
}

uint64_t kv_bytes_per_token(const KvModel& m, int dtype_bytes) {
  return static_cast<uint64_t>(kv_planes(m)) * static_cast<uint64_t>(m.layers) * kv_plane_token_bytes(m, dtype_bytes);
}

std::string with_commas(uint64_t v) {
  std::string digits = fmt::format("{}", v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string kv_formula(const KvModel& m, int dtype_bytes) {
  const std::string total = with_commas(kv_bytes_per_token(m, dtype_bytes));
  if (m.attention == KvAttention::gqa) {
    return fmt::format("2 (K,V) x {} layers x {} KV heads x {} head dim x {} B = {} B per token", m.layers, m.kv_heads,
                       m.head_dim, dtype_bytes, total);
  }
  return fmt::format("{} layers x ({} latent + {} rope) x {} B = {} B per token (MLA: one latent, no K/V)", m.layers,
                     m.latent_dim, m.rope_dim, dtype_bytes, total);
}

namespace {

int positive(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_number_integer() || j.at(key).get<int64_t>() <= 0 ||
      j.at(key).get<int64_t>() > (1 << 24)) {
    throw UsageError(fmt::format("{}: \"{}\" must be a positive integer", where, key));
  }
  return j.at(key).get<int>();
}

}  // namespace

KvModel kv_model_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw UsageError(fmt::format("{}: expected a JSON object", where));
  KvModel m;
  if (!j.contains("name") || !j.at("name").is_string())
    throw UsageError(fmt::format("{}: \"name\" must be a string", where));
  m.name = j.at("name").get<std::string>();
  m.display = j.value("display", m.name);
  const std::string attention = j.value("attention", "gqa");
  m.layers = positive(j, "layers", where);
  if (attention == "gqa") {
    m.attention = KvAttention::gqa;
    m.kv_heads = positive(j, "kv_heads", where);
    m.head_dim = positive(j, "head_dim", where);
  } else if (attention == "mla") {
    m.attention = KvAttention::mla;
    m.latent_dim = positive(j, "kv_lora_rank", where);
    m.rope_dim = j.contains("qk_rope_head_dim") ? positive(j, "qk_rope_head_dim", where) : 0;
  } else {
    throw UsageError(fmt::format("{}: \"attention\" is '{}': use gqa or mla", where, attention));
  }
  return m;
}

std::string model_config_dir() {
  const std::string configs = resolve_config_path("");
  return configs.empty() ? "" : (fs::path(configs) / "models").string();
}

std::vector<KvModel> load_model_presets(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    // Bad input, not a failed run: the installation or RAILBENCH_CONFIG_DIR is wrong.
    throw UsageError(fmt::format(
        "model presets folder {} does not exist (configs looked for in: {}): install railbench (share/railbench/"
        "configs/models beside bin/) or set RAILBENCH_CONFIG_DIR to a configs/ folder that has models/",
        dir.empty() ? "(none)" : dir, find_config_dir().searched));
  }
  std::vector<KvModel> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) throw IoError(fmt::format("{} is not valid JSON", entry.path().string()));
    out.push_back(kv_model_from_json(j, entry.path().string()));
  }
  std::sort(out.begin(), out.end(), [](const KvModel& a, const KvModel& b) { return a.name < b.name; });
  return out;
}

KvModel find_model_preset(const std::string& name, const std::string& dir) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  const auto presets = load_model_presets(dir);
  std::string names;
  for (const auto& m : presets) {
    if (lower(m.name) == lower(name) || lower(m.display) == lower(name)) return m;
    names += fmt::format("{}{}", names.empty() ? "" : ", ", m.name);
  }
  throw UsageError(
      fmt::format("unknown --model '{}': presets are {} (or give --layers with --kv-heads and "
                  "--head-dim, or --latent-dim, for a custom model)",
                  name, names.empty() ? "(none found in " + dir + ")" : names));
}

}  // namespace railbench
