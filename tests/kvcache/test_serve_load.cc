// kvcache --serve's load model without ranks: the arrival process has the mean rate and
// the burstiness asked for, the SLO parser refuses what it cannot read, and the summary
// tells carried from offered load over the judged window, counts goodput and judges only
// with enough samples.
#include <algorithm>
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "bench/commands/kvcache/kvserve_load.h"
#include "lib/core/errors.h"

using namespace railbench;

namespace {

struct GapStats {
  double mean = 0, cv2 = 0;  // cv2: squared coefficient of variation, 1 / burstiness for gamma gaps
};

GapStats gap_stats(const std::vector<double>& t) {
  std::vector<double> gaps;
  for (size_t i = 1; i < t.size(); ++i) gaps.push_back(t[i] - t[i - 1]);
  double sum = 0, sq = 0;
  for (double g : gaps) sum += g;
  const double mean = sum / static_cast<double>(gaps.size());
  for (double g : gaps) sq += (g - mean) * (g - mean);
  const double var = sq / static_cast<double>(gaps.size() - 1);
  return {mean, var / (mean * mean)};
}

}  // namespace

TEST_CASE("serve arrivals: mean rate and burstiness over 100,000 seeded draws", "[kvcache][serve]") {
  for (double burstiness : {1.0, 0.25, 4.0}) {
    DYNAMIC_SECTION("burstiness " << burstiness) {
      const auto t = arrival_times(2000, burstiness, 7, 100000);
      REQUIRE(t.size() == 100000);
      REQUIRE(t.front() == 0);
      for (size_t i = 1; i < t.size(); ++i) REQUIRE(t[i] >= t[i - 1]);
      const GapStats s = gap_stats(t);
      // About 5 standard errors: the mean's is sqrt(CV^2 / N) (0.6% at burstiness 0.25),
      // CV^2's about CV^2 sqrt((2 + 6/k) / N) for gamma gaps of shape k (1.6% at 0.25).
      CHECK(s.mean == Approx(1.0 / 2000).epsilon(0.035));
      // Gamma with shape k has CV^2 = 1/k: Poisson 1, bursty 4, regular 0.25.
      CHECK(s.cv2 == Approx(1.0 / burstiness).epsilon(0.08));
    }
  }
}

TEST_CASE("serve arrivals: the same seed gives the same times, another seed others", "[kvcache][serve]") {
  CHECK(arrival_times(100, 1, 3, 1000) == arrival_times(100, 1, 3, 1000));
  CHECK(arrival_times(100, 1, 3, 1000) != arrival_times(100, 1, 4, 1000));
}

TEST_CASE("serve arrivals refuse a rate or burstiness that is not above 0", "[kvcache][serve]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(arrival_times(0, 1, 1, 10), Catch::Contains("--rate 0 must be"));
  CHECK_THROWS_WITH(arrival_times(-5, 1, 1, 10), Catch::Contains("--rate -5"));
  CHECK_THROWS_AS(arrival_times(nan, 1, 1, 10), UsageError);
  CHECK_THROWS_AS(arrival_times(inf, 1, 1, 10), UsageError);
  CHECK_THROWS_WITH(arrival_times(10, 0, 1, 10), Catch::Contains("--burstiness 0 must be"));
  CHECK_THROWS_AS(arrival_times(10, nan, 1, 10), UsageError);
}

TEST_CASE("serve --slo: pP:LIMIT with a unit, anything else refused", "[kvcache][serve]") {
  const Slo a = parse_slo("p99:50ms");
  CHECK(a.percentile == 99);
  CHECK(a.limit_us == 50000);
  CHECK(parse_slo("p99.9:800us").limit_us == 800);
  CHECK(parse_slo("p99.9:800us").percentile == Approx(99.9));
  CHECK(parse_slo("p50:1.5s").limit_us == 1.5e6);
  for (const char* bad : {"", "99:50ms", "p99", "p99:50", "p99:50 ms", "p99:50min", "p0:1ms", "p101:1ms", "p99:-1ms",
                          "p99:0ms", "px:1ms", "p99:nanms", "p99x:1ms"}) {
    DYNAMIC_SECTION("'" << bad << "'") {
      CHECK_THROWS_WITH(parse_slo(bad), Catch::Contains("expected pP:LIMIT"));
    }
  }
}

