// Blocking helpers over a Transport's non-blocking data path. Every wait has a
// deadline; when a peer stops answering, the TimeoutError names it and what was
// outstanding. The deadline is one of inactivity: it restarts whenever any operation
// completes, so a long transfer that keeps moving never times out.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/core/clock.h"
#include "lib/core/errors.h"
#include "lib/transport/transport.h"

namespace railbench {

class Progress {
 public:
  // peer_names[r], when given, is how rank r is named in errors (e.g. "rank 3 (node07)").
  Progress(Transport& transport, double timeout_s, std::vector<std::string> peer_names = {});

  // Asked before a timeout or a failed completion is blamed on the peer it came from:
  // returns the ranks that are stopped or dead (lib/runtime/liveness.h's Liveness::hook()), or
  // "" when all answer. Its argument is how long this rank itself was stopped.
  using LivenessProbe = std::function<std::string(double stalled_s)>;
  void set_liveness_probe(LivenessProbe probe) { liveness_ = std::move(probe); }

  Transport& transport() { return t_; }
  double timeout() const { return timeout_s_; }

  // Posts one operation through `post(wr_id) -> Status`, polling while the transport
  // answers retry. Returns the wr_id to wait on.
  template <class PostFn>
  std::optional<uint64_t> try_post(int peer, OpKind kind, PostFn&& post_fn) {
    const uint64_t id = next_id_;
    reserve_slot(id, peer);
    if (post_fn(id) != Status::ok) return std::nullopt;
    return commit_post(id, peer, kind);
  }

  template <class PostFn>
  uint64_t post(int peer, OpKind kind, PostFn&& post_fn) {
    const uint64_t id = next_id_;
    reserve_slot(id, peer);
    Status s = post_fn(id);
    if (s == Status::ok) return commit_post(id, peer, kind);
    // Only a post that must wait reads the clock (0.7 us under a VM's emulated timer).
    Clock::time_point idle_since = Clock::now();
    bool yielding = false;
    for (uint32_t spins = 0;; ++spins) {
      if (s == Status::error) fail_post(peer, kind);
      if (poll_once() > 0) {
        idle_since = Clock::now();
        yielding = false;
      } else if ((spins & 31) == 31) {
        yielding = Clock::now() - idle_since > kSpin;
      }
      if ((spins & 255) == 255) check_post_deadline(idle_since, peer, kind);
      // As in wait_until: a full queue waits on the peer, which may need this core.
      if (yielding) yield_cpu();
      s = post_fn(id);
      if (s == Status::ok) break;
    }
    return commit_post(id, peer, kind);
  }

