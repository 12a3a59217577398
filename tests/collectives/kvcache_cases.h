// The KV-cache transfer test body, run over any Net: every mode, every block of every
// request verified on the decode side, with slots reused under concurrency.
#pragma once

#include <string>

#include <fmt/format.h>

#include "collectives/kvcache/transfer.h"
#include "lib/transport/progress.h"
#include "tests/support/net.h"

namespace railbench::testing {

// A small model: 3 layers, K and V planes, 256-byte tokens, 16-token blocks.
inline KvOptions small_kv_options(int n, int rails, KvProtocol protocol, int concurrency, uint64_t tokens) {
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
  return o;
}

// One rank's part: every mode, checked then timed. `what` prefixes failure messages.
inline void kvcache_modes(Progress& p, Bootstrap& b, const KvOptions& o, const std::string& what) {
  KvTransfer transfer(p, b, o);
  const bool prefill = b.rank() < static_cast<int>(o.prefill.size());
  for (KvMode mode : {KvMode::per_block, KvMode::coalesced, KvMode::staged, KvMode::contiguous}) {
    const std::string here = fmt::format("{}, {}, rank {}", what, to_string(mode), b.rank());
    const KvRunResult checked = transfer.run(mode, 1, 2 * o.concurrency + 1, true);
    expect(checked.wrong == 0, fmt::format("{}: {} wrong bytes", here, checked.wrong));
    const KvRunResult timed = transfer.run(mode, 0, 3, false);
    expect(prefill ? timed.request_us.size() == 3 : timed.request_us.empty(),
           fmt::format("{}: {} request times", here, timed.request_us.size()));
    for (double us : timed.request_us) expect(us > 0, fmt::format("{}: a request took {} us", here, us));
    const uint64_t want = mode == KvMode::per_block ? o.shape.units() : 0;
    if (want) expect(timed.ops_per_request == want, fmt::format("{}: {} writes", here, timed.ops_per_request));
  }
}

inline void kvcache_case(const Net& net, int n, int rails, KvProtocol protocol, int concurrency, uint64_t tokens) {
  run_ranks_on(net, n, rails, [&](Bootstrap& b, Transport& t) {
    Progress p(t, 30);
    const KvOptions o = small_kv_options(n, rails, protocol, concurrency, tokens);
    kvcache_modes(p, b, o,
                  fmt::format("{} n={} rails={} {} C={} {} tokens", net.name, n, rails,
                              protocol == KvProtocol::write ? "write" : "send", concurrency, tokens));
    b.barrier();
  });
}

}  // namespace railbench::testing
