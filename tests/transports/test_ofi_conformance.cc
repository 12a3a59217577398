// What only libfabric's transport answers: its refusals name the providers and domains
// that exist; and teardown with a receive posted, over tcp (freed_region_check.h). The
// Transport contract over its providers is tests/transports/conformance_cases.cc.
#include <catch2/catch.hpp>

#include "tests/support/world.h"
#include "tests/transports/freed_region_check.h"
#include "tests/transports/transport_world.h"
#include "transports/ofi/ofi_transport.h"

using namespace railbench;
using namespace railbench::testing;

TEST_CASE("ofi: a region freed with a receive still posted is never written", "[ofi][robustness]") {
  run_ranks(2, [&](Bootstrap& b) { expect_freed_region_never_written(open_rank(ofi_net("tcp"), b), b); });
}

TEST_CASE("ofi: an unknown provider or domain lists what exists", "[ofi]") {
  ofi::OfiOptions o;
  o.provider = "no-such-provider";
  CHECK_THROWS_WITH(ofi::make_transport(o, 0, 1),
                    Catch::Contains("no-such-provider") && Catch::Contains("tcp") && Catch::Contains("shm"));
  o.provider = "tcp";
  o.domains = {"nosuchif0"};
  CHECK_THROWS_WITH(ofi::make_transport(o, 0, 1), Catch::Contains("nosuchif0") && Catch::Contains("lo"));
}
