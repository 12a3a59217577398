#include <catch2/catch.hpp>

#include "lib/errors.h"
#include "lib/hostlist.h"

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