TEST_CASE("serve summary: offered, arrived and carried over the window, goodput at the SLO", "[kvcache][serve]") {
  const Slo slo = parse_slo("p99:1ms");
  // 100 arrivals 10 ms apart over [0, 0.99 s]; the last 5 take 5 ms, the rest 100 us.
  ServeTally t(1, 0, slo.limit_us, ServeWindow{0, 0.99});
  for (int i = 0; i < 100; ++i) t.add(0, -1, {0, 10, i < 95 ? 100.0 : 5000.0}, i * 0.01);
  ServeSummary s = summarize_serve(t, 100, 1000000, &slo);
  CHECK(s.requests == 100);
  CHECK(s.warmup_requests == 0);
  CHECK(s.offered_rps == 100);                 // asked for, not measured
  CHECK(s.arrival_rps == Approx(100 / 0.99));  // measured
  CHECK(s.carried_rps == Approx(99 / 0.99));   // the last ack lands after the window
  CHECK(s.offered_gbps == Approx(0.1));
  CHECK(s.load_judged);
  CHECK_FALSE(s.overload);
  CHECK(s.goodput == Approx(0.95));
  CHECK(s.slo_judged);
  CHECK_FALSE(s.slo_met);  // p99 is 5000 us
  CHECK(s.slo_us == Approx(5000).epsilon(LatencyHistogram::kRelativeError));
  const Slo loose = parse_slo("p90:1ms");
  ServeTally tl(1, 0, loose.limit_us, t.window);
  tl.merge(t);
  CHECK(summarize_serve(tl, 100, 1, &loose).slo_met);
  // p95 is the 95th request, the last within the limit: met exactly, not by a bucket's width.
  ServeTally t100(1, 0, 100, t.window);
  t100.merge(t);
  const Slo p95 = parse_slo("p95:100us"), p96 = parse_slo("p96:100us");
  CHECK(summarize_serve(t100, 100, 1, &p95).slo_met);
  CHECK_FALSE(summarize_serve(t100, 100, 1, &p96).slo_met);
  // A trace asks for no rate: what arrived is the offer.
  CHECK(summarize_serve(t, 0, 1, nullptr).offered_rps == Approx(100 / 0.99));
  CHECK(summarize_serve(t, 0, 1, nullptr).goodput < 0);
}

TEST_CASE("serve summary: a queue that grows through the window is overload, whatever the percentile says",
          "[kvcache][serve]") {
  // The same arrivals served 40 ms apart (25 req/s): request i acks at 40 i ms, so 25 of
  // the 100 land inside the window. The limit is loose enough that p99 (3 s) meets it.
  const Slo slo = parse_slo("p99:10s");
  ServeTally t(1, 0, slo.limit_us, ServeWindow{0, 0.99});
  for (int i = 0; i < 100; ++i) t.add(0, -1, {0, 40000, i * 30000.0}, i * 0.01);
  const ServeSummary s = summarize_serve(t, 100, 1, &slo);
  CHECK(s.carried_rps == Approx(25 / 0.99));
  CHECK(s.load_judged);
  CHECK(s.overload);
  CHECK(s.slo_met);
  const RunVerdict v = judge_run(s, slo);
  CHECK_FALSE(v.met);
  CHECK_THAT(v.why, Catch::StartsWith("overload: carried 25.3 req/s, below 95% of the 101.0 that arrived"));
}

