#include "lib/transport/progress.h"

#include <sched.h>
#include <time.h>

#include <algorithm>

#include <fmt/format.h>

namespace railbench {

Progress::Progress(Transport& transport, double timeout_s, std::vector<std::string> peer_names)
    : t_(transport),
      timeout_s_(timeout_s),
      peer_names_(std::move(peer_names)),
      slots_(kSlots),
      outstanding_by_peer_(static_cast<size_t>(std::max(transport.world_size(), 1)), 0),
      abandoned_(static_cast<size_t>(std::max(transport.world_size(), 1)), false),
      batch_(64),
      cpu_driven_nic_(transport.caps().cpu_driven_nic),
      kernel_sockets_(transport.caps().kernel_sockets) {}

std::string Progress::peer_name(int peer) const {
  if (peer >= 0 && static_cast<size_t>(peer) < peer_names_.size()) return peer_names_[peer];
  return fmt::format("rank {}", peer);
}

std::string Progress::suspects() const {
  if (!liveness_) return "";
  try {
    return liveness_(stalled_s_);
  } catch (const std::exception&) {
    return "";  // the probe only adds detail; the error it would decorate goes on
  }
}

void Progress::reserve_slot(uint64_t id, int peer) {
  if (peer < 0 || peer >= t_.world_size()) {
    throw TransportError(
        fmt::format("rank {}: operation addressed to rank {}, outside 0..{}", t_.rank(), peer, t_.world_size() - 1));
  }
  // Nothing more goes to a peer given up on: its completion would be ignored and the
  // operation would stay outstanding, so every later wait_all would time out on it.
  if (abandoned(peer)) {
    throw TransportError(fmt::format("rank {}: {} was abandoned after a failure; nothing more is posted to it",
                                     t_.rank(), peer_name(peer)));
  }
  // The slot is reused every kSlots operations; the old one must have finished.
  const Slot& old = slots_[id & kMask];
  if (!old.done) wait(old.id, "a free operation slot");
}

void Progress::fail_post(int peer, OpKind kind) {
  throw TransportError(fmt::format("rank {}: posting {} to {} failed: {}", t_.rank(), to_string(kind), peer_name(peer),
                                   t_.last_error()));
}

void Progress::check_post_deadline(Clock::time_point idle_since, int peer, OpKind kind) {
  if (seconds_between(idle_since, Clock::now()) < timeout_s_) return;
  throw TimeoutError(
      fmt::format("rank {}: could not post {} to {} for {:g} s: the transport stayed out of "
                  "resources ({} operations outstanding)",
                  t_.rank(), to_string(kind), peer_name(peer), timeout_s_, outstanding_));
}

size_t Progress::poll_once() {
  const size_t n = t_.poll(batch_);
  // A failure is raised after the whole batch is accounted for: the healthy completions
  // polled with it must not be lost, or a caller that abandons the failed peer and goes
  // on would wait for them forever and blame a healthy peer.
  const Completion* failed = nullptr;
  for (size_t i = 0; i < n; ++i) {
    const Completion& c = batch_[i];
    if (abandoned(c.peer)) continue;
    if (c.status != Status::ok) {
      if (!failed) failed = &c;
      continue;
    }
    if (c.op == OpKind::remote_write_imm) {
      imms_.push_back(c);
      continue;
    }
    Slot& s = slots_[c.wr_id & kMask];
    if (s.id != c.wr_id || s.done) continue;  // not ours: ignore rather than corrupt state
    s.done = true;
    s.bytes = c.bytes;
    --outstanding_;
    --outstanding_by_peer_[s.peer];
  }
  if (failed) {
    // A connection torn down by a peer that died (or that left while this rank was
    // stopped) fails on whichever live neighbour shared it: name the dead one first.
    const std::string error = t_.last_error();
    const std::string culprits = suspects();
    throw TransportError(fmt::format("rank {}: {}{}{} with {} on rail {} failed: {}", t_.rank(), culprits,
                                     culprits.empty() ? "" : "; then ", to_string(failed->op), peer_name(failed->peer),
                                     failed->rail, error));
  }
  return n;
}

void Progress::abandon_peer(int peer) {
  if (peer < 0 || static_cast<size_t>(peer) >= abandoned_.size()) return;
  abandoned_[peer] = true;
  for (Slot& s : slots_) {
    if (s.done || s.peer != peer) continue;
    s.done = true;
    --outstanding_;
    --outstanding_by_peer_[peer];
  }
  std::erase_if(imms_, [&](const Completion& c) { return c.peer == peer; });
}

template <class Pred>
void Progress::wait_until(Pred pred, const char* what, int focus_peer) {
  // Spin first: the lowest latency when each rank has a core. After kSpin without any
  // completion, yield on every idle poll: with more ranks than cores the rank we wait
  // for needs this core, and counting polls instead of time is no good, since one poll
  // costs 50 ns on shm and microseconds of syscalls on tcp.
  // A rank with a core of its own spins far longer (set_own_core). Not on a CPU-driven
  // NIC: there the kernel's share of the transfer (rxe's softirq work, deferred to a
  // kernel thread under load) waits for a spinning rank's time slice to end, up to a
  // scheduler tick (4 ms) per message.
  // A latency test there spins through about ten emulated round trips (200 us) first: a
  // yield is a system call, microseconds under a VM, which the ping-pong would measure.
  // Nor over the kernel's TCP stack: two spinning ranks leave its softirq work little of
  // two shared cores (Open MPI's spinning tcp BTL measured 1/40 of railbench's bandwidth).
  const auto spin_for = spin_budget();
  // 32 idle polls take microseconds; a gap this long means this process was stopped
  // (SIGSTOP, a debugger). That time is not the peers' silence: it does not count.
  constexpr double kStoppedGap_s = 1.0;
  // The idle clock starts at the first check, 512 idle polls in (tens of microseconds,
  // more than an 8 B round trip), then checks every 32: a clock read costs 0.7 us under
  // a VM's emulated timer (HPET), and at 32 the soft-RoCE ping-pong read it about twice
  // per wait (scripts/bench/profile-rxe-lat.sh measured it).
  constexpr uint32_t kFirstCheck = 512;
  Clock::time_point idle_since, last_check;
  bool timing = false;
  stalled_s_ = 0;  // a stop in an earlier, finished wait is not this one's story
  bool yielding = false;
  for (uint32_t idle = 0; !pred();) {
    if (poll_once() > 0) {
      idle = 0;
      yielding = false;
      timing = false;
      continue;
    }
    ++idle;
    if (!timing) {
      // A wait that yields after 20 us starts its clock at once, as it always did: its
      // spin must stay short, or ranks that share cores spin away their peers' time.
      if (spin_for == kSpin || idle == kFirstCheck) {
        timing = true;
        idle_since = last_check = Clock::now();
      }
      continue;  // not yielding either: that needs the clock
    }
    if ((idle & 31) == 0) {
      const auto now = Clock::now();
      if (const double gap = seconds_between(last_check, now); gap > kStoppedGap_s) {
        stalled_s_ += gap;
        idle_since += now - last_check;
      }
      last_check = now;
      if (seconds_between(idle_since, now) >= timeout_s_) fail_timeout(what, focus_peer);
      yielding = now - idle_since > spin_for;
    }
    if (yielding) nap_or_yield(seconds_between(idle_since, last_check));
  }
}

std::chrono::microseconds Progress::spin_budget() const {
  return own_core_ && !cpu_driven_nic_ && !kernel_sockets_ ? std::chrono::microseconds(1'000'000)
         : own_core_ && latency_                           ? std::chrono::microseconds(200)
                                                           : kSpin;
}

void Progress::ping_pong(PingPong pp) {
  reserve_slot(next_id_, pp.peer);  // checks the peer: a rank, not abandoned
  pp.timeout_s = timeout_s_;
  pp.spin_s = std::chrono::duration<double>(spin_budget()).count();
  if (t_.ping_pong(pp) == Status::ok) return;
  const std::string error = t_.last_error();
  const std::string culprits = suspects();
  throw TransportError(fmt::format("rank {}: {}{}ping-pong with {} on rail {} failed: {}", t_.rank(), culprits,
                                   culprits.empty() ? "" : "; then ", peer_name(pp.peer), pp.rail, error));
}

void Progress::nap_or_yield(double idle_s) {
  // On a CPU-driven NIC (soft-RoCE) a long wait sleeps: the transfer needs these cores.
  // The nap grows with the wait (1/32 of it, 20 us to 500 us), so it adds about 3% to
  // the wait it ends; never inside a latency test, whose every microsecond counts.
  constexpr double kNapAfter_s = 200e-6, kNapMin_s = 20e-6, kNapMax_s = 500e-6;
  if (cpu_driven_nic_ && !latency_ && idle_s > kNapAfter_s) {
    const double nap = std::clamp(idle_s / 32, kNapMin_s, kNapMax_s);
    timespec ts{0, static_cast<long>(nap * 1e9)};
    nanosleep(&ts, nullptr);
    return;
  }
  yield_cpu();
}

void Progress::wait_for(const std::function<bool()>& ready, int peer, const char* what) {
  wait_until([&] { return ready(); }, what, peer);
}

void Progress::yield_cpu() {
  sched_yield();
}

void Progress::fail_timeout(const char* what, int focus_peer) {
  std::string pending;
  for (size_t p = 0; p < outstanding_by_peer_.size(); ++p) {
    if (outstanding_by_peer_[p] == 0) continue;
    std::string kinds;
    for (const Slot& s : slots_) {
      if (!s.done && s.peer == static_cast<int>(p)) {
        const char* k = to_string(s.kind);
        if (kinds.find(k) == std::string::npos) kinds += fmt::format("{}{}", kinds.empty() ? "" : "/", k);
      }
    }
    pending += fmt::format("{}{} ({} {} outstanding)", pending.empty() ? "" : ", ", peer_name(static_cast<int>(p)),
                           outstanding_by_peer_[p], kinds);
  }
  if (pending.empty() && focus_peer >= 0) pending = peer_name(focus_peer);
  if (pending.empty()) pending = "an unknown peer";
  // The peer waited on is often alive and waiting itself on the rank that stopped or
  // died: ask who answers before blaming it.
  if (const std::string culprits = suspects(); !culprits.empty()) {
    throw TimeoutError(
        fmt::format("rank {}: {}; this rank timed out after {:g} s without progress waiting for {} from {}", t_.rank(),
                    culprits, timeout_s_, what, pending));
  }
  throw TimeoutError(
      fmt::format("rank {}: timed out after {:g} s without progress waiting for {} from {} (is "
                  "that peer alive and its link up? raise --timeout for very slow links)",
                  t_.rank(), timeout_s_, what, pending));
}

bool Progress::done(uint64_t wr_id) const {
  const Slot& s = slots_[wr_id & kMask];
  return s.id != wr_id || s.done;  // a reused slot means wr_id finished long ago
}

size_t Progress::bytes(uint64_t wr_id) const {
  const Slot& s = slots_[wr_id & kMask];
  return s.id == wr_id ? s.bytes : 0;
}

void Progress::wait(uint64_t wr_id, const char* what) {
  const Slot& s = slots_[wr_id & kMask];
  wait_until([&] { return done(wr_id); }, what, s.id == wr_id ? s.peer : -1);
}

void Progress::wait_any(std::span<const uint64_t> ids, const char* what) {
  if (ids.empty()) return;
  const Slot& first = slots_[ids[0] & kMask];
  wait_until([&] { return std::any_of(ids.begin(), ids.end(), [&](uint64_t id) { return done(id); }); }, what,
             first.id == ids[0] ? first.peer : -1);
}

void Progress::wait_all(const char* what) {
  wait_until([&] { return outstanding_ == 0; }, what, -1);
}

uint32_t Progress::wait_imm(int expected_peer, const char* what) {
  wait_until([&] { return !imms_.empty(); }, what, expected_peer);
  uint32_t imm = imms_.front().imm;
  imms_.pop_front();
  return imm;
}

void Progress::wait_imm_value(uint32_t imm, int expected_peer, const char* what) {
  auto find = [&] {
    return std::find_if(imms_.begin(), imms_.end(), [&](const Completion& c) { return c.imm == imm; });
  };
  wait_until([&] { return find() != imms_.end(); }, what, expected_peer);
  imms_.erase(find());
}

uint64_t Progress::send(int peer, int rail, const LocalSpan& src) {
  return post(peer, OpKind::send, [&](uint64_t id) { return t_.post_send(peer, rail, src, id); });
}

uint64_t Progress::recv(int peer, int rail, const LocalSpan& dst) {
  return post(peer, OpKind::recv, [&](uint64_t id) { return t_.post_recv(peer, rail, dst, id); });
}

std::optional<uint64_t> Progress::try_send(int peer, int rail, const LocalSpan& src) {
  return try_post(peer, OpKind::send, [&](uint64_t id) { return t_.post_send(peer, rail, src, id); });
}

std::optional<uint64_t> Progress::try_recv(int peer, int rail, const LocalSpan& dst) {
  return try_post(peer, OpKind::recv, [&](uint64_t id) { return t_.post_recv(peer, rail, dst, id); });
}

uint64_t Progress::write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst) {
  return post(peer, OpKind::write, [&](uint64_t id) { return t_.post_write(peer, rail, src, dst, id); });
}

uint64_t Progress::write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm) {
  return post(peer, OpKind::write, [&](uint64_t id) { return t_.post_write_imm(peer, rail, src, dst, imm, id); });
}

uint64_t Progress::write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm) {
  return post(peer, OpKind::write, [&](uint64_t id) { return t_.post_write_batch(peer, rail, ops, imm, id); });
}

uint64_t Progress::read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src) {
  return post(peer, OpKind::read, [&](uint64_t id) { return t_.post_read(peer, rail, dst, src, id); });
}

}  // namespace railbench
