#include "lib/core/errno_text.h"

#include <cctype>
#include <cstring>

namespace railbench {

std::string errno_text(int err) {
  std::string s = std::strerror(err);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace railbench
