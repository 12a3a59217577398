#include "bench/runner/pair_test.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "collectives/check.h"
#include "collectives/reduce.h"
#include "lib/core/bandwidth.h"
#include "lib/core/clock.h"
#include "lib/core/errors.h"

namespace railbench {

// Message order on each (peer, rail) channel matters: receives match sends FIFO, so
// every exchange below posts its receives in exactly the order the peer sends:
//   ready token, data x window (send verb only), done/finished token.

Verb parse_verb(const std::string& s) {
  if (s == "send") return Verb::send;
  if (s == "write") return Verb::write;
  if (s == "read") return Verb::read;
  throw UsageError(fmt::format("unknown --verb '{}': use send, write or read", s));
}

const char* to_string(Verb v) {
  switch (v) {
    case Verb::send: return "send";
    case Verb::write: return "write";
    case Verb::read: return "read";
  }
  return "unknown";
}

WriteLatency parse_write_latency(const std::string& s) {
  if (s == "poll") return WriteLatency::poll;
  if (s == "imm") return WriteLatency::imm;
  throw UsageError(fmt::format("unknown --write-latency '{}': use poll (as ib_write_lat) or imm", s));
}

const char* to_string(WriteLatency w) {
  return w == WriteLatency::poll ? "poll" : "imm";
}

PairTest::PairTest(Progress& progress, const PairBuffers& buffers, Verb verb, bool check, WriteLatency write_latency)
    : p_(progress),
      b_(buffers),
      verb_(verb),
      check_(check),
      write_latency_(write_latency),
      rank_(progress.transport().rank()) {}

void PairTest::wait_ids(const std::vector<uint64_t>& ids, const char* what) {
  for (uint64_t id : ids) p_.wait(id, what);
}

int PairTest::chunk(int window) const {
  // Room for the tokens that share the queues with a chunk (ready, next ready, done).
  constexpr size_t kTokenSlack = 4;
  // Progress reuses an operation slot only once its operation is done: receives that
  // wait for their peer must not need more slots than it has.
  constexpr size_t kMaxChunk = 4096;
  if (verb_ != Verb::send) return window;  // one-sided: the target posts nothing
  size_t limit = kMaxChunk;
  if (const size_t depth = p_.transport().caps().max_outstanding; depth > 0)
    limit = std::min(limit, depth > 2 * kTokenSlack ? depth - kTokenSlack : std::max<size_t>(depth / 2, 1));
  return static_cast<int>(std::min<size_t>(static_cast<size_t>(window), limit));
}

void PairTest::post_window(int peer, int rail, size_t bytes, int count, bool last, std::vector<uint64_t>& ids) {
  ids.clear();
  for (int k = 0; k < count; ++k) {
    switch (verb_) {
      case Verb::send: ids.push_back(p_.send(peer, rail, src(bytes))); break;
      case Verb::write: {
        const RemoteSpan to{&b_.peer_dst[peer], 0};
        // The last write carries an immediate: it lands after the others (ordered
        // writes), so the target knows the whole window has arrived.
        ids.push_back(k + 1 < count || !last ? p_.write(peer, rail, src(bytes), to)
                                             : p_.write_imm(peer, rail, src(bytes), to, static_cast<uint32_t>(k)));
        break;
      }
      case Verb::read: ids.push_back(p_.read(peer, rail, dst(bytes), RemoteSpan{&b_.peer_src[peer], 0})); break;
    }
  }
}

std::vector<double> PairTest::latency(int peer, int rail, size_t bytes, int warmup, int iters, bool leader,
                                      double* longest_rtt_s) {
  if (verb_ == Verb::send && p_.transport().caps().ping_pong)
    return native_latency(peer, rail, bytes, warmup, iters, leader, longest_rtt_s);
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(iters));
  const int total = warmup + iters;
  const Progress::LatencyScope spin(p_);
  // One clock read per iteration, as perftest's t_typical: iteration i lasts from its
  // start to the next one's (the last one's end is read after the loop). Two reads per
  // iteration cost a measurable share of an 8 B round trip where the clock is slow (a
  // VM's emulated HPET: 0.7 us a read, against 9 us of soft-RoCE latency).
  Clock::time_point started;
  auto stamp = [&](int it, double divisor) {
    const auto now = Clock::now();
    if (it > 0) {
      const double s = seconds_between(started, now);
      if (longest_rtt_s) *longest_rtt_s = std::max(*longest_rtt_s, s);
      if (it - 1 >= warmup) samples.push_back(s * 1e6 / divisor);
    }
    started = now;
  };

