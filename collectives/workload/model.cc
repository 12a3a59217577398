#include "collectives/workload/model.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "lib/core/config_path.h"
#include "lib/core/errors.h"

namespace railbench::workload {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxDim = 1 << 20;

int field(const nlohmann::json& j, const char* key, const std::string& where, bool required, int lo = 1) {
  if (!j.contains(key)) {
    if (!required) return 0;
    throw UsageError(fmt::format(
        "{}: no \"{}\": a workload needs the model's training geometry (hidden_size, ffn_hidden_size, "
        "attention_heads; experts, experts_per_token and moe_ffn_hidden_size for MoE): add them from the model's "
        "config.json",
        where, key));
  }
  const auto& v = j.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > kMaxDim)
    throw UsageError(fmt::format("{}: \"{}\" must be an integer from {} to {}", where, key, lo, kMaxDim));
  return v.get<int>();
}

}  // namespace

uint64_t TrainModel::attention_params() const {
  const uint64_t h = static_cast<uint64_t>(hidden);
  const uint64_t kv = heads > 0 ? h * static_cast<uint64_t>(kv_heads > 0 ? kv_heads : heads) / heads : h;
  return 2 * h * h + 2 * h * kv;  // Q and O: h x h; K and V: h x (kv_heads x head_dim)
}
uint64_t TrainModel::dense_mlp_params() const {
  return 3 * static_cast<uint64_t>(hidden) * static_cast<uint64_t>(ffn);
}
uint64_t TrainModel::expert_params() const {
  return 3 * static_cast<uint64_t>(hidden) * static_cast<uint64_t>(moe_ffn);
}

TrainModel train_model_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("name") || !j.at("name").is_string())
    throw UsageError(fmt::format("{}: expected a JSON object with a \"name\"", where));
  TrainModel m;
  m.name = j.at("name").get<std::string>();
  m.display = j.value("display", m.name);
  m.layers = field(j, "layers", where, true);
  m.hidden = field(j, "hidden_size", where, true);
  m.ffn = field(j, "ffn_hidden_size", where, true);
  m.heads = field(j, "attention_heads", where, true);
  m.kv_heads = field(j, "kv_heads", where, false);
  m.experts = field(j, "experts", where, false);
  if (m.experts > 0) {
    m.topk = field(j, "experts_per_token", where, true);
    m.moe_ffn = field(j, "moe_ffn_hidden_size", where, true);
    m.shared_experts = field(j, "shared_experts", where, false, 0);
    m.dense_layers = field(j, "dense_layers", where, false, 0);
    if (m.topk > m.experts)
      throw UsageError(fmt::format("{}: experts_per_token {} exceeds experts {}", where, m.topk, m.experts));
    if (m.dense_layers >= m.layers)
      throw UsageError(fmt::format("{}: dense_layers {} leaves no MoE layer of {}", where, m.dense_layers, m.layers));
  }
  return m;
}

TrainModel find_train_model(const std::string& name, const std::string& dir) {
  // A file of its own (a model not among the presets, or a small one for tests).
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") {
    nlohmann::json j = nlohmann::json::parse(read_config_file(name, "model file"), nullptr, false);
    if (j.is_discarded()) throw UsageError(fmt::format("--model {}: not valid JSON", name));
    return train_model_from_json(j, name);
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw UsageError(
        fmt::format("model presets folder {} does not exist: install railbench or set "
                    "RAILBENCH_CONFIG_DIR to a configs/ folder that has models/",
                    dir.empty() ? "(none)" : dir));
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> names;
  for (const auto& path : paths) {
    const std::string file = path.string();
    nlohmann::json j = nlohmann::json::parse(read_config_file(file, "model preset"), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j.at("name").is_string()) continue;
    if (!j.contains("hidden_size")) continue;  // a kvcache-only preset
    if (j.at("name").get<std::string>() == name) return train_model_from_json(j, file);
    names.push_back(j.at("name").get<std::string>());
  }
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw UsageError(fmt::format("--model {}: no such preset with training geometry in {}: use one of {}",
                               cut_for_error(name, 60), dir, list.empty() ? "(none)" : list));
}

}  // namespace railbench::workload
