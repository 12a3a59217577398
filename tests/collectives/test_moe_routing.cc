// MoE token routing: the same matrix on every rank without communication, K distinct
// experts per token, zipf's skew in popularity order, weights from a file, and a
// one-line error naming the field for every bad spec.
#include <algorithm>
#include <functional>
#include <numeric>

#include <catch2/catch.hpp>

#include "collectives/moe_routing.h"
#include "lib/core/errors.h"
#include "tests/support/temp_tree.h"
#include "tests/support/world.h"

using namespace railbench;
using namespace railbench::testing;

namespace {

MoeRoutingOptions opts(const std::string& spec, int experts, int topk, size_t tokens, uint64_t seed = 1,
                       uint64_t step = 0) {
  return MoeRoutingOptions{parse_routing(spec), experts, topk, tokens, seed, step};
}

uint64_t digest(const MoeRouting& r) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t v : r.tokens) h = (h ^ v) * 1099511628211ULL;
  for (size_t v : r.expert_load) h = (h ^ v) * 1099511628211ULL;
  return h;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("routing: every rank computes the same matrix, and it changes per step", "[unit][moe]") {
  run_ranks(4, [](Bootstrap& b) {
    const auto o = opts("zipf:1.2", 16, 2, 500, 9, 3);
    const auto all = b.all_gather_value<uint64_t>(digest(route_tokens(o, 4)));
    expect(std::all_of(all.begin(), all.end(), [&](uint64_t d) { return d == all[0]; }), "ranks disagree");
  });
  const auto a = route_tokens(opts("zipf:1.2", 16, 2, 500, 9, 3), 4);
  CHECK(digest(a) == digest(route_tokens(opts("zipf:1.2", 16, 2, 500, 9, 3), 4)));
  CHECK(digest(a) != digest(route_tokens(opts("zipf:1.2", 16, 2, 500, 9, 4), 4)));
  CHECK(digest(a) != digest(route_tokens(opts("zipf:1.2", 16, 2, 500, 10, 3), 4)));
}

TEST_CASE("routing: every member sends tokens x K copies, loads sum to the same", "[unit][moe]") {
  for (const char* spec : {"uniform", "zipf:0.8", "zipf:3"}) {
    const auto r = route_tokens(opts(spec, 8, 3, 101), 4);
    for (int s = 0; s < 4; ++s) CHECK(r.sent_by(s) == 303);
    CHECK(std::accumulate(r.expert_load.begin(), r.expert_load.end(), size_t{0}) == 4 * 303);
    size_t received = 0;
    for (int d = 0; d < 4; ++d) received += r.received_by(d);
    CHECK(received == 4 * 303);
    // Each member's experts' loads add up to what it receives (expert e on member e / 2).
    for (int d = 0; d < 4; ++d) CHECK(r.received_by(d) == r.expert_load[2 * d] + r.expert_load[2 * d + 1]);
  }
}

TEST_CASE("routing: the K experts of a token are distinct", "[unit][moe]") {
  // K = E: a token must take every expert once, whatever the skew (zipf:8 puts nearly
  // all the weight on one expert, so this also takes the redraw's fallback).
  for (const char* spec : {"uniform", "zipf:8"}) {
    const auto r = route_tokens(opts(spec, 4, 4, 50), 2);
    for (size_t load : r.expert_load) CHECK(load == 2 * 50);
    for (int s = 0; s < 2; ++s)
      for (int d = 0; d < 2; ++d) CHECK(r.at(s, d) == 100);
    CHECK(r.expert_imbalance() == Approx(1.0));
  }
  // K = E - 1 under a strong skew: no expert can take more than one copy per token.
  const auto r = route_tokens(opts("zipf:4", 8, 7, 300), 4);
  for (size_t load : r.expert_load) CHECK(load <= 4 * 300);
}

TEST_CASE("routing: zipf loads fall with popularity rank, more with a larger S", "[unit][moe]") {
  const auto r = route_tokens(opts("zipf:1.2", 16, 1, 5000, 3), 4);
  std::vector<size_t> sorted = r.expert_load;
  std::sort(sorted.rbegin(), sorted.rend());
  // Expected shares 1/i^1.2 of the 20000 copies: about 5700, 2500, 1080, 470 at ranks 1, 2, 4, 8.
  CHECK(sorted[0] > sorted[1]);
  CHECK(sorted[1] > sorted[3]);
  CHECK(sorted[3] > sorted[7]);
  CHECK(sorted[0] > 2 * sorted[1] - 1000);
  CHECK(r.expert_imbalance() > 3.5);
  const auto flat = route_tokens(opts("uniform", 16, 1, 5000, 3), 4);
  CHECK(flat.expert_imbalance() < 1.1);
  CHECK(route_tokens(opts("zipf:0.5", 16, 1, 5000, 3), 4).expert_imbalance() < r.expert_imbalance());
  // The hot expert comes from the seed, fixed across steps, and not always expert 0.
  auto hot = [](const MoeRouting& m) {
    return std::max_element(m.expert_load.begin(), m.expert_load.end()) - m.expert_load.begin();
  };
  CHECK(hot(route_tokens(opts("zipf:2", 16, 1, 2000, 3, 0), 4)) ==
        hot(route_tokens(opts("zipf:2", 16, 1, 2000, 3, 7), 4)));
  std::vector<long> hots;
  for (uint64_t seed = 0; seed < 6; ++seed) hots.push_back(hot(route_tokens(opts("zipf:2", 16, 1, 2000, seed), 4)));
  std::sort(hots.begin(), hots.end());
  CHECK(std::unique(hots.begin(), hots.end()) - hots.begin() > 1);
}

