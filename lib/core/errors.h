// Typed errors for the control path. Every message says what was wrong and what to do.
// The data path never throws: it returns railbench::Status (status.h).
#pragma once

#include <stdexcept>
#include <string>

namespace railbench {

enum class ErrorCode {
  usage,        // bad command line or config: the user fixes the input
  unsupported,  // the build, provider or device lacks a feature
  transport,    // a transport call failed (libfabric, verbs, NCCL)
  bootstrap,    // out-of-band exchange failed
  timeout,      // a peer did not answer within its deadline
  check,        // data verification failed
  io,           // a file could not be read or written
};

const char* to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// Typed subclasses so callers can catch by kind; each carries its code.
struct UsageError : Error {
  explicit UsageError(const std::string& w) : Error(ErrorCode::usage, w) {}
};
struct UnsupportedError : Error {
  explicit UnsupportedError(const std::string& w) : Error(ErrorCode::unsupported, w) {}
};
struct TransportError : Error {
  explicit TransportError(const std::string& w) : Error(ErrorCode::transport, w) {}
};
struct BootstrapError : Error {
  explicit BootstrapError(const std::string& w) : Error(ErrorCode::bootstrap, w) {}
};
struct TimeoutError : Error {
  explicit TimeoutError(const std::string& w) : Error(ErrorCode::timeout, w) {}
};
struct IoError : Error {
  explicit IoError(const std::string& w) : Error(ErrorCode::io, w) {}
};

}  // namespace railbench
