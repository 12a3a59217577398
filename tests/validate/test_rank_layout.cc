// Ranks to (node, slot) of the SU: by host name, slots from the launcher's local ranks.
#include <catch2/catch.hpp>

#include "bench/commands/validate/rank_layout.h"
#include "lib/core/errors.h"

using namespace railbench;

namespace {

SuConfig two_by_two() {
  SuConfig c;
  c.nodes = {"n1", "n2"};
  c.gpus_per_node = 2;
  return c;
}

}  // namespace

TEST_CASE("rank layout: rank order gives the slots without launcher local ranks", "[rank_layout]") {
  auto L = map_ranks(two_by_two(), {"n1", "n1", "n2", "n2"});
  CHECK(L.node_names == std::vector<std::string>{"n1", "n2"});
  CHECK(L.slot_of == std::vector<int>{0, 1, 0, 1});
  CHECK(L.node_of == std::vector<int>{0, 0, 1, 1});
}

TEST_CASE("rank layout: a cyclic launch takes its slots from the launcher", "[rank_layout]") {
  // srun -m cyclic: ranks 0,2 on n1 and 1,3 on n2; here n1's local ranks are reversed.
  auto L = map_ranks(two_by_two(), {"n1", "n2", "n1", "n2"}, {1, 0, 0, 1});
  CHECK(L.node_of == std::vector<int>{0, 1, 0, 1});
  CHECK(L.slot_of == std::vector<int>{1, 0, 0, 1});
  CHECK(L.rank_of[0] == std::vector<int>{2, 0});
  // Local ranks that are not 0..G-1 on a node are ignored there (rank order instead).
  L = map_ranks(two_by_two(), {"n1", "n1", "n2", "n2"}, {0, 0, 1, 0});
  CHECK(L.slot_of == std::vector<int>{0, 1, 1, 0});
  L = map_ranks(two_by_two(), {"n1", "n1", "n2", "n2"}, {-1, -1, -1, -1});
  CHECK(L.slot_of == std::vector<int>{0, 1, 0, 1});
}

TEST_CASE("rank layout: domains are dropped, addresses kept whole", "[rank_layout]") {
  auto L = map_ranks(two_by_two(), {"n1.cluster", "n1.cluster", "n2", "n2"});
  CHECK(L.node_names == std::vector<std::string>{"n1", "n2"});
  SuConfig c = two_by_two();
  c.nodes = {"127.0.0.1", "127.0.0.2"};
  L = map_ranks(c, {"127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2"});
  CHECK(L.node_names == c.nodes);
}

TEST_CASE("rank layout: wrong launches are named", "[rank_layout]") {
  CHECK_THROWS_WITH(map_ranks(two_by_two(), {"n1", "n1", "n3", "n3"}), Catch::Contains("n3"));
  CHECK_THROWS_WITH(map_ranks(two_by_two(), {"n1", "n1", "n1", "n2"}), Catch::Contains("GPUs per node"));
}
