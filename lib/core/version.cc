#include "lib/core/version.h"

#include <fmt/format.h>

namespace railbench {

const char* railbench_version() {
  return RAILBENCH_VERSION;
}

// railbench_git_commit() lives in the generated git_commit.cc (cmake/git_commit.cmake),
// so a new commit recompiles that one file and nothing else.

std::string railbench_version_line() {
  return fmt::format("railbench {} (git {})", railbench_version(), railbench_git_commit());
}

}  // namespace railbench
