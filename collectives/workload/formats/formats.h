// The outside trace formats railbench reads and writes: which one a file is (by its
// content, not its name), each format's reader for one rank's file, its writer (for the
// project's own fixtures: the same step in every format), and --trace's files as a whole.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "collectives/workload/formats/import.h"

namespace railbench::workload::formats {

enum class TraceFormat { railbench, chakra, param, pytorch };
const char* to_string(TraceFormat f);
// "railbench", "chakra", "param", "pytorch"; throws UsageError naming `option`.
TraceFormat parse_format(const std::string& s, const std::string& option);

// A file's bytes, gunzipped when it is gzip (zlib reads plain files as they are).
// Throws IoError naming the file, UsageError for one that is not a regular file or holds
// more than kMaxTraceFileBytes.
inline constexpr size_t kMaxTraceFileBytes = size_t{1} << 30;
std::string read_file_bytes(const std::string& path);
// The format of a file's bytes: JSON with "format": "railbench-workload-trace", a JSON
// list of records with "comms" (PARAM), JSON with "nodes" (PyTorch ET), otherwise a
// protobuf stream (Chakra). Throws UsageError naming the file when it is none.
TraceFormat detect_format(std::string_view bytes, const std::string& file);

// One rank's file (`rank`: its trace rank, for the formats that name peers relative to it).
RankTrace read_chakra(std::string_view bytes, const std::string& file);
RankTrace read_param(const nlohmann::json& j, const std::string& file, int rank);
RankTrace read_pytorch(const nlohmann::json& j, const std::string& file, int rank);

// Rank `rank`'s part of `t` in each format (routed all-to-all-v cannot be written: the
// writers refuse it).
std::string write_chakra(const Trace& t, int rank);
nlohmann::json write_param(const Trace& t, int rank);
nlohmann::json write_pytorch(const Trace& t, int rank);

// --trace PATTERN as a whole: railbench's own JSON (one file holds every rank), or one
// file per rank of an outside format, `{rank}` in the pattern standing for the rank
// (0, 1, ... up to the first that does not exist). Every rank of a job reads every file:
// the checks need every rank's ops. The result is checked (check_trace) and not folded.
Trace load_trace_files(const std::string& pattern, const ImportOptions& o);
// The files' count for a pattern with {rank}: 0, 1, ... up to the first missing.
int count_rank_files(const std::string& pattern);
std::string rank_file(const std::string& pattern, int rank);
// Writes `t` as `format`: railbench's one file, or one file per rank ({rank} needed).
// Returns the files written. Throws IoError naming a file it cannot write.
std::vector<std::string> write_trace_files(const Trace& t, const std::string& pattern, TraceFormat format);

}  // namespace railbench::workload::formats
