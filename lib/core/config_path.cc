#include "lib/core/config_path.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "lib/core/errors.h"

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

std::string read_config_file(const std::string& path, const std::string& what) {
  // stat before open: opening a fifo for reading blocks until a writer comes.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw UsageError(fmt::format("{}: cannot read {}: {}", what, path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    throw UsageError(fmt::format("{}: {} is not a regular file ({}): give the path of a JSON file", what, path,
                                 S_ISDIR(st.st_mode)    ? "a directory"
                                 : S_ISFIFO(st.st_mode) ? "a fifo"
                                 : S_ISCHR(st.st_mode)  ? "a character device"
                                                        : "a special file"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) {
    throw UsageError(fmt::format("{}: {} is {} bytes, more than a config may be ({} MiB): give the right file", what,
                                 path, st.st_size, kMaxConfigBytes >> 20));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{}: cannot read {}: {}", what, path, std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void check_config_nesting(const std::string& text, const std::string& what) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      // Comments (// and /* */, which the configs allow) may hold brackets and quotes.
      const size_t end = text.find(text[i + 1] == '/' ? "\n" : "*/", i + 2);
      i = end == std::string::npos ? text.size() : end;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxConfigNesting) {
        throw UsageError(
            fmt::format("{}: nested more than {} levels deep (at character {}): a config is a few "
                        "levels deep; give the right file",
                        what, kMaxConfigNesting, i + 1));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

std::string cut_for_error(const std::string& text, size_t max_chars) {
  if (text.size() <= max_chars) return text;
  return fmt::format("{}... ({} more characters)", text.substr(0, max_chars), text.size() - max_chars);
}

}  // namespace railbench
