// The ECMP sweep's fluid model (bench/commands/validate/fabric/ecmp_model.h): max-min
// fair rates by progressive filling, and the time until the last flow finishes as
// flows end and the rest share again.
#include <catch2/catch.hpp>

#include "bench/commands/validate/fabric/ecmp_model.h"

using namespace railbench;

TEST_CASE("ecmp model: max-min fair rates, the textbook case", "[validate][fabric]") {
  // A crosses r0, B crosses r0 and r1, C crosses r1; r0 carries 1, r1 carries 2: A and B
  // share r0 (0.5 each), C takes what B leaves of r1 (1.5).
  const std::vector<FluidFlow> flows{{{0}, 1}, {{0, 1}, 1}, {{1}, 1}};
  const auto rates = max_min_rates(flows, {1, 2});
  CHECK(rates[0] == Approx(0.5));
  CHECK(rates[1] == Approx(0.5));
  CHECK(rates[2] == Approx(1.5));
}

TEST_CASE("ecmp model: flows that share a link finish later, and the rest speed up as flows end",
          "[validate][fabric]") {
  // Two flows of 10 bytes on one link of 1 B/s: 20 s. Alone: 10 s.
  CHECK(fluid_completion_s({{{0}, 10}, {{0}, 10}}, {1}) == Approx(20));
  CHECK(fluid_completion_s({{{0}, 10}}, {1}) == Approx(10));
  // 5 and 15 bytes sharing: both at 0.5 until the first ends at 10 s (5 bytes each),
  // then the second alone at 1 B/s for its last 10: 20 s.
  CHECK(fluid_completion_s({{{0}, 5}, {{0}, 15}}, {1}) == Approx(20));
  // Four flows over four uplinks, one each, against all four on one uplink: the hash's
  // collision costs 4x.
  const std::vector<double> caps{1, 1, 1, 1};
  CHECK(fluid_completion_s({{{0}, 1}, {{1}, 1}, {{2}, 1}, {{3}, 1}}, caps) == Approx(1));
  CHECK(fluid_completion_s({{{0}, 1}, {{0}, 1}, {{0}, 1}, {{0}, 1}}, caps) == Approx(4));
}

TEST_CASE("ecmp model: a flow that could never finish is left out", "[validate][fabric]") {
  // No resource, a resource of capacity 0, one out of range: none counts.
  CHECK(fluid_completion_s({{{}, 10}, {{1}, 10}, {{7}, 10}}, {1, 0}) == 0);
  CHECK(fluid_completion_s({{{}, 10}, {{0}, 10}}, {2}) == Approx(5));
  const auto rates = max_min_rates({{{1}, 10}, {{0}, 10}}, {1, 0});
  CHECK(rates[0] == 0);
  CHECK(rates[1] == Approx(1));
}
