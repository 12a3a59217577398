// The KV-cache transfer over real libfabric shm and tcp, ranks as threads: every mode,
// both protocols, 2 and 4 ranks, every block of every request verified on the decode
// side, with slots reused under concurrency.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "collectives/kvcache/transfer.h"
#include "lib/progress.h"
#include "tests/transports/ofi_world.h"
#include "tests/transports/world.h"

using namespace railbench;
using railbench::testing::expect;
using railbench::testing::open_ofi;
using railbench::testing::run_ranks;

namespace {

void kvcache_case(const char* provider, int n, int rails, KvProtocol protocol, int concurrency, uint64_t tokens) {
  run_ranks(n, [&](Bootstrap& b) {
    auto t = open_ofi(provider, b, rails);
    Progress p(*t, 30);
    KvOptions o;
    o.shape.layers = 3;
    o.shape.planes = 2;
    o.shape.token_bytes = 256;
    o.shape.tokens = tokens;
    o.shape.block_tokens = 16;
    for (int r = 0; r < n; ++r) (r < n / 2 ? o.prefill : o.decode).push_back(r);
    o.concurrency = concurrency;
    o.alloc_run = 2;
    o.rails = rails;
    o.protocol = protocol;
    KvTransfer transfer(p, b, o);
    const bool prefill = b.rank() < n / 2;
    for (KvMode mode : {KvMode::per_block, KvMode::coalesced, KvMode::staged, KvMode::contiguous}) {
      const std::string what =
          fmt::format("{} n={} rails={} {} C={} {} tokens, {}, rank {}", provider, n, rails,
                      protocol == KvProtocol::write ? "write" : "send", concurrency, tokens, to_string(mode), b.rank());
      const KvRunResult checked = transfer.run(mode, 1, 2 * concurrency + 1, true);
      expect(checked.wrong == 0, fmt::format("{}: {} wrong bytes", what, checked.wrong));
      const KvRunResult timed = transfer.run(mode, 0, 3, false);
      expect(prefill ? timed.request_us.size() == 3 : timed.request_us.empty(),
             fmt::format("{}: {} request times", what, timed.request_us.size()));
      for (double us : timed.request_us) expect(us > 0, fmt::format("{}: a request took {} us", what, us));
      const uint64_t want = mode == KvMode::per_block ? o.shape.units() : 0;
      if (want) expect(timed.ops_per_request == want, fmt::format("{}: {} writes", what, timed.ops_per_request));
    }
    b.barrier();
  });
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
    auto t = open_ofi("shm", b, 1);
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
