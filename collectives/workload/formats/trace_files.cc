// --trace's files: the format told by content, gzip read through zlib, one file per rank
// ('{rank}' in the pattern) joined into one Trace; and the writers' files.
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "collectives/workload/formats/formats.h"
#include "lib/core/config_path.h"
#include "lib/core/errors.h"

namespace railbench::workload::formats {

using nlohmann::json;

const char* to_string(TraceFormat f) {
  switch (f) {
    case TraceFormat::railbench: return "railbench";
    case TraceFormat::chakra: return "chakra";
    case TraceFormat::param: return "param";
    case TraceFormat::pytorch: return "pytorch";
  }
  return "?";
}

TraceFormat parse_format(const std::string& s, const std::string& option) {
  for (TraceFormat f : {TraceFormat::railbench, TraceFormat::chakra, TraceFormat::param, TraceFormat::pytorch})
    if (s == to_string(f)) return f;
  throw UsageError(fmt::format("{} '{}': use railbench, chakra, param or pytorch", option, s));
}

std::string read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw UsageError(
        fmt::format("{}: not a regular file (a fifo or a device would never end): give a trace file", path));
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw IoError(
        fmt::format("{}: cannot open it (check the path; a per-rank trace names its files with {{rank}})", path));
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxTraceFileBytes) {
      gzclose(f);
      throw UsageError(
          fmt::format("{}: more than {} GiB (unzipped): one rank's step is far smaller; is it the "
                      "trace of a whole run?",
                      path, kMaxTraceFileBytes >> 30));
    }
  }
  int err = 0;
  const std::string msg = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0) throw IoError(fmt::format("{}: cannot read it: {} (a gzip file cut short?)", path, msg));
  return out;
}

TraceFormat detect_format(std::string_view bytes, const std::string& file) {
  const auto first = bytes.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) throw UsageError(fmt::format("{}: the file is empty", file));
  // JSON nested beyond any trace's depth is refused before it is parsed.
  if (bytes[first] == '{' || bytes[first] == '[') check_config_nesting(std::string(bytes), file);
  const json j = json::parse(bytes, nullptr, false);
  if (!j.is_discarded()) {
    if (j.is_object() && j.value("format", "") == "railbench-workload-trace") return TraceFormat::railbench;
    if (j.is_array() && (j.empty() || (j[0].is_object() && (j[0].contains("comms") || j[0].contains("compute")))))
      return TraceFormat::param;
    if (j.is_object() && j.contains("nodes")) return TraceFormat::pytorch;
    throw UsageError(
        fmt::format("{}: JSON, but none of the trace formats railbench reads (railbench's own with "
                    "\"format\", PARAM's list of \"comms\" records, PyTorch ET with \"nodes\")",
                    file));
  }
  if (bytes[first] == '{' || bytes[first] == '[')
    throw UsageError(fmt::format("{}: starts as JSON but does not parse (cut short?)", file));
  return TraceFormat::chakra;
}

std::string rank_file(const std::string& pattern, int rank) {
  std::string out = pattern;
  for (size_t p; (p = out.find("{rank}")) != std::string::npos;) out.replace(p, 6, std::to_string(rank));
  return out;
}

int count_rank_files(const std::string& pattern) {
  int n = 0;
  while (std::filesystem::exists(rank_file(pattern, n))) ++n;
  return n;
}

