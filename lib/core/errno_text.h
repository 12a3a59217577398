// errno as words for error messages.
#pragma once

#include <string>

namespace railbench {

// strerror(err) with a lower-case first letter, to sit inside a sentence: "no space left
// on device".
std::string errno_text(int err);

}  // namespace railbench
