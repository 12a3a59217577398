// What this binary is: the release version and the git commit it was built from, for
// --version and for every results file, so a number can be traced to its code.
#pragma once

#include <string>

namespace railbench {

// The project version from CMakeLists.txt, e.g. "0.1.0".
const char* railbench_version();
// The short SHA of the commit built, "-dirty" appended when tracked files differed from
// it; "unknown" when built outside a git checkout (a tarball). Taken at build time.
const char* railbench_git_commit();
// "railbench 0.1.0 (git 0123456789ab)": what --version prints.
std::string railbench_version_line();

}  // namespace railbench
