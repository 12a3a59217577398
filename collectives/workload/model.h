// A model's training geometry, from the same presets kvcache reads (configs/models):
// the sizes that set a training step's messages (hidden width, MLP width, MoE experts
// and top-k), and the parameter counts the data-parallel gradients follow from.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace railbench::workload {

struct TrainModel {
  std::string name;
  std::string display;
  int layers = 0;
  int hidden = 0;          // hidden_size
  int ffn = 0;             // ffn_hidden_size: the dense MLP's width (SwiGLU: three matrices)
  int heads = 0;           // attention_heads
  int kv_heads = 0;        // grouped-query attention; heads when absent
  int experts = 0;         // routed experts per MoE layer; 0: dense model
  int topk = 0;            // experts_per_token
  int moe_ffn = 0;         // moe_ffn_hidden_size: one expert's MLP width
  int shared_experts = 0;  // always-on experts (DeepSeek): dense, not routed
  int dense_layers = 0;    // leading layers with a dense MLP in an MoE model

  bool moe() const { return experts > 0; }
  bool moe_layer(int layer) const { return moe() && layer >= dense_layers; }
  // Parameters of one layer's attention and of its dense MLP, and of one routed expert.
  uint64_t attention_params() const;
  uint64_t dense_mlp_params() const;
  uint64_t expert_params() const;
};

// Reads the training fields of a preset; throws UsageError naming the file and the
// field when one is missing or out of range (a preset made for kvcache alone has no
// hidden_size: the error says which fields to add).
TrainModel train_model_from_json(const nlohmann::json& j, const std::string& where);

// The preset called `name` from `dir` (configs/models), or the error listing the presets
// that have training geometry; a `name` ending in .json is a model file of its own.
TrainModel find_train_model(const std::string& name, const std::string& dir);

}  // namespace railbench::workload
