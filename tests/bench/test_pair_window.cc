// Send windows larger than the transport's queues (sendrecv's --window is the user's, the
// queue depth is the provider's, so any window must run): the loopback's
// receive queue holds max_outstanding receives, as a provider's does, and a window of
// many times that must run in chunks instead of waiting for its deadline.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "bench/runner/pair_test.h"
#include "lib/runtime/bootstrap.h"
#include "lib/transport/progress.h"
#include "tests/support/loopback_transport.h"
#include "tests/support/net.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

// Both ranks stream and exchange `window` messages of 64 bytes with `verb`.
void run_windows(Verb verb, int window) {
  LoopbackOptions options;
  options.max_outstanding = 16;
  run_ranks_on(
      loopback_net(options), 2, 1,
      [&](Bootstrap& b, Transport& t) {
        std::vector<std::byte> src(64), dst(64), tokens(16);
        auto src_mr = t.register_memory(src.data(), src.size(), MemoryKind::host);
        auto dst_mr = t.register_memory(dst.data(), dst.size(), MemoryKind::host);
        auto tok_mr = t.register_memory(tokens.data(), tokens.size(), MemoryKind::host);
        PairBuffers buffers{src_mr.get(), dst_mr.get(), tok_mr.get(), {}, {}};
        for (const auto& blob : b.all_gather_v(src_mr->remote_key().serialize()))
          buffers.peer_src.push_back(RemoteKey::deserialize(blob));
        for (const auto& blob : b.all_gather_v(dst_mr->remote_key().serialize()))
          buffers.peer_dst.push_back(RemoteKey::deserialize(blob));
        // A window that stalled would hit this deadline and throw.
        Progress progress(t, 2.0);
        PairTest test(progress, buffers, verb, false);
        const int peer = 1 - b.rank();
        uint64_t wrong = 0;
        for (int from : {0, 1}) {
          const auto gbps = test.stream(peer, 0, 64, window, 1, 2, from, 7, &wrong);
          const bool initiator = (verb == Verb::read) ? from != b.rank() : from == b.rank();
          expect(gbps.size() == (initiator ? 2u : 0u), "stream: one sample per timed window on the initiator");
        }
        expect(test.bidirectional(peer, 0, 64, window, 1, 2).size() == 2, "bidirectional: one sample per window");
        expect(progress.outstanding() == 0, "nothing left outstanding");
      },
      10);
}

}  // namespace

TEST_CASE("sendrecv: a send window of many times the receive queue runs in chunks", "[pair][robustness]") {
  run_windows(Verb::send, 100);
  run_windows(Verb::send, 17);  // one more than the queue: a chunk and a remainder
  run_windows(Verb::send, 1);
}

TEST_CASE("sendrecv: one-sided windows beyond the queue depth still complete", "[pair][robustness]") {
  run_windows(Verb::write, 100);
  run_windows(Verb::read, 100);
}
