#include "lib/core/errors.h"

namespace railbench {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::usage: return "usage";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::transport: return "transport";
    case ErrorCode::bootstrap: return "bootstrap";
    case ErrorCode::timeout: return "timeout";
    case ErrorCode::check: return "check";
    case ErrorCode::io: return "io";
  }
  return "unknown";
}

}  // namespace railbench