TEST_CASE("routing: per-expert weights from a JSON or CSV file", "[unit][moe]") {
  TempTree dir("moe");
  dir.write("w.json", "[0, 0, 1, 3]");
  dir.write("w.csv", "expert,weight\n0,0\n1,0\n2,1\n3,3");
  for (const char* name : {"w.json", "w.csv"}) {
    const std::string spec = "file:" + (dir.root() / name).string();
    const auto r = route_tokens(opts(spec, 4, 1, 4000), 2);
    CHECK(r.expert_load[0] == 0);
    CHECK(r.expert_load[1] == 0);
    CHECK(r.expert_load[2] + r.expert_load[3] == 8000);
    CHECK(static_cast<double>(r.expert_load[3]) / static_cast<double>(r.expert_load[2]) == Approx(3.0).epsilon(0.1));
    CHECK(r.received_by(0) == 0);
    // K = 2 with two experts above 0: both, every token.
    const auto both = route_tokens(opts(spec, 4, 2, 10), 2);
    CHECK(both.expert_load == std::vector<size_t>{0, 0, 20, 20});
  }
}

TEST_CASE("routing: bad specs name the field and the fix", "[unit][moe]") {
  CHECK_THAT(error_of([] { parse_routing("gauss"); }), Catch::Contains("not a distribution: use uniform, zipf:S"));
  CHECK_THAT(error_of([] { parse_routing("zipf:0"); }), Catch::Contains("exponent S must be a number above 0"));
  CHECK_THAT(error_of([] { parse_routing("zipf:-1"); }), Catch::Contains("above 0"));
  CHECK_THAT(error_of([] { parse_routing("zipf:x"); }), Catch::Contains("above 0"));
  CHECK_THAT(error_of([] { parse_routing("file:"); }), Catch::Contains("needs a path"));
  CHECK_THROWS_AS(parse_routing("file:/nonexistent/w.json"), IoError);
  CHECK_THAT(error_of([] { route_tokens(opts("uniform", 4, 5, 1), 2); }),
             Catch::Contains("--topk 5 exceeds --experts 4"));
  CHECK_THAT(error_of([] { route_tokens(opts("uniform", 6, 2, 1), 4); }),
             Catch::Contains("--experts 6 does not divide over the 4 ranks"));
  CHECK_THAT(error_of([] { route_tokens(opts("uniform", 0, 1, 1), 1); }), Catch::Contains("--experts 0"));
  TempTree dir("moe-bad");
  dir.write("three.json", "[1, 2, 3]");
  dir.write("one.csv", "0\n0\n5\n0");
  dir.write("neg.csv", "1\n-2");
  dir.write("text.csv", "1\nlots");
  const std::string three = "file:" + (dir.root() / "three.json").string();
  const std::string one = "file:" + (dir.root() / "one.csv").string();
  CHECK_THAT(error_of([&] { route_tokens(opts(three, 4, 1, 1), 2); }),
             Catch::Contains("has 3 weights for --experts 4"));
  CHECK_THAT(error_of([&] { route_tokens(opts(one, 4, 2, 1), 2); }), Catch::Contains("only 1 experts"));
  CHECK_THAT(error_of([&] { parse_routing("file:" + (dir.root() / "neg.csv").string()); }),
             Catch::Contains("weight -2"));
  CHECK_THAT(error_of([&] { parse_routing("file:" + (dir.root() / "text.csv").string()); }),
             Catch::Contains("line 2: 'lots' is not a weight"));
  // More experts than token copies is a small micro-batch, not an error.
  const auto few = route_tokens(opts("uniform", 64, 2, 3), 4);
  CHECK(std::accumulate(few.expert_load.begin(), few.expert_load.end(), size_t{0}) == 24);
  CHECK(route_tokens(opts("uniform", 8, 2, 0), 4).expert_imbalance() == 0);
}

TEST_CASE("routing: dispatch and combine layouts mirror each other", "[unit][moe]") {
  const auto r = route_tokens(opts("zipf:1.5", 8, 2, 40), 4);
  for (int m = 0; m < 4; ++m) {
    const AllToAllVLayout d = dispatch_layout(r, m, 16), c = combine_layout(r, m, 16);
    CHECK(d.send_extent() == 40 * 2 * 16);  // every member sends tokens x K copies
    CHECK(d.recv_extent() == r.received_by(m) * 16);
    CHECK(c.send_counts == d.recv_counts);
    CHECK(c.recv_offsets == d.send_offsets);
    for (int q = 0; q < 4; ++q) CHECK(d.send_counts[static_cast<size_t>(q)] == r.at(m, q) * 16);
  }
}
