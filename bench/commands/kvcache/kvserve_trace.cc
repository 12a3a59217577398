#include "bench/commands/kvcache/kvserve_trace.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/errors.h"

namespace railbench {

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) {
    while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' ')) cell.pop_back();
    while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
    out.push_back(cell);
  }
  return out;
}

[[noreturn]] void bad(const std::string& name, size_t line, const std::string& field, const std::string& why) {
  throw UsageError(fmt::format("--trace {} line {}: field '{}' {}", name, line, field, why));
}

double number(const std::string& text, const std::string& name, size_t line, const std::string& field) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v) && v >= 0) return v;
  } catch (const std::logic_error&) {
  }
  bad(name, line, field, fmt::format("is '{}', not a number 0 or above", text));
}

// Azure's "2023-11-16 18:15:46.6805900" (UTC) or plain seconds.
double azure_time(const std::string& text, const std::string& name, size_t line) {
  std::tm tm{};
  char rest[32] = {};
  if (text.size() > 10 && text[4] == '-' &&
      std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%d%31s", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, rest) >= 6) {
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    const double frac = rest[0] == '.' ? std::stod(std::string("0") + rest) : 0.0;
    return static_cast<double>(timegm(&tm)) + frac;
  }
  return number(text, name, line, "TIMESTAMP");
}

size_t column(const std::vector<std::string>& header, const std::string& want, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == want) return i;
  throw UsageError(fmt::format("--trace {} line 1: no column '{}' in the header", name, want));
}

}  // namespace

Trace parse_trace(std::istream& in, const std::string& name, double time_scale) {
  if (!std::isfinite(time_scale) || time_scale <= 0)
    throw UsageError(fmt::format("--time-scale {} must be above 0 (2: twice as fast)", time_scale));
  Trace t;
  std::string line;
  if (!std::getline(in, line)) throw UsageError(fmt::format("--trace {} is empty", name));
  size_t n = 1;
  std::vector<double> times;
  const auto add = [&](double when, TraceRequest r, size_t at, const char* field) {
    if (!times.empty() && when < times.back())
      bad(name, at, field, fmt::format("goes backwards ({} after {}): sort the trace by time", when, times.back()));
    times.push_back(when);
    t.requests.push_back(std::move(r));
  };
  if (!line.empty() && line.front() == '{') {
    t.format = "mooncake";
    do {
      if (line.empty() || line == "\r") continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const std::exception&) {
        throw UsageError(fmt::format("--trace {} line {}: not a JSON object", name, n));
      }
      TraceRequest r;
      double when = 0;
      for (const char* f : {"timestamp", "input_length", "output_length"}) {
        if (!j.contains(f) || !j[f].is_number() || j[f].get<double>() < 0)
          bad(name, n, f, "is missing or not a number 0 or above");
      }
      when = j["timestamp"].get<double>() / 1e3;
      r.input_tokens = j["input_length"].get<uint64_t>();
      r.output_tokens = j["output_length"].get<uint64_t>();
      if (j.contains("hash_ids")) {
        if (!j["hash_ids"].is_array()) bad(name, n, "hash_ids", "is not an array of block ids");
        for (const auto& h : j["hash_ids"]) {
          if (!h.is_number_unsigned()) bad(name, n, "hash_ids", "holds a value that is not a block id");
          r.hash_ids.push_back(h.get<uint64_t>());
        }
      }
      add(when, std::move(r), n, "timestamp");
    } while (++n, std::getline(in, line));
  } else {
    const auto header = split_csv(line);
    const bool azure = !header.empty() && header[0] == "TIMESTAMP";
    t.format = azure ? "azure" : "burstgpt";
    const std::string tf = azure ? "TIMESTAMP" : "Timestamp";
    const std::string inf = azure ? "ContextTokens" : "Request tokens";
    const std::string outf = azure ? "GeneratedTokens" : "Response tokens";
    if (!azure && std::find(header.begin(), header.end(), "Timestamp") == header.end())
      throw UsageError(fmt::format(
          "--trace {} line 1: not a trace this knows: expected a CSV header TIMESTAMP,ContextTokens,GeneratedTokens "
          "(Azure) or one with Timestamp, Request tokens, Response tokens (BurstGPT), or JSONL (Mooncake)",
          name));
    const size_t ti = column(header, tf, name), ii = column(header, inf, name), oi = column(header, outf, name);
    while (++n, std::getline(in, line)) {
      if (line.empty() || line == "\r") continue;
      const auto cells = split_csv(line);
      for (const auto& [i, f] : {std::pair{ti, tf}, std::pair{ii, inf}, std::pair{oi, outf}})
        if (i >= cells.size()) bad(name, n, f, "is missing");
      TraceRequest r;
      r.input_tokens = static_cast<uint64_t>(number(cells[ii], name, n, inf));
      r.output_tokens = static_cast<uint64_t>(number(cells[oi], name, n, outf));
      const double when = azure ? azure_time(cells[ti], name, n) : number(cells[ti], name, n, tf);
      add(when, std::move(r), n, tf.c_str());
    }
  }
  if (t.requests.empty()) throw UsageError(fmt::format("--trace {} has a header but no requests", name));
  for (size_t i = 0; i < times.size(); ++i) t.requests[i].arrival_s = (times[i] - times[0]) / time_scale;
  return t;
}

}  // namespace railbench
