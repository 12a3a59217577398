// The loopback keeps lib/transport/transport.h's contract (FIFO matching per (peer, rail),
// completions only through poll, remote keys checked) and its fault rules do what
// they say: the algorithm tests built on it are only as good as this.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "tests/support/loopback_world.h"

using namespace railbench;
using namespace railbench::testing;
using Catch::Matchers::Contains;

namespace {

std::vector<Completion> drain(Transport& t) {
  std::vector<Completion> all;
  Completion batch[8];
  for (size_t n; (n = t.poll(batch)) > 0;) all.insert(all.end(), batch, batch + n);
  return all;
}

}  // namespace

TEST_CASE("loopback: sends match receives in FIFO order per (peer, rail)", "[loopback]") {
  LoopbackWorld w(2, {.rails = 2});
  for (int i = 0; i < 4; ++i) *w.at(0, static_cast<size_t>(i)) = static_cast<std::byte>(10 + i);
  // Two sends on rail 0 before any receive, one on rail 1 after its receive.
  REQUIRE(w.t(0).post_send(1, 0, w.local(0, 0, 1), 1) == Status::ok);
  REQUIRE(w.t(0).post_send(1, 0, w.local(0, 1, 2), 2) == Status::ok);
  REQUIRE(w.t(1).post_recv(0, 1, w.local(1, 100, 8), 30) == Status::ok);
  REQUIRE(w.t(0).post_send(1, 1, w.local(0, 3, 1), 3) == Status::ok);
  REQUIRE(w.t(1).post_recv(0, 0, w.local(1, 200, 8), 10) == Status::ok);
  REQUIRE(w.t(1).post_recv(0, 0, w.local(1, 300, 8), 20) == Status::ok);
  CHECK(drain(w.t(0)).size() == 3);
  const auto got = drain(w.t(1));
  REQUIRE(got.size() == 3);
  CHECK(got[0].wr_id == 30);
  CHECK(got[0].rail == 1);
  CHECK(got[1].wr_id == 10);
  CHECK(got[1].bytes == 1);
  CHECK(got[2].wr_id == 20);
  CHECK(got[2].bytes == 2);
  CHECK(got[2].peer == 0);
  CHECK(*w.at(1, 100) == std::byte{13});
  CHECK(*w.at(1, 200) == std::byte{10});
  CHECK(*w.at(1, 301) == std::byte{12});
}

TEST_CASE("loopback: write-with-imm notifies the target, read fetches, bad keys fail", "[loopback]") {
  LoopbackWorld w(3);
  std::memset(w.at(2, 0), 0x5a, 16);
  REQUIRE(w.t(0).post_write_imm(1, 0, w.local(0, 0, 16), w.remote(1, 32), 0xabcd, 1) == Status::ok);
  REQUIRE(w.t(0).post_read(2, 0, w.local(0, 64, 16), w.remote(2, 0), 2) == Status::ok);
  const auto at1 = drain(w.t(1));
  REQUIRE(at1.size() == 1);
  CHECK(at1[0].op == OpKind::remote_write_imm);
  CHECK(at1[0].imm == 0xabcd);
  CHECK(at1[0].peer == 0);
  CHECK(drain(w.t(0)).size() == 2);
  CHECK(*w.at(0, 64) == std::byte{0x5a});
  // Rank 2's key used for rank 1: an error completion, nothing written.
  REQUIRE(w.t(0).post_write(1, 0, w.local(0, 0, 8), w.remote(2, 0), 3) == Status::ok);
  const auto bad = drain(w.t(0));
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].status == Status::error);
  CHECK_THAT(w.t(0).last_error(), Contains("another rank's key"));
  // A receive smaller than its message fails at the receiver.
  REQUIRE(w.t(1).post_recv(0, 0, w.local(1, 0, 4), 4) == Status::ok);
  REQUIRE(w.t(0).post_send(1, 0, w.local(0, 0, 8), 5) == Status::ok);
  const auto small = drain(w.t(1));
  REQUIRE(small.size() == 1);
  CHECK(small[0].status == Status::error);
  CHECK_THAT(w.t(1).last_error(), Contains("larger than the receive"));
}

