// Rank 0's side of the TCP rendezvous: listens on the root's address and admits the
// job's ranks, and only them. Connections are multiplexed with poll, each has
// kHelloSeconds to send a valid hello and at most kMaxPending wait at once, so a
// stranger that sends garbage, a wrong job token or nothing at all is closed and
// logged (rate-limited) while the real ranks keep joining (lib/runtime/README.md,
// "The rendezvous: who may join").
#pragma once

#include <string>
#include <vector>

#include "lib/runtime/bootstrap.h"
#include "lib/runtime/rendezvous_socket.h"

namespace railbench::rendezvous {

class RootListener {
 public:
  // Listens on every address `host` resolves to (they must be this machine's), on
  // where.bind_address instead when set, or on every address with where.bind_any.
  RootListener(const std::string& host, const std::string& port, const TcpRendezvous& where);

  // Admits ranks 1..size-1 whose hello carries `token` (a token_digest()) within
  // timeout_s; returns one connection per rank (index 0 empty). Stops listening once
  // every rank has joined, so later connections are refused by the kernel.
  std::vector<Fd> admit(int size, uint64_t token, double timeout_s);

 private:
  std::string listening_hint() const;

  std::string host_;
  std::string port_;
  std::vector<Fd> listeners_;
  std::vector<std::string> addresses_;  // what listeners_ are bound to, for errors
  bool loopback_only_ = true;
};

// Open files rank 0 needs for a world of `size` ranks, and the check that raises its
// soft RLIMIT_NOFILE to that (or throws UsageError naming ulimit -n and the number when
// the hard limit is lower), done before the first rank is admitted.
int open_files_needed(int size);
void ensure_open_files(int size);

// "bootstrap <what> timed out after N s: rank(s) 2, 3 did not arrive (...)".
std::string missing_ranks_message(const char* what, const std::vector<bool>& arrived, double timeout_s);

}  // namespace railbench::rendezvous
