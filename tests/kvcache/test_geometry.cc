// KV bytes per token of every preset in configs/models against values computed by hand
// from the models' published configs, and the errors for bad geometry.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "collectives/kvcache/geometry.h"
#include "lib/core/errors.h"

using namespace railbench;

TEST_CASE("every preset's KV bytes per token matches the hand-computed value", "[kvcache]") {
  // fp16: 2 x layers x kv_heads x head_dim x 2 (GQA); layers x (512 + 64) x 2 (MLA).
  const std::map<std::string, uint64_t> fp16{
      {"llama-3.1-8b", 2ULL * 32 * 8 * 128 * 2},     // 131,072
      {"llama-3.1-70b", 327680},                     // 320 KiB, as usually quoted: not computed
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

namespace {

// A presets folder in a fresh temporary directory, removed at the end of the test.
struct PresetsDir {
  PresetsDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "railbench-presets-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~PresetsDir() { std::filesystem::remove_all(path); }
  void write(const std::string& file, const std::string& text) const { std::ofstream(path + "/" + file) << text; }
  std::string path;
};

const char* kGood = R"({"name": "good", "layers": 2, "kv_heads": 4, "head_dim": 8})";

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no usage error)";
}

}  // namespace

TEST_CASE("absurd geometry is refused, not wrapped to 0 B", "[kvcache][robustness]") {
  // layers and kv_heads of 2^24 made the bytes per token wrap: a what-if of 0 B / 0.00 ms.
  const auto huge = nlohmann::json{{"name", "x"}, {"layers", 1 << 24}, {"kv_heads", 1 << 24}, {"head_dim", 64}};
  CHECK_THROWS_AS(kv_model_from_json(huge, "test"), UsageError);
  const auto wide = nlohmann::json{{"name", "x"}, {"layers", 4096}, {"kv_heads", 1 << 20}, {"head_dim", 1 << 20}};
  CHECK_THAT(usage_error_of([&] { kv_model_from_json(wide, "test"); }), Catch::Contains("MiB of KV per token"));
  // The largest real models stay far inside the bounds.
  const auto big = nlohmann::json{{"name", "x"}, {"layers", 126}, {"kv_heads", 128}, {"head_dim", 256}};
  CHECK(kv_bytes_per_token(kv_model_from_json(big, "test"), 2) == 2ULL * 126 * 128 * 256 * 2);
  CHECK_THROWS_AS(
      kv_model_from_json(nlohmann::json{{"name", "x"}, {"layers", "32"}, {"kv_heads", 8}, {"head_dim", 8}}, "test"),
      UsageError);
  CHECK_THROWS_AS(
      kv_model_from_json(nlohmann::json{{"name", "x"}, {"display", 7}, {"layers", 2}, {"kv_heads", 8}, {"head_dim", 8}},
                         "test"),
      UsageError);
}

TEST_CASE("a broken preset file breaks only the runs that ask for it, and names the file", "[kvcache][robustness]") {
  PresetsDir dir;
  dir.write("good.json", kGood);
  dir.write("broken.json", "{\"name\": \"broken\", ");
  dir.write("typed.json", R"({"name": "typed", "layers": "32", "kv_heads": 8, "head_dim": 128})");
  dir.write("display.json", R"({"name": "display", "display": 7, "layers": 2, "kv_heads": 8, "head_dim": 8})");
  dir.write("deep.json", std::string(100000, '[') + std::string(100000, ']'));
  CHECK(find_model_preset("good", dir.path).layers == 2);
  CHECK_THAT(usage_error_of([&] { find_model_preset("broken", dir.path); }),
             Catch::Contains("broken.json") && Catch::Contains("not valid JSON"));
  CHECK_THAT(usage_error_of([&] { find_model_preset("typed", dir.path); }),
             Catch::Contains("typed.json") && Catch::Contains("\"layers\""));
  CHECK_THAT(usage_error_of([&] { find_model_preset("display", dir.path); }), Catch::Contains("display.json"));
  CHECK_THAT(usage_error_of([&] { find_model_preset("deep", dir.path); }), Catch::Contains("nested more than"));
}

TEST_CASE("two presets with the same name are refused, naming both files", "[kvcache][robustness]") {
  PresetsDir dir;
  dir.write("a.json", kGood);
  dir.write("b.json", R"({"name": "Good", "layers": 4, "kv_heads": 4, "head_dim": 8})");
  dir.write("other.json", R"({"name": "other", "layers": 4, "kv_heads": 4, "head_dim": 8})");
  const std::string what = usage_error_of([&] { find_model_preset("other", dir.path); });
  CHECK_THAT(what, Catch::Contains("a.json") && Catch::Contains("b.json") && Catch::Contains("rename or remove"));
}

TEST_CASE("a preset that is a fifo is refused at once, not read forever", "[kvcache][robustness]") {
  PresetsDir dir;
  dir.write("good.json", kGood);
  REQUIRE(::mkfifo((dir.path + "/fifo.json").c_str(), 0600) == 0);
  CHECK(find_model_preset("good", dir.path).layers == 2);
  CHECK_THAT(usage_error_of([&] { find_model_preset("fifo", dir.path); }),
             Catch::Contains("fifo.json") && Catch::Contains("not a regular file"));
}
