// compare keeps of a validate file's rail_pairs only the records that bound a link's
// band (ValidatePairKeeper): the figures must be exactly those of every record.
#include <catch2/catch.hpp>

#include <random>

#include <fmt/format.h>

#include "bench/offline/compare/figures.h"

using namespace railbench::compare;
using nlohmann::json;

namespace {

// A validate document of `nodes` x `rails` with every pair test, figures seeded noise,
// some failed and some cross-rail (which no link figure reads).
json validate_doc(int nodes, int rails) {
  std::mt19937 rng(7);
  // The links' own figures close together (a narrow rail spread), their pairs' wider.
  std::uniform_real_distribution<double> bw(40, 50), lat(2.5, 4.5), link_bw(44.9, 45.1), link_lat(3.0, 3.05);
  json doc{{"command", "validate"}, {"rails", json::array()}, {"rail_pairs", json::array()}};
  for (int r = 0; r < rails; ++r) {
    json links = json::array();
    for (int n = 0; n < nodes; ++n)
      links.push_back({{"node", fmt::format("gpu{:03}", n + 1)},
                       {"pairs", nodes - 1},
                       {"failed", 0},
                       {"tx_gbs", link_bw(rng)},
                       {"rx_gbs", link_bw(rng)},
                       {"lat_p50_us", link_lat(rng)},
                       {"lat_p99_us", link_lat(rng)}});
    doc["rails"].push_back({{"rail", r}, {"links", links}});
    for (int a = 0; a < nodes; ++a)
      for (int b = a + 1; b < nodes; ++b) {
        const bool ok = (a * 31 + b * 7 + r) % 11 != 0;
        const bool cross = (a + b + r) % 13 == 0;
        doc["rail_pairs"].push_back({{"phase", cross ? "cross" : "rail"},
                                     {"node_a", a},
                                     {"node_b", b},
                                     {"rail_a", r},
                                     {"rail_b", r},
                                     {"ok", ok},
                                     {"bw_ab", ok ? bw(rng) : 0.0},
                                     {"bw_ba", ok ? bw(rng) : 0.0},
                                     {"lat_p50", ok ? lat(rng) : 0.0},
                                     {"lat_p99", ok ? lat(rng) : 0.0}});
      }
  }
  return doc;
}

}  // namespace

TEST_CASE("compare's kept pair records give the same validate figures as all of them") {
  const json all = validate_doc(24, 3);
  ValidatePairKeeper keeper;
  for (const auto& p : all["rail_pairs"]) keeper.add(p);
  json lean = all;
  lean["rail_pairs"] = keeper.kept();
  CHECK(lean["rail_pairs"].size() <= 24 * 3 * 8);
  CHECK(lean["rail_pairs"].size() < all["rail_pairs"].size() / 2);
  std::vector<Figure> want, got;
  validate_figures(all, kDefaultNoiseK, want);
  validate_figures(lean, kDefaultNoiseK, got);
  REQUIRE(want.size() == got.size());
  REQUIRE(want.size() == 24 * 3 * 4);
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(want[i].key() == got[i].key());
    CHECK(want[i].value == got[i].value);
    CHECK(want[i].lo == got[i].lo);
    CHECK(want[i].hi == got[i].hi);
  }
  // The bands do reach past the rail's spread: the pairs are what set them.
  size_t by_pairs = 0;
  for (const auto& f : want) by_pairs += f.lo < f.value - 1e-9 ? 1 : 0;
  CHECK(by_pairs > 0);
}
