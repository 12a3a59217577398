#include <catch2/catch.hpp>

#include <random>
#include <set>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/runtime/hostlist.h"

using namespace railbench;

TEST_CASE("hostlist: ranges keep the zero padding of their first bound", "[hostlist]") {
  auto h = expand_hostlist("gpu[001-032]");
  REQUIRE(h.size() == 32);
  CHECK(h.front() == "gpu001");
  CHECK(h[9] == "gpu010");
  CHECK(h.back() == "gpu032");
  CHECK(expand_hostlist("n[8-11]") == std::vector<std::string>{"n8", "n9", "n10", "n11"});
}

TEST_CASE("hostlist: lists, plain names and several bracket groups", "[hostlist]") {
  CHECK(expand_hostlist("node[1-3,7],login1") ==
        std::vector<std::string>{"node1", "node2", "node3", "node7", "login1"});
  CHECK(expand_hostlist("a,b") == std::vector<std::string>{"a", "b"});
  CHECK(expand_hostlist("rack[1-2]-gpu[01-02]") ==
        std::vector<std::string>{"rack1-gpu01", "rack1-gpu02", "rack2-gpu01", "rack2-gpu02"});
  CHECK(expand_hostlist("gpu[0001-1024]").size() == 1024);
}

TEST_CASE("hostlist: bad expressions name the problem and where", "[hostlist]") {
  CHECK_THROWS_WITH(expand_hostlist("gpu[001-032"), Catch::Contains("without a matching ']'"));
  CHECK_THROWS_WITH(expand_hostlist("gpu[9-2]"), Catch::Contains("runs backwards"));
  CHECK_THROWS_WITH(expand_hostlist("gpu[a-b]"), Catch::Contains("not a number"));
  CHECK_THROWS_WITH(expand_hostlist("a,,b"), Catch::Contains("empty name"));
  CHECK_THROWS_WITH(expand_hostlist("gpu]1["), Catch::Contains("without a matching '['"));
  CHECK_THROWS_WITH(expand_hostlist("n[1-100]", 50), Catch::Contains("more than 50"));
  CHECK_THROWS_AS(expand_hostlist(""), UsageError);
}

TEST_CASE("hostlist: a range is measured before it is expanded", "[hostlist][robustness]") {
  // node[0-999999999] would be a billion strings: the range itself is refused.
  CHECK_THROWS_WITH(expand_hostlist("node[0-999999999]", 4096),
                    Catch::Contains("range '0-999999999' makes more than 4096 names"));
  CHECK_THROWS_WITH(expand_hostlist("a[1-3],b[1-200]", 100), Catch::Contains("range '1-200'"));
  CHECK(expand_hostlist("n[1-100]", 100).size() == 100);
  // A long expression is quoted only in part.
  const std::string longest = "n[1-5]," + std::string(100000, 'x') + "[";
  try {
    expand_hostlist(longest, 100);
    FAIL("no error");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).size() < 300);
  }
}

TEST_CASE("hostlist: compression folds runs and keeps each range's padding", "[hostlist]") {
  CHECK(compress_hostlist({"gpu017", "gpu003", "gpu018"}) == "gpu[003,017-018]");
  CHECK(compress_hostlist({"gpu10", "gpu9"}) == "gpu[9-10]");
  CHECK(compress_hostlist({"gpu099", "gpu100", "gpu101"}) == "gpu[099-101]");  // 100 is 3 digits already
  CHECK(compress_hostlist({"gpu1000", "gpu999"}) == "gpu[999-1000]");
  // gpu1 and gpu01 are two hosts: never one range, each padding its own run.
  CHECK(compress_hostlist({"gpu01", "gpu1", "gpu2", "gpu02"}) == "gpu[1-2,01-02]");
  CHECK(compress_hostlist({"gpu1", "gpu01", "gpu001"}) == "gpu[1,01,001]");
  CHECK(compress_hostlist({"x08", "x9", "x10"}) == "x[9,08,10]");
  CHECK(compress_hostlist({"gpu0", "gpu00", "gpu1"}) == "gpu[0-1,00]");
  CHECK(compress_hostlist({"node04"}) == "node04");
  CHECK(compress_hostlist({}).empty());
}

