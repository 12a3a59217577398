#include "bench/offline/compare/inspector.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/config_path.h"
#include "lib/core/errors.h"

namespace railbench::compare {

using nlohmann::json;

namespace {

// The fix that goes with every refusal of a line: most bad lines are the last one of a
// process that was killed while the Inspector was writing it.
constexpr const char* kLineFix =
    "each line must be one JSON object as the NCCL Inspector writes it (header, metadata, coll_perf); "
    "a line cut short because the job was killed is usually the file's last: delete that line";

[[noreturn]] void bad_line(const std::string& file, size_t line, const std::string& what) {
  throw UsageError(fmt::format("compare --job: {}:{}: {}: {}", file, line, what, kLineFix));
}

const json& field(const json& obj, const char* section, const char* key, const std::string& file, size_t line) {
  const auto s = obj.find(section);
  if (s == obj.end() || !s->is_object()) bad_line(file, line, fmt::format("no \"{}\" object", section));
  const auto v = s->find(key);
  if (v == s->end()) bad_line(file, line, fmt::format("no {}.{}", section, key));
  return *v;
}

template <typename T>
T number(const json& obj, const char* section, const char* key, const std::string& file, size_t line) {
  const json& v = field(obj, section, key, file, line);
  // coll_exec_time_us and the sizes are unsigned integers; rank and n_ranks ints.
  if (!v.is_number() || (std::is_integral_v<T> && !v.is_number_integer()) ||
      (std::is_unsigned_v<T> && v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0)) {
    bad_line(file, line,
             fmt::format("{}.{} is {}, not a {}", section, key, cut_for_error(v.dump(), 40),
                         std::is_integral_v<T> ? "whole number" : "number"));
  }
  return v.get<T>();
}

std::string text(const json& obj, const char* section, const char* key, const std::string& file, size_t line) {
  const json& v = field(obj, section, key, file, line);
  if (!v.is_string()) bad_line(file, line, fmt::format("{}.{} is not a string", section, key));
  return v.get<std::string>();
}

std::vector<std::string> expand(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      files.push_back(p);
      continue;
    }
    std::vector<std::string> in_dir;
    for (const auto& e : fs::directory_iterator(p, ec))
      if (e.is_regular_file()) in_dir.push_back(e.path().string());
    if (in_dir.empty())
      throw UsageError(
          fmt::format("compare --job: {}: an empty directory: give the Inspector's dump directory "
                      "(NCCL_INSPECTOR_DUMP_DIR) after the job wrote to it, or its files",
                      p));
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  return files;
}

}  // namespace

InspectorRecord parse_inspector_line(const std::string& line_text, const std::string& file, size_t line) {
  // The Inspector's Prometheus mode writes text metrics instead: say which mode to use.
  if (line_text.rfind("nccl_", 0) == 0 || line_text.rfind("# HELP", 0) == 0 || line_text.rfind("# TYPE", 0) == 0) {
    throw UsageError(
        fmt::format("compare --job: {}:{}: the NCCL Inspector's Prometheus output, not its JSON: rerun the job with "
                    "NCCL_INSPECTOR_PROM_DUMP=0 (the default) so that it writes one JSON object per collective",
                    file, line));
  }
  json j = json::parse(line_text, nullptr, false);
  if (j.is_discarded()) bad_line(file, line, fmt::format("not JSON ({})", cut_for_error(line_text, 60)));
  if (!j.is_object()) bad_line(file, line, "not a JSON object");
  InspectorRecord r;
  r.file = file;
  r.line = line;
  r.comm = text(j, "header", "id", file, line);
  r.rank = number<int>(j, "header", "rank", file, line);
  r.nranks = number<int>(j, "header", "n_ranks", file, line);
  if (r.nranks < 1 || r.rank < 0 || r.rank >= r.nranks)
    bad_line(file, line, fmt::format("header.rank {} is not a rank of header.n_ranks {}", r.rank, r.nranks));
  if (j.contains("metadata") && j["metadata"].is_object() && j["metadata"].value("hostname", json()).is_string())
    r.host = j["metadata"]["hostname"].get<std::string>();
  r.coll = text(j, "coll_perf", "coll", file, line);
  r.sn = number<uint64_t>(j, "coll_perf", "coll_sn", file, line);
  r.msg_bytes = number<uint64_t>(j, "coll_perf", "coll_msg_size_bytes", file, line);
  r.exec_us = number<double>(j, "coll_perf", "coll_exec_time_us", file, line);
  if (r.exec_us < 0) bad_line(file, line, "coll_perf.coll_exec_time_us is negative");
  // The Inspector writes a NaN bandwidth as the string "nan": no figure, not an error.
  const json& perf = j["coll_perf"];
  if (perf.contains("coll_busbw_gbs") && perf["coll_busbw_gbs"].is_number())
    r.file_busbw = perf["coll_busbw_gbs"].get<double>();
  if (perf.contains("coll_timing_source") && perf["coll_timing_source"].is_string())
    r.timing_source = perf["coll_timing_source"].get<std::string>();
  return r;
}

void read_inspector_files(const std::vector<std::string>& paths,
                          const std::function<void(const InspectorRecord&)>& visit) {
  for (const auto& file : expand(paths)) {
    std::ifstream in(file);
    if (!in) {
      throw UsageError(
          fmt::format("compare --job: {}: cannot read the Inspector file (no such file, or no "
                      "permission): give the files the job's NCCL Inspector wrote",
                      file));
    }
    std::string line_text;
    size_t line = 0;
    while (std::getline(in, line_text)) {
      ++line;
      if (std::all_of(line_text.begin(), line_text.end(), [](unsigned char c) { return std::isspace(c); })) continue;
      visit(parse_inspector_line(line_text, file, line));
    }
  }
}

std::vector<InspectorRecord> read_inspector_files(const std::vector<std::string>& paths) {
  std::vector<InspectorRecord> out;
  read_inspector_files(paths, [&](const InspectorRecord& r) { out.push_back(r); });
  return out;
}

bool looks_like_inspector(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return true;
  std::ifstream in(path);
  std::string line_text;
  while (std::getline(in, line_text)) {
    const auto first = line_text.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    if (line_text.rfind("nccl_", first) == first || line_text.rfind("# ", first) == first) return true;
    // A results file (--json) is one indented document: its first line is "{" alone.
    return line_text[first] == '{' && line_text.find("coll_perf") != std::string::npos;
  }
  // Empty: the Inspector opens its file at its first dump, before any collective ended.
  return in.eof() && !in.bad() && std::filesystem::is_regular_file(path, ec);
}

std::string railbench_collective(const std::string& nccl_coll) {
  if (nccl_coll == "Send" || nccl_coll == "Recv" || nccl_coll == "SendRecv") return "sendrecv";
  std::string out;
  for (unsigned char c : nccl_coll) out += static_cast<char>(std::tolower(c));
  return out;
}

std::optional<Pattern> pattern_of(const std::string& collective) {
  if (collective == "allreduce") return Pattern::all_reduce;
  if (collective == "allgather") return Pattern::all_gather;
  if (collective == "reducescatter") return Pattern::reduce_scatter;
  if (collective == "alltoall") return Pattern::all_to_all;
  if (collective == "broadcast") return Pattern::broadcast;
  if (collective == "sendrecv") return Pattern::send_recv;
  return std::nullopt;
}

uint64_t collective_bytes(const std::string& collective, uint64_t msg_bytes, int nranks) {
  if (collective == "allgather" || collective == "reducescatter" || collective == "alltoall")
    return msg_bytes * static_cast<uint64_t>(nranks);
  return msg_bytes;
}

}  // namespace railbench::compare