TEST_CASE("serve summary: the warm-up is carried but not judged", "[kvcache][serve]") {
  // 200 arrivals 10 ms apart; the window starts at 1 s, so the first 100 are the warm-up.
  ServeTally t(2, 0, 0, ServeWindow{1.0, 1.99});
  for (int i = 0; i < 200; ++i) t.add(static_cast<size_t>(i % 2), -1, {0, 5, i < 100 ? 905000.0 : 50.0}, i * 0.01);
  const ServeSummary s = summarize_serve(t, 100, 1, nullptr);
  CHECK(s.warmup_requests == 100);
  CHECK(s.requests == 100);
  CHECK(s.total_us.max == 50);  // the slow warm-up is not in the percentiles
  // Warm-up requests acked inside the window (those from 0.1 s on, 0.905 s late) are carried there.
  CHECK(t.all.acked_in_window == 99 + 90);
  CHECK(t.per_decode[0].acked_in_window + t.per_decode[1].acked_in_window == t.all.acked_in_window);
  // The window and the counters travel in the words the ranks exchange.
  ServeTally m(2, 0, 0, t.window);
  m.merge_words(t.words());
  m.merge_words(t.words());
  CHECK(m.warmup == 200);
  CHECK(m.all.acked_in_window == 2 * t.all.acked_in_window);
}

TEST_CASE("serve verdicts: a percentile and a carried rate are judged only with enough samples", "[kvcache][serve]") {
  CHECK(min_samples(99) == 100);
  CHECK(min_samples(99.9) == 1000);
  CHECK(min_samples(99.99) == 10000);
  CHECK(min_samples(90) == 10);
  CHECK(min_samples(50) == 10);
  CHECK(min_samples(100) == 10);
  // 99 requests: p99 would be their largest; 100: the 99th of 100.
  const Slo slo = parse_slo("p99:1s");
  for (int n : {99, 100}) {
    ServeTally t(1, 0, slo.limit_us, ServeWindow{0, 1});
    for (int i = 0; i < n; ++i) t.add(0, -1, {0, 5, 50}, i * 0.01);
    const ServeSummary s = summarize_serve(t, 100, 1, &slo);
    CHECK(s.slo_judged == (n == 100));
    CHECK(s.slo_met == (n == 100));
    CHECK(s.load_judged == (n == 100));
    CHECK(judge_run(s, slo).met == (n == 100));
    if (n == 99) CHECK_THAT(judge_run(s, slo).why, Catch::Contains("not judged: 99 requests"));
  }
  // Too few arrivals: a low carried rate is not called overload.
  const LoadVerdict few = judge_load(8, 1, 0.02);
  CHECK_FALSE(few.judged);
  CHECK_FALSE(few.overload);
  CHECK(few.arrival_rps == Approx(400));
  // The rule's edge: 95 of 100 carried is not overload, 94 is.
  CHECK_FALSE(judge_load(100, 95, 1).overload);
  CHECK(judge_load(100, 94, 1).overload);
}

TEST_CASE("serve tally: what the ranks exchange is the same size for any number of requests, and merges",
          "[kvcache][serve]") {
  ServeTally a(2, 2, 0), b(2, 2, 0);
  for (int i = 0; i < 10; ++i) a.add(static_cast<size_t>(i % 2), i % 2, {1, 2, 3});
  for (int i = 0; i < 100000; ++i) b.add(1, 1, {10, 20, 30.0 + i % 7});
  CHECK(a.words().size() == b.words().size());
  ServeTally m(2, 2, 0);
  m.merge_words(a.words());
  m.merge_words(b.words());
  CHECK(m.all.total.count() == 100010);
  CHECK(m.per_decode[0].total.count() == 5);
  CHECK(m.per_rail[1].queue.count() == 100005);
  CHECK(m.per_rail[1].queue.summary().max == 10);
  CHECK(m.all.total.summary().min == 3);
}

