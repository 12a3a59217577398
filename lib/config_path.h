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

#include <string>

namespace railbench {

struct ConfigDir {
  std::string dir;       // the configs directory in use; "" when no candidate applies
  std::string searched;  // the candidates in order and why each was (not) taken, for errors
};

// Runs the lookup above (cheap: a few stat calls).
ConfigDir find_config_dir();

// A bare name resolves in the configs directory ("name" or "name.json"); a path (it has a
// '/' or exists) is returned as given; "" gives the directory itself ("" when none).
std::string resolve_config_path(const std::string& name_or_path);

}  // namespace railbench
