#include <catch2/catch.hpp>

#include "lib/core/bandwidth.h"

using namespace railbench;

TEST_CASE("busbw factors are the nccl-tests ones", "[busbw]") {
  // all-reduce 2(n-1)/n
  CHECK(bus_factor(Pattern::all_reduce, 2) == Approx(1.0));
  CHECK(bus_factor(Pattern::all_reduce, 3) == Approx(4.0 / 3.0));
  CHECK(bus_factor(Pattern::all_reduce, 8) == Approx(1.75));
  // all-gather, reduce-scatter, all-to-all (n-1)/n
  for (Pattern p : {Pattern::all_gather, Pattern::reduce_scatter, Pattern::all_to_all}) {
    CHECK(bus_factor(p, 2) == Approx(0.5));
    CHECK(bus_factor(p, 3) == Approx(2.0 / 3.0));
    CHECK(bus_factor(p, 8) == Approx(0.875));
  }
  CHECK(bus_factor(Pattern::send_recv, 8) == 1.0);
  CHECK(bus_factor(Pattern::broadcast, 3) == 1.0);
}

TEST_CASE("algbw is bytes per second in units of 1e9", "[busbw]") {
  CHECK(gbps(1e9, 1.0) == Approx(1.0));
  // 64 MiB in 10 ms: 6.7108864 GB/s; busbw of an 8-rank all-reduce is 1.75x that.
  const double algbw = gbps(64.0 * 1024 * 1024, 0.010);
  CHECK(algbw == Approx(6.7108864));
  CHECK(algbw * bus_factor(Pattern::all_reduce, 8) == Approx(11.7440512));
  CHECK(gbps(100, 0) == 0);
}
