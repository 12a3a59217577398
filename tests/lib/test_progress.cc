// Progress over the in-memory loopback, every rank driven from the test's thread so
// each fault lands exactly where the test puts it: retry, slot reuse, deadlines that
// name the peer, abandoned peers, failed completions.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "lib/core/errors.h"
#include "lib/transport/progress.h"
#include "tests/support/loopback_world.h"

using namespace railbench;
using Catch::Matchers::Contains;
using railbench::testing::Fault;
using railbench::testing::Hold;
using railbench::testing::LoopbackOptions;
using railbench::testing::LoopbackWorld;
using railbench::testing::PostKind;

namespace {

const std::vector<std::string> kThreeRanks = {"rank 0 (node-a)", "rank 1 (node-b)", "rank 2 (node-c)"};

// The message of the railbench::Error `fn` throws, checked to be of type E.
template <class E, class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("no error of the expected type was thrown");
  return {};
}

void fill(std::byte* p, size_t n, int seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>((i * 31 + static_cast<size_t>(seed)) & 0xff);
}

}  // namespace

TEST_CASE("Progress posts again after Status::retry and keeps completions reaped meanwhile", "[progress]") {
  LoopbackWorld w(2);
  const size_t rule =
      w.fabric->inject({.op = PostKind::write, .rank = 0, .nth = 2, .fault = Fault::retry, .retries = 5});
  Progress p(w.t(0), 5);
  fill(w.at(0, 0), 128, 1);
  const uint64_t first = p.write(1, 0, w.local(0, 0, 64), w.remote(1, 0));
  CHECK_FALSE(p.done(first));  // its completion waits in the transport until someone polls
  const uint64_t second = p.write(1, 0, w.local(0, 64, 64), w.remote(1, 64));
  CHECK(w.fabric->fired(rule) == 1);
  CHECK(w.fabric->retries_answered() == 5);
  // Polled while getting past retry: the first write's completion must have been kept.
  CHECK(p.done(first));
  CHECK(second == first + 1);
  p.wait(second, "the retried write");
  CHECK(p.outstanding() == 0);
  CHECK(std::memcmp(w.at(0, 0), w.at(1, 0), 128) == 0);
}

TEST_CASE("Progress stops posting at its deadline when the transport keeps answering retry", "[progress]") {
  LoopbackWorld w(2);
  w.fabric->inject({.op = PostKind::send, .rank = 0, .fault = Fault::retry, .retries = 1 << 30});
  Progress p(w.t(0), 0.05, kThreeRanks);
  const std::string what = error_of<TimeoutError>([&] { p.send(1, 0, w.local(0, 0, 8)); });
  CHECK_THAT(what, Contains("could not post send to rank 1 (node-b)"));
  CHECK_THAT(what, Contains("out of resources"));
}

TEST_CASE("Progress reuses slots past 65,536 operations without mixing up completions", "[progress]") {
  LoopbackWorld w(2);
  Progress p0(w.t(0), 5), p1(w.t(1), 5);
  constexpr uint64_t kOps = (uint64_t{1} << 16) + 1000;
  uint64_t wrong_bytes = 0, wrong_data = 0, last_recv = 0;
  const uint64_t first_send = p0.send(1, 0, w.local(0, 0, 1));
  p1.wait(p1.recv(0, 0, w.local(1, 0, 64)), "the first message");
  for (uint64_t i = 1; i < kOps; ++i) {
    const size_t len = 1 + i % 61;  // each receive's size tells it apart from its slot's previous user
    *w.at(0, 0) = static_cast<std::byte>(i & 0xff);
    last_recv = p1.recv(0, 0, w.local(1, 0, 64));
    const uint64_t s = p0.send(1, 0, w.local(0, 0, len));
    p0.wait(s, "a send");
    p1.wait(last_recv, "a receive");
    wrong_bytes += p1.bytes(last_recv) != len;
    wrong_data += *w.at(1, 0) != static_cast<std::byte>(i & 0xff);
  }
  CHECK(last_recv > (uint64_t{1} << 16));  // ids went round the slot table
  CHECK(wrong_bytes == 0);
  CHECK(wrong_data == 0);
  CHECK(p0.done(first_send));
  CHECK(p0.outstanding() == 0);
  CHECK(p1.outstanding() == 0);
  CHECK(w.fabric->unexpected() == 0);
}

