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

// Bounds on a model's geometry (bench/cli/README.md, "Limits"): real models have at most a few
// hundred layers and well under 1 MiB of KV per token; these keep every product
// (bytes per token, and that times --tokens in the memory check) far from overflow.
inline constexpr int kMaxModelLayers = 4096;
inline constexpr int kMaxModelDim = 1 << 20;                  // kv_heads, head_dim, latent, rope
inline constexpr uint64_t kMaxKvBytesPerToken = 64ULL << 20;  // 64 MiB at 2-byte values

// Throws UsageError when a field is missing, of the wrong type, not positive or past
// the bounds above; `where` names the source.
KvModel kv_model_from_json(const nlohmann::json& j, const std::string& where);

// The models/ folder of the configs directory (lib/core/config_path.h says which); "" when
// there is none.
std::string model_config_dir();
// Every valid preset in `dir`, sorted by name. A preset file that cannot be used (not
// a regular file, not valid JSON, a wrong field) is left out and described in `skipped`
// ("FILE: why"), so one bad file breaks only the runs that ask for it. Throws
// UsageError when the folder does not exist (naming where configs were looked for) and
// when two files define the same name (naming both).
std::vector<KvModel> load_model_presets(const std::string& dir, std::vector<std::string>* skipped = nullptr);
// The preset called `name` (case-insensitive); UsageError listing the presets otherwise,
// or naming the file and its problem when the preset asked for is a skipped file.
KvModel find_model_preset(const std::string& name, const std::string& dir);

// 1234567 -> "1,234,567".
std::string with_commas(uint64_t v);

}  // namespace railbench
