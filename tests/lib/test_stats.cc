#include <catch2/catch.hpp>

#include "lib/core/stats.h"

using namespace railbench;

TEST_CASE("nearest-rank percentiles match hand-computed values", "[stats]") {
  // 1..100: the p-th percentile by nearest rank is the ceil(p/100 * 100)-th value.
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  Summary s = summarize(v);
  CHECK(s.count == 100);
  CHECK(s.min == 1);
  CHECK(s.max == 100);
  CHECK(s.mean == Approx(50.5));
  CHECK(s.p50 == 50);
  CHECK(s.p90 == 90);
  CHECK(s.p99 == 99);
  CHECK(s.p999 == 100);  // ceil(0.999 * 100) = 100
  // Sample stdev of 1..100: sqrt(100*101/12) = 29.011491975882016
  CHECK(s.stdev == Approx(29.011491975882016));
}

TEST_CASE("p99.9 of 1000 samples is the 999th smallest, not an interpolation", "[stats]") {
  std::vector<double> v(1000);
  for (int i = 0; i < 1000; ++i) v[i] = i + 1;
  v[999] = 1e6;  // one huge outlier
  Summary s = summarize(v);
  CHECK(s.p999 == 999);
  CHECK(s.p99 == 990);
  CHECK(s.max == 1e6);
}

TEST_CASE("percentiles of tiny sample sets", "[stats]") {
  std::vector<double> one{7.5};
  Summary s = summarize(one);
  CHECK(s.p50 == 7.5);
  CHECK(s.p999 == 7.5);
  CHECK(s.stdev == 0);

  std::vector<double> three{3, 1, 2};
  s = summarize(three);
  CHECK(s.p50 == 2);  // ceil(1.5) = 2nd
  CHECK(s.p90 == 3);  // ceil(2.7) = 3rd
  CHECK(s.mean == Approx(2.0));
  CHECK(s.stdev == Approx(1.0));

  Summary empty = summarize(std::vector<double>{});
  CHECK(empty.count == 0);
}

TEST_CASE("iteration time is the maximum over ranks", "[stats]") {
  std::vector<std::vector<double>> by_rank{{1, 5, 3}, {4, 2, 3}, {2, 2, 9}};
  CHECK(max_over_ranks(by_rank) == std::vector<double>{4, 5, 9});
}

TEST_CASE("median is the middle value, the mean of the two middle ones for an even count", "[stats]") {
  CHECK(median({}) == 0);
  CHECK(median({7}) == 7);
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == Approx(2.5));  // unsorted on purpose
  CHECK(median({10, 10, 10, 1}) == 10);        // ties: the middle pair is (10, 10)
  // One bad link of four cannot become the reference it is judged against.
  CHECK(median({50, 50, 48, 5}) == Approx(49));
  // Differs from the nearest-rank p50, which is a measured value (the lower middle).
  const std::vector<double> even{1, 2, 3, 4, 5, 6};
  CHECK(summarize(even).p50 == 3);
  CHECK(median(even) == Approx(3.5));
}

TEST_CASE("scaled MAD is 1.4826 times the median absolute deviation and ignores one outlier", "[stats]") {
  CHECK(scaled_mad({}) == 0);
  CHECK(scaled_mad({5, 5, 5, 5}) == 0);
  // median 3; deviations {2, 1, 0, 1, 2} -> median 1.
  CHECK(scaled_mad({1, 2, 3, 4, 5}) == Approx(1.4826));
  // One wild value moves the standard deviation a lot, the scaled MAD not at all.
  CHECK(scaled_mad({1, 2, 3, 4, 1000}) == Approx(1.4826));
  // Even count: median 2.5; deviations {1.5, 0.5, 0.5, 1.5} -> median 1.
  CHECK(scaled_mad({1, 2, 3, 4}) == Approx(1.4826));
}
