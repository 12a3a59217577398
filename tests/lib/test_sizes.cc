#include <catch2/catch.hpp>

#include "lib/core/errors.h"
#include "lib/core/sizes.h"

using namespace railbench;

TEST_CASE("sizes parse with binary suffixes", "[sizes]") {
  CHECK(parse_size("8") == 8);
  CHECK(parse_size("4K") == 4096);
  CHECK(parse_size("4k") == 4096);
  CHECK(parse_size("1M") == 1048576);
  CHECK(parse_size("1MB") == 1048576);
  CHECK(parse_size("1MiB") == 1048576);
  CHECK(parse_size("1G") == 1073741824ULL);
  CHECK(parse_size("0") == 0);
  CHECK(parse_size("128B") == 128);
}

TEST_CASE("sizes that do not parse are usage errors naming the text", "[sizes]") {
  for (const char* bad : {"", "abc", "4Q", "-1", "1.5M", "K", "99999999999999999999", "20000000000G"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_size(bad), UsageError);
  }
  CHECK_THROWS_WITH(parse_size("4Q"), Catch::Contains("'4Q'") && Catch::Contains("4K"));
}

TEST_CASE("format_size picks the largest exact unit", "[sizes]") {
  CHECK(format_size(8) == "8");
  CHECK(format_size(4096) == "4K");
  CHECK(format_size(1536) == "1536");
  CHECK(format_size(64ULL << 20) == "64M");
  CHECK(format_size(1ULL << 30) == "1G");
}

TEST_CASE("sweeps step like nccl-tests", "[sizes]") {
  CHECK(size_sweep(1024, 8192, 2) == std::vector<uint64_t>{1024, 2048, 4096, 8192});
  CHECK(size_sweep(8, 8, 2) == std::vector<uint64_t>{8});
  // A step past max ends the sweep: 1K, 4K, 16K, and 64K > 40K.
  CHECK(size_sweep(1024, 40960, 4) == std::vector<uint64_t>{1024, 4096, 16384});
  CHECK(size_sweep(100, 400, 2, 100) == std::vector<uint64_t>{100, 200, 300, 400});
}

TEST_CASE("bad sweeps are usage errors", "[sizes]") {
  CHECK_THROWS_WITH(size_sweep(4096, 1024, 2), Catch::Contains("larger than max") && Catch::Contains("-b <= -e"));
  CHECK_THROWS_AS(size_sweep(1, 1024, 1), UsageError);
  CHECK_THROWS_AS(size_sweep(0, 1024, 2), UsageError);
}

TEST_CASE("size sweeps: more sizes than the limit are refused before any is built", "[sizes][robustness]") {
  CHECK(size_sweep(1, 10000, 2, 1).size() == 10000);
  CHECK_THROWS_WITH(size_sweep(1, 10001, 2, 1), Catch::Contains("more than 10000 sizes") && Catch::Contains("-i"));
}

TEST_CASE("size sweeps: -b 1 -e 1G -i 1 (a billion sizes) is refused at once", "[sizes][robustness]") {
  CHECK_THROWS_AS(size_sweep(1, 1ULL << 30, 2, 1), UsageError);
}
