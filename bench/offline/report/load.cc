#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "bench/offline/report/report.h"
#include "bench/offline/report/sections.h"
#include "lib/core/errors.h"

namespace railbench::report {

namespace {

// What `railbench report` draws; a results file of any other command is refused, so a
// newer railbench's new command is named instead of rendered as an empty page.
const std::set<std::string> kCommands{"sendrecv", "allreduce", "allgather", "reducescatter",
                                      "alltoall", "kvcache",   "validate"};

// A results file is a few MB even for a large SU; anything far beyond is not one.
constexpr std::streamoff kMaxFileBytes = 512LL << 20;

}  // namespace

void check_document(const nlohmann::json& doc, const std::string& path) {
  if (!doc.is_object() || doc.value("schema", "") != "railbench.result")
    throw UsageError(fmt::format(
        "{}: not a railbench results file (no \"schema\": \"railbench.result\"); give the file a command wrote "
        "with --json",
        path));
  const auto version = doc.find("schema_version");
  if (version == doc.end() || !version->is_number_integer())
    throw UsageError(
        fmt::format("{}: \"schema_version\" is missing or not an integer; the file is damaged: "
                    "write it again with --json",
                    path));
  const int v = version->get<int>();
  if (v < kOldestSchemaVersion || v > kNewestSchemaVersion)
    throw UsageError(fmt::format(
        "{}: schema_version {} is not one this railbench reads ({}..{}); render it with the railbench that wrote it "
        "(railbench_version {})",
        path, v, kOldestSchemaVersion, kNewestSchemaVersion, doc.value("railbench_version", "unknown")));
  const std::string command = doc.value("command", "");
  if (!kCommands.contains(command)) {
    std::string known;
    for (const auto& c : kCommands) known += (known.empty() ? "" : ", ") + c;
    throw UsageError(fmt::format("{}: unknown command '{}' in the results; report draws {}", path, command, known));
  }
}

RunDocument load_run(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(fmt::format("{}: is a directory: give a results file written with --json", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{}: cannot read the results file (no such file, or no permission)", path));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw UsageError(fmt::format("{}: cannot read the results file (not a regular file)", path));
  if (size > kMaxFileBytes)
    throw UsageError(fmt::format("{}: {} bytes is more than a results file can be (at most {} MB)", path, size,
                                 kMaxFileBytes >> 20));
  in.seekg(0);
  std::stringstream text;
  text << in.rdbuf();
  RunDocument run{path, {}};
  try {
    run.doc = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("{}: not JSON ({}); give a file written by railbench --json", path, e.what()));
  }
  check_document(run.doc, path);
  attach_timeline(run);
  return run;
}

}  // namespace railbench::report
