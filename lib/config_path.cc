#include "lib/config_path.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace railbench {

namespace fs = std::filesystem;

namespace {

// The running binary's directory, canonical; empty when /proc is not mounted.
fs::path exe_dir() {
  std::error_code ec;
  fs::path exe = fs::canonical("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// True when `dir` is `root` or lies below it (both canonical).
bool is_within(const fs::path& dir, const fs::path& root) {
  return std::mismatch(root.begin(), root.end(), dir.begin(), dir.end()).first == root.end();
}

}  // namespace

ConfigDir find_config_dir() {
  if (const char* env = std::getenv("RAILBENCH_CONFIG_DIR"); env && *env) {
    std::error_code ec;
    const bool is_dir = fs::is_directory(env, ec);
    return {env, fmt::format("RAILBENCH_CONFIG_DIR={}{}", env, is_dir ? "" : " (not a directory)")};
  }
  std::string searched = "RAILBENCH_CONFIG_DIR (not set)";
  const fs::path bin = exe_dir();
  if (bin.empty()) return {"", searched + ", the binary's own directory (/proc/self/exe unreadable)"};

  std::error_code ec;
  const fs::path installed = (bin / RAILBENCH_INSTALL_CONFIG_REL).lexically_normal();
  if (fs::is_directory(installed, ec)) return {installed.string(), searched + ", " + installed.string()};
  searched += fmt::format(", {} (does not exist)", installed.string());

#if defined(RAILBENCH_SOURCE_CONFIG_DIR) && defined(RAILBENCH_BINARY_DIR)
  const fs::path build = fs::weakly_canonical(RAILBENCH_BINARY_DIR, ec);
  if (!ec && is_within(bin, build)) {
    const bool is_dir = fs::is_directory(RAILBENCH_SOURCE_CONFIG_DIR, ec);
    return {RAILBENCH_SOURCE_CONFIG_DIR, fmt::format("{}, {} (source tree of this build tree){}", searched,
                                                     RAILBENCH_SOURCE_CONFIG_DIR, is_dir ? "" : ", does not exist")};
  }
  searched += ", not the source tree (the binary does not run from its build tree)";
#endif
  return {"", searched};
}

std::string resolve_config_path(const std::string& name_or_path) {
  const std::string dir = find_config_dir().dir;
  if (name_or_path.empty()) return dir;
  if (name_or_path.find('/') != std::string::npos || fs::exists(name_or_path) || dir.empty()) {
    return name_or_path;
  }
  // "name" or "name.json"; when neither exists, the .json one, which errors then name.
  const std::string p = dir + "/" + name_or_path;
  const bool has_json = p.size() > 5 && p.compare(p.size() - 5, 5, ".json") == 0;
  return fs::exists(p) || has_json ? p : p + ".json";
}

}  // namespace railbench
