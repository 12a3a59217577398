#include "lib/results/read.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "lib/core/config_path.h"
#include "lib/core/errno_text.h"
#include "lib/core/errors.h"

namespace railbench {

namespace {

// A whole document as JSON values takes several times its file's size: past this, only a
// reader that visits the large arrays (compare, export, the report) reads the file.
constexpr uintmax_t kMaxFileBytes = 512ULL << 20;
// A real 1,024-node x 8-rail validate file with all its pair records is about 3 GB
// (lib/results/README.md); anything far beyond is not a results file.
constexpr uintmax_t kMaxVisitedFileBytes = 8ULL << 30;

std::string size_text(uintmax_t bytes) {
  return bytes >= (1ULL << 30) ? fmt::format("{:.1f} GB", static_cast<double>(bytes) / (1ULL << 30))
                               : fmt::format("{} MB", bytes >> 20);
}

// Hands each element of a visited top-level array to its function and keeps it out of
// the document (nlohmann's parse callback: depth 1 is a top-level member, 2 its element).
struct Visiting {
  const ElementVisitors& visit;
  std::string key;
  const std::function<void(const nlohmann::json&)>* in = nullptr;
  bool operator()(int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (depth == 1 && ev == E::key) {
      key = parsed.get<std::string>();
    } else if (depth == 1 && ev == E::array_start) {
      const auto it = visit.find(key);
      in = it == visit.end() ? nullptr : &it->second;
    } else if (depth == 1 && ev == E::array_end) {
      in = nullptr;
    } else if (in != nullptr && depth == 2 && (ev == E::object_end || ev == E::array_end || ev == E::value)) {
      (*in)(parsed);
      return false;
    }
    return true;
  }
};

// "compare: a.json", or "a.json" for a reader that names no option.
std::string subject(const std::string& path, const std::string& who) {
  return who.empty() ? path : fmt::format("{}: {}", who, path);
}

}  // namespace

void check_results_document(const nlohmann::json& doc, const std::string& path, const std::string& who) {
  try {
    validate_result_document(doc);
  } catch (const IoError& e) {
    throw UsageError(fmt::format("{}: {}", subject(path, who), e.what()));
  }
}

nlohmann::json read_results_file(const std::string& path, const std::string& who) {
  return read_results_file(path, who, ElementVisitors{});
}

nlohmann::json read_results_file(const std::string& path, const std::string& who, const ElementVisitors& visit) {
  const std::string name = subject(path, who);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(fmt::format("{}: is a directory: give a results file written with --json", name));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UsageError(
        fmt::format("{}: cannot read the results file ({}): give the file a railbench run wrote with --json", name,
                    errno_text(errno)));
  // A regular file is measured first; a fifo (<(zcat r.json.gz)) is read as it comes.
  const auto bytes = std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
  if (!ec && bytes > kMaxVisitedFileBytes)
    throw UsageError(
        fmt::format("{}: {} bytes ({}) is more than a results file can be (at most {}, and a "
                    "1,024-node x 8-rail validate file is about 3 GB): give the file a railbench run "
                    "wrote with --json",
                    name, bytes, size_text(bytes), size_text(kMaxVisitedFileBytes)));
  if (!ec && bytes > kMaxFileBytes && visit.empty())
    throw UsageError(
        fmt::format("{}: {} bytes ({}) is more than this reader takes whole (at most {}); a large "
                    "SU's validate file (up to {}) is read by railbench report, compare and export",
                    name, bytes, size_text(bytes), size_text(kMaxFileBytes), size_text(kMaxVisitedFileBytes)));
  nlohmann::json doc;
  try {
    // Parsed as it is read: the text is never held whole.
    doc = nlohmann::json::parse(in, Visiting{visit});
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("{}: not JSON ({}); give the file a railbench run wrote with --json", name,
                                 cut_for_error(e.what(), 200)));
  }
  check_results_document(doc, path, who);
  return doc;
}

}  // namespace railbench