namespace {

// railbench's own trace: --compute-scale and --no-compute apply to its compute ops too.
Trace scaled(Trace t, const ImportOptions& o) {
  for (auto& ops : t.ranks) {
    for (Op& op : ops) op.us *= o.compute_scale;
    if (o.no_compute)
      ops.erase(std::remove_if(ops.begin(), ops.end(), [](const Op& op) { return op.type == OpType::compute; }),
                ops.end());
  }
  return t;
}

RankTrace read_rank(const std::string& file, int rank, TraceFormat& format) {
  const std::string bytes = read_file_bytes(file);
  const TraceFormat f = detect_format(bytes, file);
  if (rank > 0 && f != format)
    throw UsageError(fmt::format("{}: a {} trace, but rank 0's file is {}: give one format for every rank", file,
                                 to_string(f), to_string(format)));
  format = f;
  if (f == TraceFormat::railbench)
    throw UsageError(
        fmt::format("{}: railbench's own trace holds every rank: give it as --trace FILE, without {{rank}}", file));
  if (f == TraceFormat::chakra) return read_chakra(bytes, file);
  try {
    const json j = json::parse(bytes);
    return f == TraceFormat::param ? read_param(j, file, rank) : read_pytorch(j, file, rank);
  } catch (const json::exception& e) {
    // A field of an unexpected JSON type (a string where a count belongs, ...).
    throw UsageError(fmt::format("{}: a field of the wrong type for a {} trace ({})", file, to_string(f), e.what()));
  }
}

}  // namespace

Trace load_trace_files(const std::string& pattern, const ImportOptions& o) {
  if (pattern.find("{rank}") == std::string::npos) {
    const std::string bytes = read_file_bytes(pattern);
    const TraceFormat f = detect_format(bytes, pattern);
    if (f != TraceFormat::railbench)
      throw UsageError(
          fmt::format("--trace {}: a {} trace is one file per rank: give them as --trace "
                      "'DIR/name.{{rank}}.{}' ({{rank}} stands for 0, 1, ...)",
                      pattern, to_string(f), f == TraceFormat::chakra ? "et" : "json"));
    return scaled(trace_from_json(json::parse(bytes), pattern), o);
  }
  const int world = count_rank_files(pattern);
  if (world == 0)
    throw IoError(fmt::format("--trace {}: there is no {} (the first rank's file)", pattern, rank_file(pattern, 0)));
  std::vector<RankTrace> ranks;
  TraceFormat format = TraceFormat::railbench;
  for (int r = 0; r < world; ++r) ranks.push_back(read_rank(rank_file(pattern, r), r, format));
  Trace t = to_trace(ranks, o);
  t.meta["trace"] = pattern;
  check_trace(t);
  return t;
}

namespace {

// One JSON value per line: a PARAM list's records, a PyTorch ET's nodes.
std::string lines(const json& j) {
  const json& list = j.is_array() ? j : j.at("nodes");
  std::string body;
  for (size_t i = 0; i < list.size(); ++i) body += (i ? ",\n " : " ") + list[i].dump();
  if (j.is_array()) return "[\n" + body + "\n]\n";
  json head = j;
  head.erase("nodes");
  std::string h = head.dump();
  h.pop_back();
  return h + ",\n\"nodes\": [\n" + body + "\n]}\n";
}

void write_bytes(const std::string& path, const std::string& bytes) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    const bool ok =
        f && gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size());
    if (!f || gzclose(f) != Z_OK || !ok)
      throw IoError(fmt::format("{}: cannot write it (check the folder exists)", path));
    return;
  }
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) throw IoError(fmt::format("{}: cannot write it (check the folder exists and is writable)", path));
}

}  // namespace

std::vector<std::string> write_trace_files(const Trace& t, const std::string& pattern, TraceFormat format) {
  if (format == TraceFormat::railbench) {
    write_bytes(pattern, to_json(t).dump(1) + "\n");
    return {pattern};
  }
  if (pattern.find("{rank}") == std::string::npos)
    throw UsageError(
        fmt::format("--emit-trace {}: a {} trace is one file per rank: put {{rank}} in the name (e.g. "
                    "step.{{rank}}.{})",
                    pattern, to_string(format), format == TraceFormat::chakra ? "et" : "json"));
  std::vector<std::string> files;
  for (int r = 0; r < t.world; ++r) {
    files.push_back(rank_file(pattern, r));
    write_bytes(files.back(), format == TraceFormat::chakra  ? write_chakra(t, r)
                              : format == TraceFormat::param ? lines(write_param(t, r))
                                                             : lines(write_pytorch(t, r)));
  }
  return files;
}

}  // namespace railbench::workload::formats
