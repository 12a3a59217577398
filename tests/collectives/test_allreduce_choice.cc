// The one all-reduce factory's pure parts: algorithm names, the automatic choice by
// size and shape, node-layout facts. Runs over no transport.
#include <catch2/catch.hpp>

#include "collectives/allreduce.h"
#include "lib/core/errors.h"

using namespace railbench;

TEST_CASE("auto all-reduce choice follows size and shape", "[allreduce][unit]") {
  CHECK(choose_allreduce(1024, 8, 1, true) == AllReduceAlgo::rhd);
  CHECK(choose_allreduce(64 << 20, 8, 1, true) == AllReduceAlgo::ring);
  CHECK(choose_allreduce(64 << 20, 16, 2, true) == AllReduceAlgo::hier);
  CHECK(choose_allreduce(64 << 20, 16, 2, false) == AllReduceAlgo::ring);
  // one rank per node: nothing to do inside nodes
  CHECK(choose_allreduce(64 << 20, 4, 4, true) == AllReduceAlgo::ring);
  // two ranks: rhd below the crossover, ring above, whatever the nodes
  CHECK(choose_allreduce(4 << 10, 2, 2, true) == AllReduceAlgo::rhd);
  CHECK(choose_allreduce(4 << 20, 2, 2, true) == AllReduceAlgo::ring);
}

TEST_CASE("all-reduce algorithm names round-trip and unknown ones are refused", "[allreduce][unit]") {
  for (auto a : {AllReduceAlgo::ring, AllReduceAlgo::rhd, AllReduceAlgo::hier, AllReduceAlgo::automatic})
    CHECK(parse_allreduce_algo(to_string(a)) == a);
  CHECK(std::string(to_string(AllReduceAlgo::automatic)) == "auto");
  try {
    parse_allreduce_algo("tree");
    FAIL("'tree' must be refused");
  } catch (const UsageError& e) {
    CHECK_THAT(e.what(), Catch::Contains("unknown --algo 'tree' for allreduce: use ring, rhd, hier or auto"));
  }
}

TEST_CASE("node layout counts nodes and tells uneven ones", "[allreduce][unit]") {
  CHECK(NodeLayout{{0, 0, 1, 1}}.nodes() == 2);
  CHECK(NodeLayout{{0, 0, 1, 1}}.uniform());
  CHECK_FALSE(NodeLayout{{0, 0, 1}}.uniform());
  CHECK(NodeLayout{{5, 3, 5, 3}}.nodes() == 2);
  CHECK(NodeLayout{{}}.nodes() == 0);
}
