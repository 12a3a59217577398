// Model geometry for the KV-cache transfer: how many bytes of KV one token carries.
// Presets live in configs/models/*.json (the source of truth, read at run time);
// custom geometry comes from flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace railbench {

// gqa: separate K and V per layer, kv_heads x head_dim values each (grouped-query
// attention, also plain multi-head). mla: one compressed latent per token per layer
// (multi-head latent attention, DeepSeek), latent_dim + rope_dim values, no K/V split.
enum class KvAttention : uint8_t { gqa, mla };

struct KvModel {
  std::string name;     // preset key, e.g. "llama-3.1-70b"; "custom" from flags
  std::string display;  // e.g. "Llama-3.1-70B"
  KvAttention attention = KvAttention::gqa;
  int layers = 0;
  int kv_heads = 0;    // gqa
  int head_dim = 0;    // gqa
  int latent_dim = 0;  // mla: kv_lora_rank
  int rope_dim = 0;    // mla: qk_rope_head_dim
};

// fp16 and bf16: 2 bytes, fp8: 1. Throws UsageError naming the accepted types.
int parse_kv_dtype(const std::string& name);

// Tensors per layer a serving engine keeps: 2 (K and V) for gqa, 1 (the latent) for mla.
int kv_planes(const KvModel& m);
// Bytes of one token in one layer's K (or V, or latent) tensor.
uint64_t kv_plane_token_bytes(const KvModel& m, int dtype_bytes);
// 2 x layers x kv_heads x head_dim x dtype (gqa), layers x (latent + rope) x dtype (mla).
uint64_t kv_bytes_per_token(const KvModel& m, int dtype_bytes);
// The formula with this model's numbers, e.g.
// "2 x 80 layers x 8 KV heads x 128 head dim x 2 B = 327,680 B per token".
std::string kv_formula(const KvModel& m, int dtype_bytes);

// Throws UsageError when a field is missing or not positive; `where` names the source.
KvModel kv_model_from_json(const nlohmann::json& j, const std::string& where);

// The models/ folder of the configs directory (lib/config_path.h says which); "" when
// there is none.
std::string model_config_dir();
// Every preset in `dir`, sorted by name. Throws UsageError when the folder does not exist
// (naming where configs were looked for), IoError when a preset is not valid JSON.
std::vector<KvModel> load_model_presets(const std::string& dir);
// The preset called `name` (case-insensitive); UsageError listing the presets otherwise.
KvModel find_model_preset(const std::string& name, const std::string& dir);

// 1234567 -> "1,234,567".
std::string with_commas(uint64_t v);

}  // namespace railbench
