// Who is still alive, asked over a side channel of its own. When a wait on a peer
// times out, the peer we waited on is often alive and waiting itself: the rank that
// stopped or died is further along the ring. Every rank runs a tiny responder (a TCP
// listener on an ephemeral port, one thread answering an 8-byte ping); a timed-out
// rank probes all of them in parallel with a short deadline and names the ranks that
// did not answer, instead of the live neighbour it happened to wait on.
//
// A stopped process (SIGSTOP) still completes TCP handshakes in the kernel, but its
// responder thread is stopped too, so no pong comes: "silent". A dead process's port
// refuses the connection: "gone". Neither needs MPI or the transport under test.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace railbench {

class Bootstrap;

enum class PeerState : uint8_t {
  alive,        // answered the ping
  silent,       // accepted the connection but did not answer: stopped or hung
  gone,         // its port refused the connection: the process exited or was killed
  unreachable,  // no answer at all before the deadline (host down, network cut)
  unknown,      // not probed (itself, or no address published)
};
const char* to_string(PeerState state);

// Where a rank's responder listens, as exchanged over the bootstrap.
struct LivenessEndpoint {
  std::vector<std::string> addresses;  // IPv4/IPv6 literals to try, best first
  int port = 0;
  long pid = 0;
};

// This rank's responder: listens from construction to destruction.
class LivenessResponder {
 public:
  // Never throws: without a socket, the endpoint has port 0 and probes skip it.
  LivenessResponder();
  ~LivenessResponder();
  LivenessResponder(const LivenessResponder&) = delete;
  LivenessResponder& operator=(const LivenessResponder&) = delete;

  // This host's addresses (loopback last) and the port.
  LivenessEndpoint endpoint() const;
  // Tests: stop answering pings while keeping the port open, as a SIGSTOPped process.
  void set_silent(bool silent);

 private:
  void serve() noexcept;

  int listener_ = -1;
  int wake_[2] = {-1, -1};  // a pipe that ends serve()
  int port_ = 0;
  std::atomic<bool> silent_{false};
  std::thread thread_;
};

// Probes every endpoint except `self` at once; returns one state per endpoint, within
// about `timeout_s` in total. Never throws.
std::vector<PeerState> probe_liveness(const std::vector<LivenessEndpoint>& peers, int self, double timeout_s) noexcept;

// Ranks that failed a probe, named for an error message, e.g. "rank 2 (node07) did not
// answer a liveness probe within 1 s: it is stopped or hung". Empty when all are alive.
// `stalled_s` > 0 says this rank itself was unresponsive that long (it was stopped):
// then peers that do not answer are reported as having gone on without it.
std::string describe_liveness(const std::vector<PeerState>& states, const std::vector<std::string>& names,
                              double probe_s, double stalled_s);

// The whole service for a run: a responder, every rank's endpoint (exchanged once over
// the bootstrap: a collective call), and the probe that error paths call.
class Liveness {
 public:
  Liveness(Bootstrap& bootstrap, std::vector<std::string> names, double probe_s = 1.0);
  ~Liveness();

  // Probes now; describe_liveness() of the result.
  std::string probe(double stalled_s = 0) const;
  // The same as a hook for lib/ (Progress, Bootstrap), which know no Liveness.
  std::function<std::string(double)> hook() const {
    return [this](double stalled_s) { return probe(stalled_s); };
  }
  LivenessResponder& responder() { return *responder_; }

 private:
  std::unique_ptr<LivenessResponder> responder_;
  std::vector<LivenessEndpoint> endpoints_;
  std::vector<std::string> names_;
  int self_ = 0;
  double probe_s_;
};

}  // namespace railbench
