// The real transports a test binary runs its conformance and collective cases over, as
// Nets (tests/support/net.h), and the one list of them, nets_under_test(), as gloo's tests
// take the transport from one list. A test binary is built for one transport: its target
// defines RAILBENCH_TEST_TRANSPORT_OFI, _UCX or _VERBS (tests/transports/CMakeLists.txt),
// which also names its cases (RAILBENCH_TEST_PREFIX). tcp is pinned to the loopback
// interface so test traffic never leaves the machine; shm and verbs need nothing.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/runtime/bootstrap.h"
#include "lib/transport/transport.h"
#include "tests/support/net.h"

#if defined(RAILBENCH_TEST_TRANSPORT_OFI)
#include "transports/ofi/ofi_transport.h"
#define RAILBENCH_TEST_PREFIX "ofi: "
#elif defined(RAILBENCH_TEST_TRANSPORT_UCX)
#include "transports/ucx/ucx_transport.h"
#define RAILBENCH_TEST_PREFIX "ucx: "
#elif defined(RAILBENCH_TEST_TRANSPORT_VERBS)
#include "transports/verbs/verbs_transport.h"
#define RAILBENCH_TEST_PREFIX "verbs: "
#else
#error "a transport test binary defines RAILBENCH_TEST_TRANSPORT_OFI, _UCX or _VERBS"
#endif

namespace railbench::testing {

// Makes one rank's transport: (rank, world size, rails).
using MakeTransport = std::function<std::unique_ptr<Transport>(int, int, int)>;

// A Net whose ranks each make their transport and connect it to every peer.
inline Net connected_net(std::string name, MakeTransport make) {
  return Net{std::move(name), [make](int, int rails) -> OpenRank {
               return [make, rails](Bootstrap& b) {
                 auto t = make(b.rank(), b.size(), rails);
                 t->connect_all(b);
                 return t;
               };
             }};
}

// The rails' devices for `variant`: "lo" for each of tcp's, so test traffic never leaves
// the machine; none for the others (the transport picks).
inline std::vector<std::string> lo_for_tcp(const std::string& variant, int rails) {
  return variant == "tcp" ? std::vector<std::string>(static_cast<size_t>(rails), "lo") : std::vector<std::string>{};
}

#if defined(RAILBENCH_TEST_TRANSPORT_OFI)
inline Net ofi_net(const std::string& provider) {
  return connected_net(provider, [provider](int rank, int size, int rails) {
    return ofi::make_transport(
        ofi::OfiOptions{.provider = provider, .domains = lo_for_tcp(provider, rails), .num_rails = rails}, rank, size);
  });
}
#endif

#if defined(RAILBENCH_TEST_TRANSPORT_UCX)
// `tls` is UCX_TLS.
inline Net ucx_net(const std::string& tls) {
  return connected_net(tls, [tls](int rank, int size, int rails) {
    return ucx::make_transport(ucx::UcxOptions{.tls = tls, .devices = lo_for_tcp(tls, rails), .num_rails = rails}, rank,
                               size);
  });
}
#endif

#if defined(RAILBENCH_TEST_TRANSPORT_VERBS)
// The first `rails` active ports (the soft-RoCE VM has rxe0 and rxe1).
inline Net verbs_net(int qps_per_peer) {
  return connected_net(
      fmt::format("rxe, {} QP(s) per peer", qps_per_peer), [qps_per_peer](int rank, int size, int rails) {
        return verbs::make_transport(verbs::VerbsOptions{.num_rails = rails, .qps_per_peer = qps_per_peer}, rank, size);
      });
}
#endif

// Every variant of this binary's transport; each conformance and collective case runs over
// each, and skips an operation only by what caps() says. verbs with several QPs per peer
// has unordered writes, so the waits before a notification are taken there.
inline const std::vector<Net>& nets_under_test() {
  static const std::vector<Net> nets = {
#if defined(RAILBENCH_TEST_TRANSPORT_OFI)
    ofi_net("tcp"),
    ofi_net("shm"),
#elif defined(RAILBENCH_TEST_TRANSPORT_UCX)
    ucx_net("tcp"),
    ucx_net("shm"),
#elif defined(RAILBENCH_TEST_TRANSPORT_VERBS)
    verbs_net(1),
    verbs_net(4),
#endif
  };
  return nets;
}

// One rank's connected transport over `net`, for a test that opens it inside run_ranks
// and must own it (close it early, outlive it). Each rank calls net.world() itself: right
// for the nets above, which share nothing between ranks; a Net whose world() builds a
// shared fabric (the loopback one) goes through run_ranks_on (tests/support/net.h).
inline std::unique_ptr<Transport> open_rank(const Net& net, Bootstrap& b, int rails = 1) {
  return net.world(b.size(), rails)(b);
}

}  // namespace railbench::testing
