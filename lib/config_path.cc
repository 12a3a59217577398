#include "lib/config_path.h"

#include <cstdlib>
#include <filesystem>

namespace railbench {

std::string resolve_config_path(const std::string& name_or_path) {
  std::string dir;
  if (const char* env = std::getenv("RAILBENCH_CONFIG_DIR"); env && *env) dir = env;
#ifdef RAILBENCH_SOURCE_CONFIG_DIR
  if (dir.empty()) dir = RAILBENCH_SOURCE_CONFIG_DIR;
#endif
  if (name_or_path.empty()) return dir;
  if (name_or_path.find('/') != std::string::npos || std::filesystem::exists(name_or_path) || dir.empty()) {
    return name_or_path;
  }
  std::string p = dir + "/" + name_or_path;
  if (!std::filesystem::exists(p) && std::filesystem::exists(p + ".json")) p += ".json";
  return p;
}

}  // namespace railbench
