// kvcache --serve's trace parsers on the fixtures (tests/kvcache/make_trace_fixtures.py)
// and on malformed lines: each error names the line and the field.
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "bench/commands/kvcache/kvserve_trace.h"
#include "lib/core/errors.h"

using namespace railbench;

namespace {

Trace fixture(const std::string& file, double scale = 1) {
  std::ifstream in(std::string(RAILBENCH_KV_FIXTURES) + "/" + file);
  REQUIRE(in.good());
  return parse_trace(in, file, scale);
}

std::string error_of(const std::string& text) {
  std::istringstream in(text);
  try {
    parse_trace(in, "t");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("trace fixtures: each format read by its columns, times from 0, in order", "[kvcache][serve]") {
  for (const auto& [file, format] : {std::pair{"azure.csv", "azure"}, std::pair{"burstgpt.csv", "burstgpt"},
                                     std::pair{"mooncake.jsonl", "mooncake"}}) {
    DYNAMIC_SECTION(file) {
      const Trace t = fixture(file);
      CHECK(t.format == format);
      REQUIRE(t.requests.size() == 50);
      CHECK(t.requests[0].arrival_s == 0);
      // The generator's first two requests: 382 and 485 prompt tokens, 68.8 ms apart.
      CHECK(t.requests[0].input_tokens == 382);
      CHECK(t.requests[0].output_tokens == 339);
      CHECK(t.requests[1].input_tokens == 485);
      CHECK(t.requests[1].arrival_s == Approx(0.0688).margin(0.001));
      for (size_t i = 1; i < t.requests.size(); ++i) CHECK(t.requests[i].arrival_s >= t.requests[i - 1].arrival_s);
      // 50 arrivals at 20/s span about 2.5 s.
      CHECK(t.requests.back().arrival_s == Approx(2.5).epsilon(0.5));
    }
  }
  const Trace m = fixture("mooncake.jsonl");
  CHECK(m.requests[2].hash_ids == std::vector<uint64_t>{0, 1, 2});
  // --time-scale 2 replays twice as fast.
  CHECK(fixture("burstgpt.csv", 2).requests.back().arrival_s ==
        Approx(fixture("burstgpt.csv").requests.back().arrival_s / 2));
}

TEST_CASE("trace errors name the line and the field", "[kvcache][serve]") {
  CHECK_THAT(error_of("TIMESTAMP,ContextTokens,GeneratedTokens\n1.0,10,5\n2.0,abc,5\n"),
             Catch::Contains("line 3: field 'ContextTokens' is 'abc'"));
  CHECK_THAT(error_of("TIMESTAMP,ContextTokens,GeneratedTokens\n1.0,10\n"),
             Catch::Contains("line 2: field 'GeneratedTokens' is missing"));
  CHECK_THAT(error_of("Timestamp,Request tokens,Response tokens\n5,1,1\n4,1,1\n"),
             Catch::Contains("line 3: field 'Timestamp' goes backwards"));
  CHECK_THAT(error_of("Timestamp,Request tokens\n5,1\n"), Catch::Contains("line 1: no column 'Response tokens'"));
  CHECK_THAT(error_of("when,tokens\n"), Catch::Contains("line 1: not a trace this knows"));
  CHECK_THAT(error_of("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 5}\n"),
             Catch::Contains("line 2: field 'input_length' is missing"));
  CHECK_THAT(error_of("{\"timestamp\": 10, \"input_length\": 1, \"output_length\": 1}\n"
                      "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n"),
             Catch::Contains("line 2: field 'timestamp' goes backwards"));
  CHECK_THAT(error_of("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [\"x\"]}\n"),
             Catch::Contains("line 1: field 'hash_ids'"));
  CHECK_THAT(error_of("{\"timestamp\": 0,\n"), Catch::Contains("line 1: not a JSON object"));
  CHECK_THAT(error_of(""), Catch::Contains("is empty"));
  CHECK_THAT(error_of("Timestamp,Request tokens,Response tokens\n"), Catch::Contains("no requests"));
  std::istringstream in("Timestamp,Request tokens,Response tokens\n1,1,1\n");
  CHECK_THROWS_WITH(parse_trace(in, "t", 0), Catch::Contains("--time-scale 0 must be above 0"));
}