TEST_CASE("hostlist: compression sorts, drops duplicates and joins patterns", "[hostlist]") {
  CHECK(compress_hostlist({"node2", "b", "login1", "node1", "a", "node2"}) == "a,b,login1,node[1-2]");
  CHECK(compress_hostlist({"n3y", "n1x", "n2x"}) == "n[1-2]x,n3y");
  CHECK(compress_hostlist({"node1.x", "node2.x"}) == "node[1-2].x");
  CHECK(compress_hostlist({"3", "1", "2"}) == "[1-3]");
  // A number longer than expand_hostlist reads stays text.
  CHECK(compress_hostlist({"h1234567890", "h1234567891"}) == "h1234567890,h1234567891");
}

TEST_CASE("hostlist: rack-style names fold the field that varies", "[hostlist]") {
  CHECK(compress_hostlist({"rack1-gpu02", "rack1-gpu01"}) == "rack1-gpu[01-02]");
  CHECK(compress_hostlist({"rack1-gpu01", "rack2-gpu01"}) == "rack[1-2]-gpu01");
  CHECK(compress_hostlist({"rack1-gpu01", "rack1-gpu02", "rack2-gpu01", "rack2-gpu02"}) == "rack[1-2]-gpu[01-02]");
  CHECK(compress_hostlist({"rack1-gpu01", "rack1-gpu02", "rack2-gpu01"}) == "rack1-gpu[01-02],rack2-gpu01");
  CHECK(compress_hostlist(expand_hostlist("rack[1-4]-gpu[001-032],rack5-gpu[001-016]")) ==
        "rack[1-4]-gpu[001-032],rack5-gpu[001-016]");
}

TEST_CASE("hostlist: names that cannot be written in a hostlist are refused", "[hostlist]") {
  CHECK_THROWS_WITH(compress_hostlist({"a", ""}), Catch::Contains("an empty name"));
  CHECK_THROWS_WITH(compress_hostlist({"gpu[1]"}), Catch::Contains("'[' is hostlist syntax"));
  CHECK_THROWS_WITH(compress_hostlist({"a,b"}), Catch::Contains("',' is hostlist syntax"));
  CHECK_THROWS_AS(compress_hostlist({"a b"}), UsageError);
}

// Random lists of names from a few patterns (paddings, gaps, duplicates, several
// fields): expansion gives back exactly the set that was compressed, each name once.
TEST_CASE("hostlist: expand(compress(x)) is the set of x", "[hostlist]") {
  std::mt19937 rng(14);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> prefixes{"gpu", "node", "rack", "a", "login", ""};
  for (int round = 0; round < 500; ++round) {
    std::vector<std::string> hosts;
    const int count = 1 + pick(40);
    for (int i = 0; i < count; ++i) {
      std::string name = prefixes[pick(static_cast<int>(prefixes.size()))];
      const int fields = pick(3);
      for (int f = 0; f < fields; ++f) {
        const int width = pick(4);  // 0: unpadded
        const int value = pick(3) == 0 ? pick(12) : pick(1200);
        name += fmt::format("{:0{}d}", value, width);
        if (f + 1 < fields) name += pick(2) ? "-gpu" : "n";
      }
      if (name.empty() || pick(8) == 0) name += "x";
      hosts.push_back(name);
    }
    const std::string compressed = compress_hostlist(hosts);
    const auto back = expand_hostlist(compressed);
    INFO(compressed);
    CHECK(std::set<std::string>(back.begin(), back.end()) == std::set<std::string>(hosts.begin(), hosts.end()));
    CHECK(std::set<std::string>(back.begin(), back.end()).size() == back.size());
  }
}