  uint64_t send(int peer, int rail, const LocalSpan& src);
  uint64_t recv(int peer, int rail, const LocalSpan& dst);
  // One attempt to post, for probes of a peer that may be unreachable (validate's
  // isolation phase): the wr_id, or nothing (nothing posted) when the transport answers
  // retry or error right now, as libfabric's rxm does while it cannot connect. The
  // caller decides how long to keep trying; a send that never posts is an answer.
  std::optional<uint64_t> try_send(int peer, int rail, const LocalSpan& src);
  std::optional<uint64_t> try_recv(int peer, int rail, const LocalSpan& dst);
  uint64_t write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst);
  uint64_t write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm);
  uint64_t read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src);
  // One batched write (Transport::post_write_batch): one id for every span in `ops`,
  // which must stay valid only for the call. With `imm`, the last write carries it.
  uint64_t write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm = {});

  // Non-blocking: has `wr_id` completed? (does not drive progress)
  bool done(uint64_t wr_id) const;
  // Bytes a completed receive delivered.
  size_t bytes(uint64_t wr_id) const;
  void wait(uint64_t wr_id, const char* what);
  void wait_all(const char* what);
  // Waits until at least one of `ids` has completed (all of them may have already).
  void wait_any(std::span<const uint64_t> ids, const char* what);
  // Waits for the next remote write-with-imm notification and returns its imm.
  uint32_t wait_imm(int expected_peer, const char* what);
  // Waits for the notification carrying exactly `imm` (notifications on different
  // rails may overtake each other) and consumes it.
  void wait_imm_value(uint32_t imm, int expected_peer, const char* what);

  // Gives up on every operation outstanding with `peer` after it failed a deadline, so
  // later waits (wait_all included) do not wait for it again; its late completions,
  // failed ones included, are ignored from then on. The buffers those operations
  // named must stay registered until the transport closes.
  void abandon_peer(int peer);
  bool abandoned(int peer) const {
    return peer >= 0 && static_cast<size_t>(peer) < abandoned_.size() && abandoned_[peer];
  }

  // Runs `pp` inside the transport (caps().ping_pong) with this Progress's deadline and a
  // latency test's spin (set_own_core; pp.timeout_s and pp.spin_s are set here). A failure
  // throws TransportError as a failed wait does, naming the peer; nothing may be
  // outstanding with pp.peer on pp.rail.
  void ping_pong(PingPong pp);

  // Polls the transport once; returns how many completions it handled.
  size_t poll_once();

  // Waits until `ready()` (a plain memory check, e.g. the last byte of a buffer a peer
  // writes into, as perftest's ib_write_lat responder does), driving progress meanwhile
  // (software providers move RMA data only inside poll). The deadline and the error are
  // every other wait's; `peer` is who was expected to write.
  // (A small lambda fits std::function's own storage: nothing is allocated.)
  void wait_for(const std::function<bool()>& ready, int peer, const char* what);

  // Whether this rank has a core of its own (no more ranks on its machine than CPUs),
  // told by the launcher's side (RunContext). Unknown: assume not. A rank with a core of
  // its own spins through a wait for up to a second before it yields, as MPI libraries
  // spin: a sched_yield is a system call that a ping-pong would measure, and on a busy
  // host it hands the core to anyone (a collective's iterations then come in a fast and
  // a slow mode). A rank that shares its core still yields after 20 us, or the peer it
  // waits for would not run; so does one on a CPU-driven NIC (soft-RoCE) or over the
  // kernel's TCP stack, whose transfer runs on the same cores.
  void set_own_core(bool own) { own_core_ = own; }

  // Inside a latency test, where every microsecond counts: no sleeping through long
  // waits on a CPU-driven NIC (nap_or_yield) while a LatencyScope lives.
  class LatencyScope {
   public:
    explicit LatencyScope(Progress& p) : p_(p), saved_(p.latency_) { p_.latency_ = true; }
    ~LatencyScope() { p_.latency_ = saved_; }
    LatencyScope(const LatencyScope&) = delete;
    LatencyScope& operator=(const LatencyScope&) = delete;

   private:
    Progress& p_;
    bool saved_;
  };
  size_t outstanding() const { return outstanding_; }

 private:
  static constexpr uint64_t kSlots = 1 << 16;  // most operations in flight at once
  // How long a wait (or a post that keeps answering retry) spins without any completion
  // before it yields the core on every idle poll.
  static constexpr auto kSpin = std::chrono::microseconds(20);
  static void yield_cpu();
  static constexpr uint64_t kMask = kSlots - 1;

  struct Slot {
    uint64_t id = ~0ULL;
    int peer = -1;
    OpKind kind = OpKind::send;
    bool done = true;
    size_t bytes = 0;
  };

  void reserve_slot(uint64_t id, int peer);
  // Records a posted operation `id` in its slot; returns id.
  uint64_t commit_post(uint64_t id, int peer, OpKind kind) {
    ++next_id_;
    slots_[id & kMask] = Slot{id, peer, kind, false, 0};
    ++outstanding_;
    ++outstanding_by_peer_[peer];
    return id;
  }
  [[noreturn]] void fail_post(int peer, OpKind kind);
  void check_post_deadline(Clock::time_point idle_since, int peer, OpKind kind);
  // Polls until pred() holds; TimeoutError after timeout_s_ without any completion.
  template <class Pred>
  void wait_until(Pred pred, const char* what, int focus_peer);
  [[noreturn]] void fail_timeout(const char* what, int focus_peer);
  // How long a wait spins without any completion before it yields (see wait_until).
  std::chrono::microseconds spin_budget() const;
  // An idle poll's pause, `idle_s` into a wait: a yield, or a short sleep (see .cc).
  void nap_or_yield(double idle_s);
  std::string peer_name(int peer) const;
  // The liveness probe's findings, "" without a probe or when every rank answered.
  std::string suspects() const;

  Transport& t_;
  double timeout_s_;
  std::vector<std::string> peer_names_;
  std::vector<Slot> slots_;
  std::vector<size_t> outstanding_by_peer_;
  std::vector<bool> abandoned_;
  std::vector<Completion> batch_;
  std::deque<Completion> imms_;
  LivenessProbe liveness_;
  double stalled_s_ = 0;  // seconds this rank was seen stopped (SIGSTOP) inside waits
  uint64_t next_id_ = 1;
  size_t outstanding_ = 0;
  bool own_core_ = false;
  bool latency_ = false;
  bool cpu_driven_nic_ = false;  // caps().cpu_driven_nic: long waits sleep (nap_or_yield)
  bool kernel_sockets_ = false;  // caps().kernel_sockets: never spin long (wait_until)
};

}  // namespace railbench
