// Where the configs shipped with railbench (everything under configs/) are found, so
// every feature resolves a bare config name the same way.
#pragma once

#include <string>

namespace railbench {

// The directory shipped configs live in: $RAILBENCH_CONFIG_DIR, else the source tree's
// configs/ (compiled in); "" gives the directory itself. A bare name resolves there
// ("name" or "name.json"); a path is returned as given.
std::string resolve_config_path(const std::string& name_or_path);

}  // namespace railbench
