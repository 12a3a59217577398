// The KV-cache transfer over real libfabric shm and tcp, ranks as threads: every mode,
// both protocols, 2 and 4 ranks, every block of every request verified on the decode
// side, with slots reused under concurrency.
#include <catch2/catch.hpp>

#include "collectives/kvcache/transfer.h"
#include "lib/core/errors.h"
#include "lib/transport/progress.h"
#include "tests/collectives/kvcache_cases.h"
#include "tests/support/world.h"
#include "tests/transports/transport_world.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

void kvcache_case(const char* provider, int n, int rails, KvProtocol protocol, int concurrency, uint64_t tokens) {
  railbench::testing::kvcache_case(ofi_net(provider), n, rails, protocol, concurrency, tokens);
}

}  // namespace

TEST_CASE("kvcache transfer over shm: every mode, both protocols, every block verified", "[kvcache]") {
  for (KvProtocol protocol : {KvProtocol::write, KvProtocol::send}) {
    for (int n : {2, 4}) {
      DYNAMIC_SECTION(n << " ranks, protocol " << (protocol == KvProtocol::write ? "write" : "send")) {
        kvcache_case("shm", n, 1, protocol, 2, 100);  // 100 tokens: a partly filled last block
      }
    }
  }
}

TEST_CASE("kvcache transfer over tcp, 2 rails (immediate after the writes complete)", "[kvcache]") {
  for (int n : {2, 4}) {
    DYNAMIC_SECTION(n << " ranks") {
      kvcache_case("tcp", n, 2, KvProtocol::write, 2, 64);
      kvcache_case("tcp", n, 1, KvProtocol::send, 1, 33);
    }
  }
}

TEST_CASE("kvcache rejects a rank with two roles and too few rails", "[kvcache]") {
  run_ranks(2, [&](Bootstrap& b) {
    auto t = open_rank(ofi_net("shm"), b);
    Progress p(*t, 30);
    KvOptions o;
    o.shape.token_bytes = 64;
    o.shape.tokens = 16;
    o.prefill = {0};
    o.decode = {0};
    bool threw = false;
    try {
      KvTransfer transfer(p, b, o);
    } catch (const UsageError&) {
      threw = true;
    }
    expect(threw, "a rank both prefill and decode must be a usage error");
    o.decode = {1};
    o.rails = 2;
    threw = false;
    try {
      KvTransfer transfer(p, b, o);
    } catch (const UsageError&) {
      threw = true;
    }
    expect(threw, "more rails than the transport has must be a usage error");
  });
}

// Open loop: no request starts before its arrival, every one is checked, and with
// arrivals 3 ms apart (far beyond a small request's transfer) nothing waits for long;
// with all arrivals at once and one slot, later requests queue behind earlier ones.
TEST_CASE("kvcache open loop over shm and tcp: requests start at their arrival, queue when slots are busy",
          "[kvcache][serve]") {
  for (const char* provider : {"shm", "tcp"}) {
    for (KvProtocol protocol : {KvProtocol::write, KvProtocol::send}) {
      DYNAMIC_SECTION(provider << (protocol == KvProtocol::write ? " write" : " send")) {
        run_ranks_on(ofi_net(provider), 2, 1, [&](Bootstrap& b, Transport& t) {
          Progress p(t, 30);
          const KvOptions o = small_kv_options(2, 1, protocol, 1, 100);
          KvTransfer transfer(p, b, o);
          const bool prefill = b.rank() == 0;
          std::vector<double> spaced;
          for (int i = 0; i < 12; ++i) spaced.push_back(0.003 * i);
          // The records arrive through the sink, in ack order; this test keeps them.
          std::vector<KvServeRecord> recs;
          const KvRecordSink keep = [&](const KvServeRecord& rec) { recs.push_back(rec); };
          KvListSource spaced_src(spaced, 1);
          const KvRunResult r = transfer.run_open_loop(KvMode::per_block, spaced_src, true, keep);
          expect(r.wrong == 0, fmt::format("{} wrong bytes", r.wrong));
          if (prefill) {
            expect(recs.size() == 12 && r.requests == 12, "one record per request");
            for (const KvServeRecord& rec : recs) {
              expect(rec.queue_us >= 0,
                     fmt::format("request {} started {} us before its arrival", rec.id, rec.queue_us));
              expect(rec.total_us >= rec.transfer_us, "total is queue plus transfer");
            }
            // 12 arrivals 3 ms apart: the run spans at least 33 ms.
            expect(r.wall_s >= 0.033, fmt::format("the run took {} s, less than its arrivals span", r.wall_s));
            expect(
                r.rail_bytes.size() == 1 && r.rail_bytes[0] == 12 * o.shape.request_bytes(),
                fmt::format("rail 0 carried {} B, not 12 requests' bytes", r.rail_bytes.empty() ? 0 : r.rail_bytes[0]));
          }
          recs.clear();
          KvListSource burst(std::vector<double>(12, 0.0), 1);
          const KvRunResult q = transfer.run_open_loop(KvMode::per_block, burst, false, keep);
          if (prefill) {
            // One slot: request i waits for the i before it, so the last queued longest.
            expect(recs.size() == 12, "one record per request of the burst");
            expect(recs.back().id == 11 && recs.back().queue_us > recs.front().queue_us,
                   "the last of a burst must queue behind the first");
            expect(recs.back().queue_us >= recs.front().transfer_us, "queueing covers at least one transfer");
          }
          (void)q;
          b.barrier();
        });
      }
    }
  }
}
