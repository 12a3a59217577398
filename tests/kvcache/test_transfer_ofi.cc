// The KV-cache transfer over real libfabric shm and tcp, ranks as threads: every mode,
// both protocols, 2 and 4 ranks, every block of every request verified on the decode
// side, with slots reused under concurrency.
#include <catch2/catch.hpp>

#include "collectives/kvcache/transfer.h"
#include "lib/core/errors.h"
#include "lib/transport/progress.h"
#include "tests/collectives/kvcache_cases.h"
#include "tests/support/world.h"
#include "tests/transports/ofi_world.h"

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
