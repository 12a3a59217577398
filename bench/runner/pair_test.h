// Point-to-point measurements between two ranks on one rail: ping-pong latency and
// windowed bandwidth in either direction or both. Both ranks of the pair call the same
// method at the same time; the lower rank leads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/core/clock.h"
#include "lib/transport/progress.h"
#include "lib/transport/transport.h"

namespace railbench {

enum class Verb : uint8_t { send, write, read };
Verb parse_verb(const std::string& s);  // throws UsageError
const char* to_string(Verb v);

// How a write ping-pong sees the peer's write arrive. `poll` is perftest's ib_write_lat:
// the responder polls the last byte of its buffer for the new value, so no completion
// queue and no posted receive is on the critical path (host memory only). `imm` is a
// write-with-immediate whose completion the target waits for (any memory, and what a
// GPU-memory write needs).
enum class WriteLatency : uint8_t { poll, imm };
WriteLatency parse_write_latency(const std::string& s);  // throws UsageError
const char* to_string(WriteLatency w);

// Registered buffers and every rank's remote keys, shared by all pair tests.
struct PairBuffers {
  const MemoryRegion* src = nullptr;     // what this rank sends / writes / lets peers read
  const MemoryRegion* dst = nullptr;     // where peers' data lands / reads land
  const MemoryRegion* tokens = nullptr;  // small control messages (ready / done)
  std::vector<RemoteKey> peer_src;       // per rank: its src (read verb)
  std::vector<RemoteKey> peer_dst;       // per rank: its dst (write verb)
};

class PairTest {
 public:
  // `write_latency` poll needs src and dst in host-visible memory (not MemoryKind::cuda).
  PairTest(Progress& progress, const PairBuffers& buffers, Verb verb, bool check,
           WriteLatency write_latency = WriteLatency::imm);

  // Ping-pong; the leader returns one sample per timed iteration in microseconds:
  // RTT/2 for send and write (as perftest), the whole round trip for read. `longest_rtt_s`
  // (leader, optional): the longest round trip in seconds, warm-ups included (a burn-in's
  // sign of a stall, wherever in the ping-pong it fell).
  std::vector<double> latency(int peer, int rail, size_t bytes, int warmup, int iters, bool leader,
                              double* longest_rtt_s = nullptr);

  // `from` streams windows of `window` messages to `to` (the other rank of the pair is
  // `peer`). A send window larger than the transport's queues (caps().max_outstanding)
  // goes in chunks, each announced by the receiver's ready token. The rank that initiates the operations times them and
  // returns GB/s per window; the other returns nothing. With check on, the data's receiver adds mismatching bytes to
  // *wrong.
  std::vector<double> stream(int peer, int rail, size_t bytes, int window, int warmup, int iters, int from,
                             uint32_t seed, uint64_t* wrong);

  // Both directions at once; each rank returns GB/s per window counting both directions.
  std::vector<double> bidirectional(int peer, int rail, size_t bytes, int window, int warmup, int iters);

 private:
  LocalSpan src(size_t bytes) const { return LocalSpan{b_.src, 0, bytes}; }
  LocalSpan dst(size_t bytes) const { return LocalSpan{b_.dst, 0, bytes}; }
  LocalSpan send_token() const { return LocalSpan{b_.tokens, 0, 8}; }
  LocalSpan recv_token() const { return LocalSpan{b_.tokens, 8, 8}; }
  // Posts `count` data operations as initiator; returns their ids. With `last`, the
  // final write carries the immediate that tells the target the window is complete.
  void post_window(int peer, int rail, size_t bytes, int count, bool last, std::vector<uint64_t>& ids);
  // Messages of a send window posted at once: a receive queue holds only so many, and a
  // receive completes only once its peer sends, so a larger window goes in chunks.
  int chunk(int window) const;
  void wait_ids(const std::vector<uint64_t>& ids, const char* what);
  // The leader calls stamp(i) as iteration i starts and stamp(total) after the last.
  void write_poll_latency(int peer, int rail, size_t bytes, int total, bool leader,
                          const std::function<void(int)>& stamp);
  // The send ping-pong run inside the transport (caps().ping_pong), timed alike.
  std::vector<double> native_latency(int peer, int rail, size_t bytes, int warmup, int iters, bool leader,
                                     double* longest_rtt_s);

  Progress& p_;
  PairBuffers b_;
  Verb verb_;
  bool check_;
  WriteLatency write_latency_;
  int rank_;
};

}  // namespace railbench
