// KV bytes per token of every preset in configs/models against values computed by hand
// from the models' published configs, and the errors for bad geometry.
#include <catch2/catch.hpp>

#include <map>

#include "collectives/kvcache/geometry.h"
#include "lib/errors.h"

using namespace railbench;

TEST_CASE("every preset's KV bytes per token matches the hand-computed value", "[kvcache]") {
  // fp16: 2 x layers x kv_heads x head_dim x 2 (GQA); layers x (512 + 64) x 2 (MLA).
  const std::map<std::string, uint64_t> fp16{
      {"llama-3.1-8b", 2ULL * 32 * 8 * 128 * 2},     // 131,072
      {"llama-3.1-70b", 327680},                     // the issue's own number
      {"llama-3.1-405b", 2ULL * 126 * 8 * 128 * 2},  // 516,096
      {"qwen2.5-72b", 2ULL * 80 * 8 * 128 * 2},      // 327,680
      {"mixtral-8x7b", 2ULL * 32 * 8 * 128 * 2},     // 131,072
      {"deepseek-v3", 61ULL * 576 * 2},              // 70,272
  };
  const auto presets = load_model_presets(model_config_dir());
  REQUIRE(presets.size() >= fp16.size());
  for (const auto& [name, bytes] : fp16) {
    const KvModel m = find_model_preset(name, model_config_dir());
    INFO(name);
    CHECK(kv_bytes_per_token(m, parse_kv_dtype("fp16")) == bytes);
    CHECK(kv_bytes_per_token(m, parse_kv_dtype("bf16")) == bytes);
    CHECK(kv_bytes_per_token(m, parse_kv_dtype("fp8")) == bytes / 2);
  }
  // 4,096 tokens of Llama-3.1-70B in fp16 are 1.34 GB.
  CHECK(4096 * kv_bytes_per_token(find_model_preset("llama-3.1-70b", model_config_dir()), 2) == 1342177280ULL);
}

TEST_CASE("MLA keeps one latent per token per layer, GQA a K and a V", "[kvcache]") {
  const KvModel ds = find_model_preset("DeepSeek-V3", model_config_dir());  // display names work too
  CHECK(ds.attention == KvAttention::mla);
  CHECK(kv_planes(ds) == 1);
  CHECK(kv_plane_token_bytes(ds, 2) == 576 * 2);
  const KvModel llama = find_model_preset("llama-3.1-70b", model_config_dir());
  CHECK(kv_planes(llama) == 2);
  CHECK(kv_formula(llama, 2) == "2 (K,V) x 80 layers x 8 KV heads x 128 head dim x 2 B = 327,680 B per token");
}

TEST_CASE("bad geometry and unknown names are usage errors that say what to use", "[kvcache]") {
  try {
    find_model_preset("llama-9", model_config_dir());
    FAIL("no error");
  } catch (const UsageError& e) {
    const std::string what = e.what();
    CHECK(what.find("unknown --model 'llama-9'") != std::string::npos);
    for (const char* name : {"llama-3.1-70b", "deepseek-v3", "qwen2.5-72b", "mixtral-8x7b"})
      CHECK(what.find(name) != std::string::npos);
  }
  CHECK_THROWS_AS(parse_kv_dtype("fp32"), UsageError);
  CHECK_THROWS_AS(
      kv_model_from_json(nlohmann::json{{"name", "x"}, {"layers", 0}, {"kv_heads", 8}, {"head_dim", 128}}, "test"),
      UsageError);
  CHECK_THROWS_AS(kv_model_from_json(nlohmann::json{{"name", "x"}, {"attention", "mqa"}, {"layers", 2}}, "test"),
                  UsageError);
  CHECK(with_commas(1342177280ULL) == "1,342,177,280");
}
