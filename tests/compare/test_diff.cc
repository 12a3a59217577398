// The judgement of `railbench compare` on figures made up for the purpose: the
// threshold, the noise bands, and which way is worse.
#include <catch2/catch.hpp>

#include "bench/offline/compare/diff.h"
#include "bench/offline/compare/figures.h"
#include "bench/offline/compare/output.h"
#include "lib/core/csv.h"
#include "lib/core/errors.h"

using namespace railbench;
using namespace railbench::compare;
using nlohmann::json;

namespace Catch {
template <>
struct StringMaker<Verdict> {
  static std::string convert(Verdict v) { return to_string(v); }
};
}  // namespace Catch

namespace {

Figure bw(double v, double lo, double hi) {
  return Figure{"1M out-of-place", "busbw", "GB/s", true, v, lo, hi};
}
Figure lat(double v, double lo, double hi) {
  return Figure{"send 8 rank0<->rank1 rail0", "lat p50", "us", false, v, lo, hi};
}

json summary(double min, double p50, double p90, double p99, double p999, double max) {
  return json{{"count", 1000}, {"min", min}, {"max", max}, {"mean", p50},  {"stdev", 1.0},
              {"p50", p50},    {"p90", p90}, {"p99", p99}, {"p99_9", p999}};
}

}  // namespace

TEST_CASE("compare: a bandwidth drop beyond the threshold and outside both bands is a regression", "[compare]") {
  const auto r = judge(bw(10, 9.8, 10.2), bw(8, 7.9, 8.1), 0.05);
  CHECK(r.verdict == Verdict::regression);
  CHECK(r.change == Approx(-0.2));
  CHECK(r.worse == Approx(0.2));
}

TEST_CASE("compare: a drop beyond the threshold whose bands overlap is noise, not a regression", "[compare]") {
  // 10% lower, but the baseline itself ranged down to 8.5 and the new run up to 9.6.
  CHECK(judge(bw(10, 8.5, 10.5), bw(9, 8.4, 9.6), 0.05).verdict == Verdict::noise);
}

TEST_CASE("compare: a change within the threshold is the same, however tight the bands", "[compare]") {
  CHECK(judge(bw(10, 10, 10), bw(9.6, 9.6, 9.6), 0.05).verdict == Verdict::same);
  CHECK(judge(lat(10, 10, 10), lat(10.4, 10.4, 10.4), 0.05).verdict == Verdict::same);
}

TEST_CASE("compare: for latency higher is worse, and lower beyond the noise is an improvement", "[compare]") {
  CHECK(judge(lat(10, 9, 11), lat(15, 14, 16), 0.05).verdict == Verdict::regression);
  CHECK(judge(lat(10, 9, 11), lat(6, 5.5, 6.5), 0.05).verdict == Verdict::improvement);
  // More bandwidth is better: never a regression.
  const auto up = judge(bw(10, 9.8, 10.2), bw(12, 11.9, 12.1), 0.05);
  CHECK(up.verdict == Verdict::improvement);
  CHECK(up.worse == Approx(-0.2));
}

TEST_CASE("compare: a figure that was 0 and is no longer has an infinite change", "[compare]") {
  const auto r = judge(lat(0, 0, 0), lat(3, 3, 3), 0.05);
  CHECK(r.verdict == Verdict::regression);
  CHECK(std::isinf(r.change));
}

TEST_CASE("compare: rows come worst first, keys in one run only are listed apart", "[compare]") {
  std::vector<Figure> base{bw(10, 9.9, 10.1), lat(10, 9.9, 10.1),
                           Figure{"2M in-place", "busbw", "GB/s", true, 5, 5, 5}};
  std::vector<Figure> next{bw(12, 11.9, 12.1), lat(20, 19, 21), Figure{"4M in-place", "busbw", "GB/s", true, 5, 5, 5}};
  const Diff d = diff(base, next, 0.05);
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0].verdict == Verdict::regression);
  CHECK(d.rows[0].metric == "lat p50");
  CHECK(d.rows[1].verdict == Verdict::improvement);
  CHECK(d.only_base == std::vector<std::string>{"2M in-place | busbw"});
  CHECK(d.only_new == std::vector<std::string>{"4M in-place | busbw"});
  CHECK(d.count(Verdict::regression) == 1);
}

TEST_CASE("compare: p50's band is +-k sigma, sigma from (p90 - p50) / 1.2816, tails span their neighbours",
          "[compare]") {
  const json s = summary(8, 10, 11.2816, 15, 30, 40);  // sigma 1
  const Band b = p50_band(s, 3);
  CHECK(b.lo == Approx(7));
  CHECK(b.hi == Approx(13));
  CHECK(p50_band(s, 1).hi == Approx(11));
  const Band t = p99_band(s, 3);  // p90..p99.9, at least p99 +- 3
  CHECK(t.lo == Approx(11.2816));
  CHECK(t.hi == Approx(30));
  CHECK(p99_band(summary(8, 10, 11.2816, 15, 15.5, 16), 3).hi == Approx(18));
  const Band u = p999_band(s, 3);  // p99..max
  CHECK(u.lo == Approx(15));
  CHECK(u.hi == Approx(40));
}

TEST_CASE("compare: --threshold takes a percentage, with or without the sign", "[compare]") {
  CHECK(parse_threshold("5%") == Approx(0.05));
  CHECK(parse_threshold("12.5") == Approx(0.125));
  for (const char* bad : {"", "%", "0", "-5%", "5x", "nan", "2000%"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_threshold(bad), UsageError);
  }
}

TEST_CASE("compare: CSV is RFC 4180: quoted where needed, CRLF, a header with units", "[compare]") {
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  Diff d;
  d.rows.push_back(judge(bw(10, 9.9, 10.1), bw(8, 7.9, 8.1), 0.05));
  const std::string csv = diff_csv(d);
  CHECK(csv.rfind("subject,metric,unit,verdict,old (unit),new (unit),change (%),", 0) == 0);
  CHECK(csv.find("\r\n1M out-of-place,busbw,GB/s,regression,10,8,-20,") != std::string::npos);
  CHECK(csv.substr(csv.size() - 2) == "\r\n");
}