TEST_CASE("serve --tokens: a count, uniform:A-B, lognormal:M,S and trace are read", "[kvcache][serve]") {
  const uint64_t max = 1ULL << 32;
  const TokenDist f = parse_token_dist("4K", max);
  CHECK(f.kind == TokenDist::Kind::fixed);
  CHECK(f.lo == 4096);
  const TokenDist u = parse_token_dist("uniform:512-8K", max);
  CHECK(u.kind == TokenDist::Kind::uniform);
  CHECK(u.lo == 512);
  CHECK(u.hi == 8192);
  const TokenDist l = parse_token_dist("lognormal:2K,0.8", max);
  CHECK(l.kind == TokenDist::Kind::lognormal);
  CHECK(l.median == 2048);
  CHECK(l.sigma == 0.8);
  CHECK(parse_token_dist("trace", max).kind == TokenDist::Kind::trace);
}

TEST_CASE("serve --tokens: a distribution it cannot read is refused naming the form", "[kvcache][serve]") {
  const uint64_t max = 1ULL << 32;
  CHECK_THROWS_WITH(parse_token_dist("0", max), Catch::Contains("--tokens 0: '0' is not a token count"));
  CHECK_THROWS_WITH(parse_token_dist("uniform:8K-512", max), Catch::Contains("give uniform:512-8192"));
  CHECK_THROWS_WITH(parse_token_dist("uniform:512", max), Catch::Contains("expected uniform:A-B"));
  CHECK_THROWS_WITH(parse_token_dist("uniform:1-x", max), Catch::Contains("'x' is not a token count"));
  CHECK_THROWS_WITH(parse_token_dist("uniform:1-5G", max), Catch::Contains("'5G' is not a token count from 1 to"));
  CHECK_THROWS_WITH(parse_token_dist("lognormal:2K", max), Catch::Contains("expected lognormal:MEDIAN,SIGMA"));
  CHECK_THROWS_WITH(parse_token_dist("lognormal:2K,-1", max), Catch::Contains("sigma '-1' must be"));
  CHECK_THROWS_WITH(parse_token_dist("lognormal:2K,0.5x", max), Catch::Contains("sigma '0.5x'"));
  CHECK_THROWS_WITH(parse_token_dist("zipf:1,2", max), Catch::Contains("unknown distribution 'zipf'"));
  CHECK_THROWS_WITH(draw_tokens(parse_token_dist("trace", max), 1, 3, max), Catch::Contains("give --trace FILE"));
}

TEST_CASE("serve --tokens draws: bounds, median, seeded, apart from the arrivals", "[kvcache][serve]") {
  const uint64_t max = 1ULL << 32;
  const auto fixed = draw_tokens(parse_token_dist("100", max), 1, 5, max);
  CHECK(fixed == std::vector<uint64_t>(5, 100));
  const auto u = draw_tokens(parse_token_dist("uniform:10-20", max), 3, 20000, max);
  CHECK(*std::min_element(u.begin(), u.end()) == 10);
  CHECK(*std::max_element(u.begin(), u.end()) == 20);
  double sum = 0;
  for (uint64_t t : u) sum += static_cast<double>(t);
  CHECK(sum / 20000 == Approx(15).epsilon(0.01));  // standard error 0.02 tokens
  auto ln = draw_tokens(parse_token_dist("lognormal:1000,0.5", max), 3, 20001, max);
  std::sort(ln.begin(), ln.end());
  CHECK(static_cast<double>(ln[10000]) == Approx(1000).epsilon(0.03));  // the sample median, about 0.5% error
  CHECK(draw_tokens(parse_token_dist("uniform:1-1000", max), 9, 100, max) ==
        draw_tokens(parse_token_dist("uniform:1-1000", max), 9, 100, max));
  CHECK(draw_tokens(parse_token_dist("uniform:1-1000", max), 9, 100, max) !=
        draw_tokens(parse_token_dist("uniform:1-1000", max), 10, 100, max));
  // A huge sigma is clamped to [1, max], never 0 tokens nor above the bound.
  const auto wide = draw_tokens(parse_token_dist("lognormal:10,10", 1000), 5, 1000, 1000);
  CHECK(*std::min_element(wide.begin(), wide.end()) >= 1);
  CHECK(*std::max_element(wide.begin(), wide.end()) == 1000);
}
