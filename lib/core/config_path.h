// Where the configs shipped with railbench (everything under configs/) are found, so
// every feature resolves a bare config name the same way.
//
// The configs directory is the first of:
//   1. $RAILBENCH_CONFIG_DIR, when set and non-empty: the operator's explicit choice wins,
//      and is not second-guessed when it does not exist (errors then name it).
//   2. <directory of the running binary>/../share/railbench/configs, when it exists: the
//      installed layout (bin/railbench beside share/railbench/), wherever the prefix is.
//   3. The source tree's configs/ (its path compiled in), only when the binary runs from
//      its own build tree (its directory is CMAKE_BINARY_DIR or below it), so an
//      installed binary never reads the source tree it was built from.
#pragma once

#include <cstddef>
#include <string>

namespace railbench {

struct ConfigDir {
  std::string dir;       // the configs directory in use; "" when no candidate applies
  std::string searched;  // the candidates in order and why each was (not) taken, for errors
};

// Runs the lookup above (cheap: a few stat calls).
ConfigDir find_config_dir();

// Limits on what a config file may be (bench/cli/README.md, "Limits"): a JSON document nested deeper
// than this is refused before it is parsed (printing one recurses per level), and a
// file larger than this is not a config.
inline constexpr int kMaxConfigNesting = 64;
inline constexpr size_t kMaxConfigBytes = 16u << 20;

// The whole text of the config file at `path`. Throws UsageError naming `what` (e.g.
// "config su.json") for a missing or unreadable file, anything but a regular file (a
// fifo would block the read forever, a device never ends) and a file over
// kMaxConfigBytes.
std::string read_config_file(const std::string& path, const std::string& what);

// Throws UsageError naming `what` when brackets in `text` (outside strings) nest deeper
// than kMaxConfigNesting.
void check_config_nesting(const std::string& text, const std::string& what);

// `text` cut to `max_chars` with "..." and the number of characters left out, so an
// error line that quotes a value stays one short line.
std::string cut_for_error(const std::string& text, size_t max_chars = 80);

// A bare name resolves in the configs directory ("name" or "name.json"); a path (it has a
// '/' or exists) is returned as given; "" gives the directory itself ("" when none).
std::string resolve_config_path(const std::string& name_or_path);

}  // namespace railbench