TEST_CASE("Progress waits for a slot's previous operation before reusing the slot", "[progress]") {
  LoopbackWorld w(3);
  w.fabric->inject({.op = PostKind::write, .rank = 0, .peer = 2, .nth = 1, .hold = Hold::stall});
  Progress p(w.t(0), 0.1, kThreeRanks);
  fill(w.at(0, 0), 8, 7);
  const uint64_t first = p.write(2, 0, w.local(0, 0, 8), w.remote(2, 0));
  for (uint64_t i = 1; i < (uint64_t{1} << 16); ++i) p.write(1, 0, w.local(0, 8, 8), w.remote(1, 8));
  // The next operation takes the first one's slot, which is still in flight.
  const std::string what = error_of<TimeoutError>([&] { p.write(1, 0, w.local(0, 8, 8), w.remote(1, 8)); });
  CHECK_THAT(what, Contains("waiting for a free operation slot from rank 2 (node-c) (1 write outstanding)"));
  CHECK(std::memcmp(w.at(0, 0), w.at(2, 0), 8) != 0);
  w.fabric->release();
  const uint64_t next = p.write(1, 0, w.local(0, 8, 8), w.remote(1, 8));
  CHECK(p.done(first));
  CHECK(next == first + (uint64_t{1} << 16));
  p.wait_all("everything");
  CHECK(p.outstanding() == 0);
  CHECK(std::memcmp(w.at(0, 0), w.at(2, 0), 8) == 0);
}

TEST_CASE("A wait past its deadline names the peer that never completed and what it owes", "[progress]") {
  LoopbackWorld w(3);
  w.fabric->inject({.op = PostKind::write, .rank = 0, .peer = 2, .hold = Hold::stall});
  Progress p(w.t(0), 0.1, kThreeRanks);
  p.write(1, 0, w.local(0, 0, 8), w.remote(1, 0));
  const uint64_t stuck = p.write(2, 0, w.local(0, 0, 8), w.remote(2, 0));
  std::string what = error_of<TimeoutError>([&] { p.wait_all("the writes"); });
  CHECK_THAT(what, Contains("waiting for the writes from rank 2 (node-c) (1 write outstanding)"));
  CHECK_THAT(what, !Contains("node-b"));
  what = error_of<TimeoutError>([&] { p.wait(stuck, "the stuck write"); });
  CHECK_THAT(what, Contains("rank 2 (node-c)"));
  // Nothing outstanding: the peer the caller expected is named.
  w.fabric->release();
  p.wait_all("the released write");
  what = error_of<TimeoutError>([&] { p.wait_imm(1, "a notification"); });
  CHECK_THAT(what, Contains("waiting for a notification from rank 1 (node-b)"));
}

TEST_CASE("abandon_peer: late completions, failed ones too, are ignored and wait_all returns", "[progress]") {
  LoopbackWorld w(3);
  w.fabric->inject({.op = PostKind::write, .rank = 0, .peer = 1, .nth = 1, .fault = Fault::fail, .hold = Hold::stall});
  Progress p(w.t(0), 0.1, kThreeRanks);
  const uint64_t failing = p.write(1, 0, w.local(0, 0, 8), w.remote(1, 0));
  const uint64_t behind = p.write(1, 0, w.local(0, 0, 8), w.remote(1, 8));  // queued behind it on the wire
  p.write(2, 0, w.local(0, 0, 8), w.remote(2, 0));
  CHECK_THROWS_AS(p.wait_all("the writes"), TimeoutError);
  p.abandon_peer(1);
  CHECK(p.abandoned(1));
  CHECK(p.outstanding() == 0);
  CHECK(p.done(failing));
  CHECK(p.done(behind));
  // The late completions arrive now, and so does a notification from the abandoned peer.
  w.fabric->release();
  REQUIRE(w.t(1).post_write_imm(0, 0, w.local(1, 0, 8), w.remote(0, 0), 7, 1) == Status::ok);
  REQUIRE(w.t(2).post_write_imm(0, 0, w.local(2, 0, 8), w.remote(0, 8), 9, 1) == Status::ok);
  size_t reaped = 0;
  CHECK_NOTHROW(reaped = p.poll_once());
  CHECK(reaped == 4);  // both notifications, the failed write and the one behind it
  CHECK_NOTHROW(p.wait_all("nothing"));
  CHECK(p.wait_imm(-1, "rank 2's notification") == 9);
  // Rank 2 is still served.
  p.wait(p.write(2, 0, w.local(0, 0, 8), w.remote(2, 16)), "a write after the abandon");
  CHECK(p.outstanding() == 0);
}

