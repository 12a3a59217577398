#include "collectives/kvcache/geometry.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "lib/core/config_path.h"
#include "lib/core/errors.h"

namespace railbench {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

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

int positive(const nlohmann::json& j, const char* key, const std::string& where, int max) {
  if (!j.contains(key) || !j.at(key).is_number_integer() || j.at(key).get<int64_t>() <= 0 ||
      j.at(key).get<int64_t>() > max) {
    throw UsageError(fmt::format("{}: \"{}\" must be a whole number from 1 to {}", where, key, max));
  }
  return j.at(key).get<int>();
}

std::string optional_string(const nlohmann::json& j, const char* key, const std::string& fallback,
                            const std::string& where) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_string()) throw UsageError(fmt::format("{}: \"{}\" must be a string", where, key));
  return j.at(key).get<std::string>();
}

// Bytes per token at the widest dtype, checked: refused past kMaxKvBytesPerToken.
void check_bytes_per_token(const KvModel& m, const std::string& where) {
  const uint64_t values = m.attention == KvAttention::gqa ? static_cast<uint64_t>(m.kv_heads) * m.head_dim
                                                          : static_cast<uint64_t>(m.latent_dim) + m.rope_dim;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(values, static_cast<uint64_t>(kv_planes(m)) * m.layers * 2, &bytes) ||
      bytes > kMaxKvBytesPerToken) {
    throw UsageError(
        fmt::format("{}: {} layers of {} values make more than {} MiB of KV per token (fp16): check the "
                    "geometry (real models have well under 1 MiB)",
                    where, m.layers, values, kMaxKvBytesPerToken >> 20));
  }
}

}  // namespace

KvModel kv_model_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw UsageError(fmt::format("{}: expected a JSON object", where));
  KvModel m;
  if (!j.contains("name") || !j.at("name").is_string() || j.at("name").get<std::string>().empty())
    throw UsageError(fmt::format("{}: \"name\" must be a non-empty string", where));
  m.name = j.at("name").get<std::string>();
  m.display = optional_string(j, "display", m.name, where);
  const std::string attention = optional_string(j, "attention", "gqa", where);
  m.layers = positive(j, "layers", where, kMaxModelLayers);
  if (attention == "gqa") {
    m.attention = KvAttention::gqa;
    m.kv_heads = positive(j, "kv_heads", where, kMaxModelDim);
    m.head_dim = positive(j, "head_dim", where, kMaxModelDim);
  } else if (attention == "mla") {
    m.attention = KvAttention::mla;
    m.latent_dim = positive(j, "kv_lora_rank", where, kMaxModelDim);
    m.rope_dim = j.contains("qk_rope_head_dim") ? positive(j, "qk_rope_head_dim", where, kMaxModelDim) : 0;
  } else {
    throw UsageError(fmt::format("{}: \"attention\" is '{}': use gqa or mla", where, cut_for_error(attention, 40)));
  }
  check_bytes_per_token(m, where);
  return m;
}

std::string model_config_dir() {
  const std::string configs = resolve_config_path("");
  return configs.empty() ? "" : (fs::path(configs) / "models").string();
}

std::vector<KvModel> load_model_presets(const std::string& dir, std::vector<std::string>* skipped) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    // Bad input, not a failed run: the installation or RAILBENCH_CONFIG_DIR is wrong.
    throw UsageError(fmt::format(
        "model presets folder {} does not exist (configs looked for in: {}): install railbench (share/railbench/"
        "configs/models beside bin/) or set RAILBENCH_CONFIG_DIR to a configs/ folder that has models/",
        dir.empty() ? "(none)" : dir, find_config_dir().searched));
  }
  std::vector<KvModel> out;
  std::vector<std::string> files;  // beside out, for naming both files of a duplicate
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    const std::string file = path.string();
    try {
      const std::string text = read_config_file(file, "model preset");
      check_config_nesting(text, "model preset " + file);
      nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
      if (j.is_discarded()) throw UsageError(fmt::format("{} is not valid JSON", file));
      out.push_back(kv_model_from_json(j, file));
      files.push_back(file);
    } catch (const UsageError& e) {
      if (skipped) skipped->push_back(e.what());
      continue;
    }
    for (size_t i = 0; i + 1 < out.size(); ++i) {
      if (lower(out[i].name) == lower(out.back().name)) {
        throw UsageError(fmt::format("model presets {} and {} both define \"name\": \"{}\": rename or remove one",
                                     files[i], file, cut_for_error(out.back().name, 60)));
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const KvModel& a, const KvModel& b) { return a.name < b.name; });
  return out;
}

KvModel find_model_preset(const std::string& name, const std::string& dir) {
  std::vector<std::string> skipped;
  const auto presets = load_model_presets(dir, &skipped);
  std::string names;
  for (const auto& m : presets) {
    if (lower(m.name) == lower(name) || lower(m.display) == lower(name)) return m;
    names += fmt::format("{}{}", names.empty() ? "" : ", ", m.name);
  }
  // The one asked for is a file that was skipped: its problem is the error.
  for (const auto& why : skipped) {
    if (lower(why).find(lower("/" + name + ".json")) != std::string::npos) throw UsageError(why);
  }
  throw UsageError(fmt::format(
      "unknown --model '{}': presets are {} (or give --layers with --kv-heads and "
      "--head-dim, or --latent-dim, for a custom model){}",
      cut_for_error(name, 60), names.empty() ? "(none found in " + dir + ")" : names,
      skipped.empty() ? "" : fmt::format("; {} preset file(s) skipped, e.g. {}", skipped.size(), skipped[0])));
}

}  // namespace railbench
