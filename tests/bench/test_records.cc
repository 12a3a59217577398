#include <catch2/catch.hpp>

#include "bench/runner/records.h"

using namespace railbench;
using nlohmann::json;

namespace {

Summary sample_summary(double base) {
  return Summary{.count = 100,
                 .min = base,
                 .max = base * 10,
                 .mean = base * 2,
                 .stdev = base / 3,
                 .p50 = base * 1.5,
                 .p90 = base * 3,
                 .p99 = base * 5,
                 .p999 = base * 9};
}

}  // namespace

TEST_CASE("collective records survive a JSON round trip", "[results]") {
  CollectiveRecord r;
  r.bytes = 4194304;
  r.count = 1048576;
  r.type = "float";
  r.redop = "sum";
  r.root = -1;
  r.algo = "ring";
  r.out_of_place = CollectiveSide{123.5, 33.9, 50.8, 0, sample_summary(120)};
  r.in_place = CollectiveSide{120.25, 34.8, 52.2, 3, sample_summary(118)};
  const json j = json::parse(to_json(r).dump());
  CHECK(collective_from_json(j) == r);
  CHECK(j.at("out_of_place").at("busbw_gbps") == 50.8);
  CHECK(j.at("in_place").at("iteration_us").at("p99_9") == Approx(118 * 9));
}

TEST_CASE("send/recv records survive a JSON round trip", "[results]") {
  SendRecvRecord r;
  r.bytes = 65536;
  r.op = "send";
  r.pairs.push_back(
      PairRecord{0, 1, 0, sample_summary(3), sample_summary(10), sample_summary(11), sample_summary(19), 0});
  r.pairs.push_back(
      PairRecord{2, 3, 1, sample_summary(4), sample_summary(9), sample_summary(8), sample_summary(17), 5});
  CHECK(sendrecv_from_json(json::parse(to_json(r).dump())) == r);
}

TEST_CASE("a missing field is an error that names it", "[results]") {
  json j = to_json(SendRecvRecord{8, "send", {PairRecord{}}});
  j["pairs"][0].erase("latency_us");
  CHECK_THROWS(sendrecv_from_json(j));
}
