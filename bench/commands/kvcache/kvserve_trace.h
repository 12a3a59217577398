// Request traces for kvcache --serve, pure logic: the public formats by their columns,
// each line's arrival time and token counts, and an error naming the line and the field.
//   azure:    CSV with a header TIMESTAMP,ContextTokens,GeneratedTokens (Azure LLM
//             inference traces; TIMESTAMP as "2023-11-16 18:15:46.6805900" or seconds)
//   burstgpt: CSV with a header holding Timestamp, Request tokens, Response tokens
//             (BurstGPT; Timestamp in seconds)
//   mooncake: JSONL, one object a line with timestamp (ms), input_length,
//             output_length, hash_ids (one id per 512-token block)
// The format is told by the first line. Fixtures: tests/kvcache/make_trace_fixtures.py.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace railbench {

struct TraceRequest {
  double arrival_s = 0;  // from the trace's first request
  uint64_t input_tokens = 0;
  uint64_t output_tokens = 0;
  std::vector<uint64_t> hash_ids;  // mooncake only
};

struct Trace {
  std::string format;  // azure, burstgpt, mooncake
  std::vector<TraceRequest> requests;
};

// `name` is used in errors ("FILE line N: field 'X' ..."). Times going backwards, a
// missing or non-numeric column, and an unknown header are UsageErrors. `time_scale`
// divides the gaps (2: twice as fast); must be above 0.
Trace parse_trace(std::istream& in, const std::string& name, double time_scale = 1);

}  // namespace railbench