TEST_CASE("loopback: a batched write lands every span and completes once, a bad span posts nothing", "[loopback]") {
  LoopbackWorld w(2);
  for (int i = 0; i < 12; ++i) *w.at(0, static_cast<size_t>(i)) = static_cast<std::byte>(i + 1);
  const std::vector<WriteSpan> ops{
      {w.local(0, 0, 4), w.remote(1, 100)}, {w.local(0, 4, 4), w.remote(1, 50)}, {w.local(0, 8, 4), w.remote(1, 0)}};
  REQUIRE(w.t(0).post_write_batch(1, 0, ops, 0x77u, 9) == Status::ok);
  const auto mine = drain(w.t(0));
  REQUIRE(mine.size() == 1);
  CHECK(mine[0].wr_id == 9);
  CHECK(mine[0].op == OpKind::write);
  CHECK(mine[0].bytes == 12);
  const auto theirs = drain(w.t(1));
  REQUIRE(theirs.size() == 1);
  CHECK(theirs[0].imm == 0x77u);
  CHECK(*w.at(1, 100) == std::byte{1});
  CHECK(*w.at(1, 53) == std::byte{8});
  CHECK(*w.at(1, 0) == std::byte{9});
  // Too long, or one span outside its region: error, and nothing moves.
  std::vector<WriteSpan> long_list(w.t(0).caps().max_batch + 1, ops[0]);
  CHECK(w.t(0).post_write_batch(1, 0, long_list, std::nullopt, 10) == Status::error);
  CHECK_THAT(w.t(0).last_error(), Contains("a batch holds"));
  std::vector<WriteSpan> bad = ops;
  bad[2].src.length = size_t{1} << 40;
  std::memset(w.at(1, 0), 0, 200);
  CHECK(w.t(0).post_write_batch(1, 0, bad, std::nullopt, 11) == Status::error);
  CHECK(w.t(0).post_write_batch(1, 5, ops, std::nullopt, 12) == Status::error);
  CHECK_THAT(w.t(0).last_error(), Contains("rail 5"));
  CHECK(drain(w.t(0)).empty());
  CHECK(*w.at(1, 100) == std::byte{0});
}

TEST_CASE("loopback: an overtake hold lets rail 1's notification land before rail 0's data", "[loopback]") {
  LoopbackWorld w(2, {.rails = 2});
  w.fabric->inject({.op = PostKind::write, .rank = 0, .rail = 0, .hold = Hold::overtake});
  std::memset(w.at(0, 0), 0x77, 64);
  REQUIRE(w.t(0).post_write(1, 0, w.local(0, 0, 32), w.remote(1, 0), 1) == Status::ok);
  REQUIRE(w.t(0).post_write_imm(1, 0, w.local(0, 0, 8), w.remote(1, 32), 1, 2) == Status::ok);  // behind it
  CHECK(w.fabric->queued() == 2);
  REQUIRE(w.t(0).post_write_imm(1, 1, w.local(0, 32, 32), w.remote(1, 40), 2, 3) == Status::ok);
  // The target sees rail 1's notification while rail 0's bytes have not landed.
  std::vector<Completion> batch(1);
  REQUIRE(w.t(1).poll(batch) == 1);
  CHECK(batch[0].imm == 2);
  CHECK(batch[0].rail == 1);
  CHECK(*w.at(1, 0) != std::byte{0x77});
  // The next poll delivers rail 0 in its own order: data, then its notification.
  const auto rest = drain(w.t(1));
  REQUIRE(rest.size() == 1);
  CHECK(rest[0].imm == 1);
  CHECK(*w.at(1, 0) == std::byte{0x77});
  CHECK(w.fabric->overtaken() == 1);
  CHECK(w.fabric->queued() == 0);
}

TEST_CASE("loopback: stalled, dropped and failed operations", "[loopback]") {
  LoopbackWorld w(2);
  w.fabric->inject({.op = PostKind::send, .rank = 0, .nth = 1, .hold = Hold::stall});
  w.fabric->inject({.op = PostKind::write, .rank = 0, .nth = 1, .fault = Fault::drop});
  w.fabric->inject({.op = PostKind::read, .rank = 0, .nth = 1, .fault = Fault::fail});
  CHECK_THROWS_AS(w.fabric->inject({.op = PostKind::recv, .hold = Hold::stall}), std::invalid_argument);
  REQUIRE(w.t(0).post_send(1, 0, w.local(0, 0, 8), 1) == Status::ok);
  REQUIRE(w.t(0).post_send(1, 0, w.local(0, 0, 8), 2) == Status::ok);  // queued behind the stalled one
  REQUIRE(w.t(0).post_write(1, 0, w.local(0, 0, 8), w.remote(1, 0), 3) == Status::ok);
  REQUIRE(w.t(0).post_read(1, 0, w.local(0, 0, 8), w.remote(1, 0), 4) == Status::ok);
  CHECK(drain(w.t(0)).empty());  // the write and read queue behind the stalled send too
  CHECK(w.fabric->queued() == 4);
  w.fabric->release();
  const auto got = drain(w.t(0));
  REQUIRE(got.size() == 3);  // two sends and the failed read; the dropped write never completes
  CHECK(got[0].wr_id == 1);
  CHECK(got[1].wr_id == 2);
  CHECK(got[2].wr_id == 4);
  CHECK(got[2].status == Status::error);
  CHECK_THAT(w.t(0).last_error(), Contains("read from rank 0 to rank 1 on rail 0: injected failure (fault rule 2)"));
  CHECK(w.fabric->unexpected() == 2);
}
