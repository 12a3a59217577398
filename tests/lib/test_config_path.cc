#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "lib/core/config_path.h"

using namespace railbench;

namespace {

// Sets RAILBENCH_CONFIG_DIR for one test and restores what was there, so the other
// tests see the lookup they would without it.
class ConfigDirEnv {
 public:
  explicit ConfigDirEnv(const char* value) {
    if (const char* old = std::getenv("RAILBENCH_CONFIG_DIR")) old_ = old;
    had_ = std::getenv("RAILBENCH_CONFIG_DIR") != nullptr;
    if (value)
      setenv("RAILBENCH_CONFIG_DIR", value, 1);
    else
      unsetenv("RAILBENCH_CONFIG_DIR");
  }
  ~ConfigDirEnv() {
    if (had_)
      setenv("RAILBENCH_CONFIG_DIR", old_.c_str(), 1);
    else
      unsetenv("RAILBENCH_CONFIG_DIR");
  }
  ConfigDirEnv(const ConfigDirEnv&) = delete;
  ConfigDirEnv& operator=(const ConfigDirEnv&) = delete;

 private:
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST_CASE("a test binary in the build tree finds the source tree's configs", "[config_path]") {
  ConfigDirEnv env(nullptr);
  const ConfigDir found = find_config_dir();
  CHECK(found.dir == RAILBENCH_TEST_SOURCE_CONFIG_DIR);
  CHECK_THAT(found.searched, Catch::Contains("source tree"));
  const std::string path = resolve_config_path("su-h200-32x8-400g");
  CHECK(path == std::string(RAILBENCH_TEST_SOURCE_CONFIG_DIR) + "/su-h200-32x8-400g.json");
}

TEST_CASE("RAILBENCH_CONFIG_DIR wins, and a missing one is named, not replaced", "[config_path]") {
  ConfigDirEnv env("/nonexistent-railbench-configs");
  const ConfigDir found = find_config_dir();
  CHECK(found.dir == "/nonexistent-railbench-configs");
  CHECK_THAT(found.searched, Catch::Contains("RAILBENCH_CONFIG_DIR=/nonexistent-railbench-configs (not a directory)"));
  CHECK(resolve_config_path("x") == "/nonexistent-railbench-configs/x.json");  // the name errors show
}

TEST_CASE("an empty RAILBENCH_CONFIG_DIR counts as unset", "[config_path]") {
  ConfigDirEnv env("");
  CHECK(find_config_dir().dir == RAILBENCH_TEST_SOURCE_CONFIG_DIR);
}

TEST_CASE("a path is taken as given, not looked up", "[config_path]") {
  ConfigDirEnv env(nullptr);
  CHECK(resolve_config_path("./mine.json") == "./mine.json");
  CHECK(resolve_config_path("/etc/su/a.json") == "/etc/su/a.json");
}
