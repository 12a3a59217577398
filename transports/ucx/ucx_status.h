// The UCS_ERR_* name of a UCX status, printed beside UCX's own text so that an error line
// carries the code UCX documents and users search for ("Connection reset by remote peer
// (UCS_ERR_CONNECTION_RESET)"). UCX has no function that names its codes.
#pragma once

#include <ucs/type/status.h>

namespace railbench::ucx {

inline const char* status_name(ucs_status_t st) noexcept {
  switch (st) {
    case UCS_OK: return "UCS_OK";
    case UCS_ERR_CANCELED: return "UCS_ERR_CANCELED";
    case UCS_ERR_CONNECTION_RESET: return "UCS_ERR_CONNECTION_RESET";
    case UCS_ERR_ENDPOINT_TIMEOUT: return "UCS_ERR_ENDPOINT_TIMEOUT";
    case UCS_ERR_UNREACHABLE: return "UCS_ERR_UNREACHABLE";
    case UCS_ERR_REJECTED: return "UCS_ERR_REJECTED";
    case UCS_ERR_TIMED_OUT: return "UCS_ERR_TIMED_OUT";
    case UCS_ERR_IO_ERROR: return "UCS_ERR_IO_ERROR";
    case UCS_ERR_MESSAGE_TRUNCATED: return "UCS_ERR_MESSAGE_TRUNCATED";
    case UCS_ERR_NO_MEMORY: return "UCS_ERR_NO_MEMORY";
    case UCS_ERR_NO_RESOURCE: return "UCS_ERR_NO_RESOURCE";
    case UCS_ERR_INVALID_PARAM: return "UCS_ERR_INVALID_PARAM";
    case UCS_ERR_UNSUPPORTED: return "UCS_ERR_UNSUPPORTED";
    case UCS_ERR_NO_DEVICE: return "UCS_ERR_NO_DEVICE";
    case UCS_ERR_BUSY: return "UCS_ERR_BUSY";
    case UCS_ERR_NOT_CONNECTED: return "UCS_ERR_NOT_CONNECTED";
    case UCS_ERR_OUT_OF_RANGE: return "UCS_ERR_OUT_OF_RANGE";
    default: return "UCS_ERR (another code)";
  }
}

}  // namespace railbench::ucx