TEST_CASE("A failed completion surfaces as a TransportError carrying last_error()", "[progress]") {
  LoopbackWorld w(2);
  w.fabric->inject({.op = PostKind::send, .rank = 0, .nth = 2, .fault = Fault::fail});
  w.fabric->inject({.op = PostKind::write, .rank = 0, .nth = 1, .fault = Fault::reject});
  Progress p(w.t(0), 5, kThreeRanks);
  p.wait(p.send(1, 0, w.local(0, 0, 8)), "the first send");
  const uint64_t failing = p.send(1, 0, w.local(0, 0, 8));
  std::string what = error_of<TransportError>([&] { p.wait(failing, "the second send"); });
  CHECK_THAT(what, Contains("send with rank 1 (node-b) on rail 0 failed: "));
  CHECK_THAT(what, Contains(w.t(0).last_error()));
  CHECK_THAT(what, Contains("injected failure (fault rule 0)"));
  CHECK(w.fabric->unexpected() == 1);  // only the first send reached rank 1
  // Refused at post time: the reason comes from last_error() too.
  what = error_of<TransportError>([&] { p.write(1, 0, w.local(0, 0, 8), w.remote(1, 0)); });
  CHECK_THAT(what, Contains("posting write to rank 1 (node-b) failed: write to rank 1 on rail 0: injected rejection"));
  // A remote access error (out of the target's region) comes back the same way.
  const uint64_t wild = p.write(1, 0, w.local(0, 0, 8), w.remote(1, 4096 - 4));
  what = error_of<TransportError>([&] { p.wait(wild, "the write past the end"); });
  CHECK_THAT(what, Contains("write with rank 1 (node-b) on rail 0 failed"));
  CHECK_THAT(what, Contains("outside rank 1's region"));
}

// ---- failures in the middle of a batch, and posts to a peer given up on ----

TEST_CASE("a failed completion does not lose the healthy completions polled with it", "[progress]") {
  // Were the rest of the failed completion's batch dropped, a caller that abandons the
  // failed peer and goes on (validate does) would wait for an operation that finished
  // long ago, and the timeout would blame a healthy peer.
  LoopbackWorld w(3);
  w.fabric->inject({.op = PostKind::write, .rank = 0, .peer = 1, .nth = 1, .fault = Fault::fail});
  Progress p(w.t(0), 0.2, kThreeRanks);
  p.write(1, 0, w.local(0, 0, 8), w.remote(1, 0));
  const uint64_t healthy = p.write(2, 0, w.local(0, 0, 8), w.remote(2, 0));
  CHECK_THROWS_AS(p.wait_all("both writes"), TransportError);
  p.abandon_peer(1);
  CHECK_NOTHROW(p.wait(healthy, "the write to the healthy rank 2"));
}

TEST_CASE("an operation posted to an abandoned peer does not stay outstanding forever", "[progress]") {
  // Its completion would be ignored like any late one, outstanding() would never drop
  // back and every later wait_all would time out: Progress refuses the post instead.
  LoopbackWorld w(2);
  Progress p(w.t(0), 0.2, kThreeRanks);
  p.abandon_peer(1);
  CHECK_THROWS_AS(p.write(1, 0, w.local(0, 0, 8), w.remote(1, 0)), TransportError);
  CHECK_NOTHROW(p.wait_all("nothing"));
}

TEST_CASE("wait_for sees a peer's write land in memory, and its deadline names the writer", "[progress]") {
  LoopbackWorld w(2);
  Progress p0(w.t(0), 0.1, kThreeRanks), p1(w.t(1), 0.1, kThreeRanks);
  auto* last = reinterpret_cast<volatile uint8_t*>(w.at(1, 7));
  *last = 0;
  std::memset(w.at(0, 0), 0x5a, 8);
  p0.write(1, 0, w.local(0, 0, 8), w.remote(1, 0));
  // The target polls memory only; its wait drives both ends' progress as a ping-pong's
  // would (the loopback moves data inside poll).
  p1.wait_for(
      [&] {
        p0.poll_once();
        return *last == 0x5a;
      },
      0, "the write's last byte");
  CHECK(std::memcmp(w.at(1, 0), w.at(0, 0), 8) == 0);
  p0.wait_all("the write's completion");
  *last = 0;
  const std::string what = error_of<TimeoutError>([&] { p1.wait_for([&] { return *last != 0; }, 0, "a reply"); });
  CHECK_THAT(what, Contains("waiting for a reply from rank 0 (node-a)"));
}

namespace {
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

TEST_CASE("On a CPU-driven NIC a long wait sleeps, leaving the cores to the transfer", "[progress]") {
  LoopbackWorld w(2, LoopbackOptions{.cpu_driven_nic = true});  // as verbs over rxe reports it
  w.fabric->inject(
      {.op = PostKind::write, .rank = 0, .peer = 1, .hold = Hold::delay, .delay = std::chrono::milliseconds(200)});
  Progress p(w.t(0), 5, kThreeRanks);
  // The delay runs from the post: timed from after it, a slow post (a loaded host, a
  // sanitizer build) would make the wait look shorter than the 200 ms it is.
  const auto t0 = Clock::now();
  const uint64_t id = p.write(1, 0, w.local(0, 0, 8), w.remote(1, 0));
  const double cpu0 = thread_cpu_s();
  p.wait(id, "the delayed write");
  const double wall = seconds_between(t0, Clock::now()), cpu = thread_cpu_s() - cpu0;
  INFO("waited " << wall << " s, on the CPU " << cpu << " s");
  CHECK(wall >= 0.19);
  // A spinning (or yielding) wait is on the CPU the whole time; napping, a few percent.
  CHECK(cpu < 0.3 * wall);
}