  if (verb_ == Verb::send) {
    if (leader) {
      for (int it = 0; it < total; ++it) {
        const uint64_t r = p_.recv(peer, rail, dst(bytes));
        stamp(it, 2.0);
        p_.send(peer, rail, src(bytes));
        p_.wait(r, "a ping-pong reply");
      }
      stamp(total, 2.0);
    } else {
      uint64_t r = p_.recv(peer, rail, dst(bytes));
      for (int it = 0; it < total; ++it) {
        p_.wait(r, "a ping-pong request");
        // Post the next receive before replying, so the leader's next ping has a home.
        if (it + 1 < total) r = p_.recv(peer, rail, dst(bytes));
        p_.send(peer, rail, src(bytes));
      }
    }
  } else if (verb_ == Verb::write && write_latency_ == WriteLatency::poll) {
    write_poll_latency(peer, rail, bytes, total, leader, [&](int it) { stamp(it, 2.0); });
  } else if (verb_ == Verb::write) {
    const RemoteSpan to{&b_.peer_dst[peer], 0};
    for (int it = 0; it < total; ++it) {
      if (leader) {
        stamp(it, 2.0);
        p_.write_imm(peer, rail, src(bytes), to, static_cast<uint32_t>(it));
        p_.wait_imm(peer, "a ping-pong write reply");
      } else {
        p_.wait_imm(peer, "a ping-pong write request");
        p_.write_imm(peer, rail, src(bytes), to, static_cast<uint32_t>(it));
      }
    }
    if (leader) stamp(total, 2.0);
  } else {
    // A read is a round trip by itself; the target only has to drive progress until
    // the leader says it has finished.
    if (leader) {
      for (int it = 0; it < total; ++it) {
        stamp(it, 1.0);
        const uint64_t id = p_.read(peer, rail, dst(bytes), RemoteSpan{&b_.peer_src[peer], 0});
        p_.wait(id, "a read");
      }
      stamp(total, 1.0);
      p_.send(peer, rail, send_token());
    } else {
      p_.wait(p_.recv(peer, rail, recv_token()), "the end of the read latency test");
    }
  }
  p_.wait_all("ping-pong completions");
  return samples;
}

// The transport's own loop (ucx: its worker polled directly, as ucx_perftest's tag_lat)
// with the same definition: the leader's round trip i lasts from one stamp to the next,
// one clock read per round trip, and the sample is RTT/2.
std::vector<double> PairTest::native_latency(int peer, int rail, size_t bytes, int warmup, int iters, bool leader,
                                             double* longest_rtt_s) {
  const int total = warmup + iters;
  std::vector<Clock::time_point> stamps(leader ? static_cast<size_t>(total) + 1 : 0);
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(iters));
  {
    const Progress::LatencyScope spin(p_);
    PingPong pp{peer, rail, src(bytes), dst(bytes), total, leader, stamps.data(), 0, 0};
    p_.ping_pong(pp);
  }
  for (size_t i = 0; i + 1 < stamps.size(); ++i) {
    const double s = seconds_between(stamps[i], stamps[i + 1]);
    if (longest_rtt_s) *longest_rtt_s = std::max(*longest_rtt_s, s);
    if (i >= static_cast<size_t>(warmup)) samples.push_back(s * 1e6 / 2.0);
  }
  return samples;
}

// perftest's ib_write_lat: each side writes `bytes` into the other's buffer and learns
// of the other's write from its last byte, polled in memory: an RC queue pair (and
// libfabric's RMA) places a write's bytes in order, so the last one arriving means all
// have. Iteration i carries the value i % 255 + 1: consecutive values differ and none is
// the zero both buffers start from. The writes' own completions are reaped in passing.
void PairTest::write_poll_latency(int peer, int rail, size_t bytes, int total, bool leader,
                                  const std::function<void(int)>& stamp) {
  auto* seen = reinterpret_cast<uint8_t*>(b_.dst->at(bytes - 1));
  auto* mark = reinterpret_cast<uint8_t*>(b_.src->at(bytes - 1));
  __atomic_store_n(seen, uint8_t{0}, __ATOMIC_RELEASE);
  // Neither side may write before the other has cleared its last byte: the follower
  // clears, then says so; the leader cleared before it waits.
  if (leader) {
    p_.wait(p_.recv(peer, rail, recv_token()), "the write-latency peer's ready token");
  } else {
    p_.wait(p_.send(peer, rail, send_token()), "the write-latency ready token");
  }
  const RemoteSpan to{&b_.peer_dst[peer], 0};
  for (int it = 0; it < total; ++it) {
    const auto v = static_cast<uint8_t>(it % 255 + 1);
    auto arrived = [seen, v] { return __atomic_load_n(seen, __ATOMIC_ACQUIRE) == v; };
    if (leader) {
      stamp(it);
      *mark = v;
      p_.write(peer, rail, src(bytes), to);
      p_.wait_for(arrived, peer, "a ping-pong write reply (its last byte, as ib_write_lat)");
    } else {
      p_.wait_for(arrived, peer, "a ping-pong write (its last byte, as ib_write_lat)");
      *mark = v;
      p_.write(peer, rail, src(bytes), to);
    }
  }
  if (leader) stamp(total);
}

