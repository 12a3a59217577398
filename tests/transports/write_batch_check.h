// The post_write_batch contract over a real transport, shared by the ofi and verbs
// conformance tests: call it on both of two ranks (threads), each writing a batch into
// the other. `finished` is one counter both ranks share, zero at the start.
//
// Completions are read with the transport's own poll(), not Progress, so the test sees
// every completion: exactly one per batch, with the caller's wr_id and the batch's bytes.
// Both ranks keep polling until both have theirs: shm and tcp make progress for the
// target only when the target polls.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/runtime/bootstrap.h"
#include "lib/transport/transport.h"
#include "tests/support/world.h"

namespace railbench::testing {

namespace batch_check {

// Span i: a length that mixes tiny and larger-than-inject writes, a source right after
// span i - 1's, and a destination slot in reverse order, so a write that lands at its
// source offset, or in the wrong order, is caught.
constexpr size_t kSlot = 20480;
inline size_t length(size_t i) {
  return i % 5 == 0 ? 20000 - i : 1 + (i * 37) % 300;
}
inline size_t dst_offset(size_t i, size_t n) {
  return (n - 1 - i) * kSlot + (i % 7);
}
inline uint8_t pattern(int rank, size_t offset) {
  return static_cast<uint8_t>(offset * 131 + static_cast<size_t>(rank) * 17 + 1);
}

// Polls until this rank's batch `wr_id` completed and the peer's too (finished >=
// goal) and, with `want_imm`, the peer's immediate has arrived, then 20 ms more so a second completion for the same
// wr_id would show up. Returns the immediate a peer's batch delivered, if any.
inline std::optional<uint32_t> reap(Transport& t, uint64_t wr_id, size_t bytes, std::atomic<int>& finished, int goal,
                                    bool want_imm, const std::string& what) {
  std::vector<Completion> cs(64);
  int mine = 0;
  std::optional<uint32_t> imm;
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> both_done;
  for (;;) {
    const size_t n = t.poll(cs);
    for (size_t i = 0; i < n; ++i) {
      const Completion& c = cs[i];
      if (c.op == OpKind::remote_write_imm) {
        expect(c.status == Status::ok, what + ": the peer's write-with-imm failed: " + t.last_error());
        imm = c.imm;
        continue;
      }
      expect(c.wr_id == wr_id, fmt::format("{}: a completion with wr_id {:#x}, expected {:#x}", what, c.wr_id, wr_id));
      expect(c.status == Status::ok, what + " failed: " + t.last_error());
      expect(c.op == OpKind::write, what + ": the completion is not a write");
      expect(c.bytes == bytes, fmt::format("{}: completion says {} bytes, the batch has {}", what, c.bytes, bytes));
      if (++mine == 1) ++finished;
    }
    const auto now = std::chrono::steady_clock::now();
    if (mine >= 1 && finished.load() >= goal && (!want_imm || imm) && !both_done) both_done = now;
    if (both_done && now - *both_done > std::chrono::milliseconds(20)) break;
    expect(now - start < std::chrono::seconds(20), fmt::format("{}: no completion within 20 s", what));
  }
  expect(mine == 1, fmt::format("{}: {} completions for one batch", what, mine));
  return imm;
}

}  // namespace batch_check

// Batches of 1, 2, 5 and caps().max_batch writes land at their offsets and complete
// once; the largest carries an immediate where the transport has write-with-imm. Then
// the refusals: too long, empty, a bad rail, a bad peer.
inline void expect_write_batch_contract(Transport& t, Bootstrap& b, std::atomic<int>& finished) {
  using namespace batch_check;
  const int me = b.rank(), peer = 1 - me;
  const size_t max_batch = t.caps().max_batch;
  expect(max_batch >= 2, fmt::format("caps().max_batch is {}: a batch form should hold several writes", max_batch));
  const size_t bytes = max_batch * kSlot + 64;
  std::vector<uint8_t> src(bytes), dst(bytes);
  for (size_t i = 0; i < bytes; ++i) src[i] = pattern(me, i);
  auto smr = t.register_memory(src.data(), bytes, MemoryKind::host);
  auto dmr = t.register_memory(dst.data(), bytes, MemoryKind::host);
  const RemoteKey peer_dst = RemoteKey::deserialize(b.all_gather_v(dmr->remote_key().serialize())[peer]);

  int round = 0;
  for (size_t n : {size_t{1}, size_t{2}, size_t{5}, max_batch}) {
    std::fill(dst.begin(), dst.end(), 0);
    b.barrier();
    std::vector<WriteSpan> ops;
    size_t total = 0;
    for (size_t i = 0, at = 0; i < n; at += length(i), ++i) {
      ops.push_back(WriteSpan{LocalSpan{smr.get(), at, length(i)}, RemoteSpan{&peer_dst, dst_offset(i, n)}});
      total += length(i);
    }
    const bool with_imm = n == max_batch && t.caps().write_with_imm;
    const std::optional<uint32_t> imm =
        with_imm ? std::optional<uint32_t>(0xBA7C0000u + static_cast<uint32_t>(n)) : std::nullopt;
    const uint64_t wr_id = 0xB000 + n;
    const std::string what = fmt::format("a batch of {} write(s){}", n, with_imm ? " with an immediate" : "");
    Status s = Status::retry;
    for (int tries = 0; s == Status::retry && tries < 100000; ++tries) {
      s = t.post_write_batch(peer, 0, ops, imm, wr_id);
      if (s == Status::retry) {
        std::vector<Completion> none(8);
        expect(t.poll(none) == 0, what + ": a completion before anything was posted");
      }
    }
    expect(s == Status::ok, what + ": post failed: " + t.last_error());
    ++round;
    const std::optional<uint32_t> got = reap(t, wr_id, total, finished, 2 * round, with_imm, what);
    if (with_imm) expect(got == imm, what + ": the peer's immediate did not arrive, or is wrong");
    b.barrier();
    // What the peer wrote into `dst`: its spans at their slots, zero everywhere else.
    size_t wrong = 0, stray = 0, covered = 0;
    std::vector<char> written(bytes, 0);
    for (size_t i = 0, at = 0; i < n; at += length(i), ++i) {
      for (size_t j = 0; j < length(i); ++j) {
        wrong += dst[dst_offset(i, n) + j] != pattern(peer, at + j);
        written[dst_offset(i, n) + j] = 1;
      }
      covered += length(i);
    }
    for (size_t k = 0; k < bytes; ++k) stray += !written[k] && dst[k] != 0;
    expect(wrong == 0, fmt::format("{}: {} of {} bytes wrong at their destinations", what, wrong, covered));
    expect(stray == 0, fmt::format("{}: {} bytes written outside the destinations", what, stray));
  }

  // Refusals answer error, post nothing and say why.
  auto refused = [&](int to, int rail, std::span<const WriteSpan> ops, const char* words, const char* what) {
    const Status s = t.post_write_batch(to, rail, ops, std::nullopt, 1);
    expect(s == Status::error, fmt::format("{}: answered {} instead of error", what, static_cast<int>(s)));
    const std::string e = t.last_error();
    expect(e.find(words) != std::string::npos, fmt::format("{}: error '{}' does not say '{}'", what, e, words));
  };
  std::vector<WriteSpan> too_many(max_batch + 1, WriteSpan{LocalSpan{smr.get(), 0, 1}, RemoteSpan{&peer_dst, 0}});
  refused(peer, 0, too_many, "a batch holds", "a batch longer than caps().max_batch");
  refused(peer, 0, {}, "a batch holds", "an empty batch");
  const std::vector<WriteSpan> one{WriteSpan{LocalSpan{smr.get(), 0, 8}, RemoteSpan{&peer_dst, 0}}};
  refused(peer, t.num_rails(), one, "rail", "a batch on a rail that does not exist");
  refused(t.world_size(), 0, one, "peer", "a batch to a peer that is not a rank");
  const std::vector<WriteSpan> outside{WriteSpan{LocalSpan{smr.get(), 0, 8}, RemoteSpan{&peer_dst, bytes}}};
  refused(peer, 0, outside, "remote span", "a batch with a span outside the remote region");
  std::vector<Completion> cs(8);
  expect(t.poll(cs) == 0, "a refused batch completed");
  b.barrier();
}

}  // namespace railbench::testing
