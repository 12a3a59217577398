#include "lib/observe/clock_offsets.h"

#include <array>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/observe/op_recorder.h"

namespace railbench {

namespace {

// Rank 0's side with one peer: `rounds` pings, each answered by the peer's clock.
ClockOffset ping_peer(Progress& p, const MemoryRegion& mr, int peer, int rounds, int rail) {
  ClockOffset best;
  best.best_rtt_ns = std::numeric_limits<int64_t>::max();
  const std::string what = fmt::format("clock offset ping-pong with rank {}", peer);
  for (int i = 0; i < rounds; ++i) {
    // The answer's receive is posted first, so the round trip times the wire, not a post.
    const uint64_t rx = p.recv(peer, rail, LocalSpan{&mr, 8, 8});
    const int64_t t0 = monotonic_ns();
    const uint64_t tx = p.send(peer, rail, LocalSpan{&mr, 0, 8});
    p.wait(rx, what.c_str());
    const int64_t t2 = monotonic_ns();
    p.wait(tx, what.c_str());
    int64_t t1 = 0;
    std::memcpy(&t1, mr.at(8), sizeof(t1));
    if (t2 - t0 < best.best_rtt_ns) {
      best.best_rtt_ns = t2 - t0;
      best.offset_ns = t1 - (t0 + t2) / 2;
      best.uncertainty_ns = (t2 - t0 + 1) / 2;
    }
  }
  return best;
}

// A peer's side: answer each of rank 0's pings with this rank's clock.
void answer_pings(Progress& p, const MemoryRegion& mr, int rounds, int rail) {
  for (int i = 0; i < rounds; ++i) {
    p.wait(p.recv(0, rail, LocalSpan{&mr, 0, 8}), "clock offset ping from rank 0");
    const int64_t t1 = monotonic_ns();
    std::memcpy(mr.at(8), &t1, sizeof(t1));
    p.wait(p.send(0, rail, LocalSpan{&mr, 8, 8}), "clock offset answer to rank 0");
  }
}

}  // namespace

std::vector<ClockOffset> estimate_clock_offsets(Progress& progress, Bootstrap& bootstrap, int rounds, int rail) {
  if (rounds < 1) throw UsageError(fmt::format("clock offsets: {} rounds; use 1 or more", rounds));
  Transport& t = progress.transport();
  if (!t.caps().send_recv)
    throw UnsupportedError(
        fmt::format("clock offsets need two-sided send/recv, which -t {} ({}) does not offer: "
                    "leave out --stragglers with this transport",
                    t.name(), t.provider()));
  const int n = t.world_size();
  std::array<int64_t, 2> buf{};
  const auto mr = t.register_memory(buf.data(), sizeof(buf), MemoryKind::host);
  if (t.rank() == 0) {
    std::vector<ClockOffset> all(static_cast<size_t>(n));
    for (int peer = 1; peer < n; ++peer) all[static_cast<size_t>(peer)] = ping_peer(progress, *mr, peer, rounds, rail);
    // Rank 0 measured them all; one gather hands every rank the same table.
    const auto blobs = bootstrap.all_gather_vectors(all);
    return blobs[0];
  }
  answer_pings(progress, *mr, rounds, rail);
  const auto blobs = bootstrap.all_gather_vectors(std::vector<ClockOffset>{});
  return blobs[0];
}

}  // namespace railbench