std::vector<double> PairTest::stream(int peer, int rail, size_t bytes, int window, int warmup, int iters, int from,
                                     uint32_t seed, uint64_t* wrong) {
  const bool sender = from == rank_;
  // Reads are initiated by the data's receiver; sends and writes by its sender.
  const bool initiator = (verb_ == Verb::read) ? !sender : sender;
  std::vector<double> samples;
  std::vector<uint64_t> ids;
  const int total = warmup + iters;

  if (check_) {
    // GPU memory: the pattern is made on the host and copied over.
    std::vector<std::byte> host(bytes);
    if (sender) {
      fill_bytes(rank_, seed, host.data(), bytes);
      copy_bytes(b_.src->kind(), b_.src->data(), host.data(), bytes);
    } else {
      std::memset(host.data(), 0xA5, bytes);  // anything not delivered shows up
      copy_bytes(b_.dst->kind(), b_.dst->data(), host.data(), bytes);
    }
  }

  // Chunks: the receiver posts a chunk's receives and sends a ready token; the initiator
  // sends the chunk once it has that token. The initiator's receives are tokens only,
  // the receiver's data only, so each side posts them in the order the other sends.
  const int step = chunk(window);
  for (int w = 0; w < total; ++w) {
    if (initiator) {
      uint64_t ready = p_.recv(peer, rail, recv_token());
      uint64_t done = 0;
      Clock::time_point t0;
      for (int sent = 0; sent < window;) {
        const int n = std::min(step, window - sent);
        const bool last = sent + n == window;
        // The next token (ready for the next chunk, or done) follows this chunk's data.
        const uint64_t next = last && verb_ == Verb::read ? 0 : p_.recv(peer, rail, recv_token());
        p_.wait(ready, "the peer's ready token");
        if (sent == 0) t0 = Clock::now();
        post_window(peer, rail, bytes, n, last, ids);
        wait_ids(ids, "a bandwidth window");
        sent += n;
        (last ? done : ready) = next;
      }
      if (verb_ != Verb::read) p_.wait(done, "the peer's acknowledgement of a window");
      const auto t1 = Clock::now();
      if (w >= warmup) samples.push_back(gbps(static_cast<double>(bytes) * window, seconds_between(t0, t1)));
      if (verb_ == Verb::read) p_.send(peer, rail, send_token());
    } else {
      uint64_t finished = 0;
      if (verb_ == Verb::read) finished = p_.recv(peer, rail, recv_token());
      if (verb_ == Verb::send) {
        for (int got = 0; got < window;) {
          const int n = std::min(step, window - got);
          ids.clear();
          for (int k = 0; k < n; ++k) ids.push_back(p_.recv(peer, rail, dst(bytes)));
          p_.send(peer, rail, send_token());
          wait_ids(ids, "a bandwidth window of sends");
          got += n;
        }
      } else {
        p_.send(peer, rail, send_token());
      }
      if (verb_ == Verb::write) p_.wait_imm(peer, "the last write of a bandwidth window");
      if (verb_ == Verb::read)
        p_.wait(finished, "the peer's end of a read window");
      else
        p_.send(peer, rail, send_token());
    }
    p_.wait_all("bandwidth window completions");
  }
  if (check_ && wrong && !sender) {
    std::vector<std::byte> host(bytes);
    copy_bytes(b_.dst->kind(), host.data(), b_.dst->data(), bytes);
    *wrong += count_wrong_bytes(from, seed, host.data(), bytes);
  }
  return samples;
}

std::vector<double> PairTest::bidirectional(int peer, int rail, size_t bytes, int window, int warmup, int iters) {
  std::vector<double> samples;
  std::vector<uint64_t> mine, theirs;
  // Each side sends: ready(0), data(0), ready(1), data(1), ..., done; each posts its
  // receives in that order, a chunk (and the token after it) at a time.
  const int step = chunk(window);
  for (int w = 0; w < warmup + iters; ++w) {
    uint64_t ready = p_.recv(peer, rail, recv_token());
    Clock::time_point t0;
    for (int moved = 0; moved < window;) {
      const int n = std::min(step, window - moved);
      const bool last = moved + n == window;
      theirs.clear();
      if (verb_ == Verb::send) {
        for (int k = 0; k < n; ++k) theirs.push_back(p_.recv(peer, rail, dst(bytes)));
      }
      const uint64_t next = p_.recv(peer, rail, recv_token());  // ready(k+1), or done
      p_.send(peer, rail, send_token());
      p_.wait(ready, "the peer's ready token");
      if (moved == 0) t0 = Clock::now();
      post_window(peer, rail, bytes, n, last, mine);
      wait_ids(mine, "a bidirectional window");
      if (verb_ == Verb::send) wait_ids(theirs, "the peer's half of a bidirectional window");
      moved += n;
      ready = next;
    }
    if (verb_ == Verb::write) p_.wait_imm(peer, "the peer's last write of a bidirectional window");
    // Done means "your data arrived" for send/write and "I finished reading" for read.
    p_.send(peer, rail, send_token());
    p_.wait(ready, "the peer's end of a bidirectional window");
    const auto t1 = Clock::now();
    if (w >= warmup) samples.push_back(gbps(2.0 * static_cast<double>(bytes) * window, seconds_between(t0, t1)));
    p_.wait_all("bidirectional window completions");
  }
  return samples;
}

}  // namespace railbench
