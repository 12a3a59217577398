#include "lib/results/read.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "lib/core/config_path.h"
#include "lib/core/errors.h"

namespace railbench {

namespace {

// A results file is a few MB even for a large SU; anything far beyond is not one.
constexpr uintmax_t kMaxFileBytes = 512ULL << 20;

// "compare: a.json", or "a.json" for a reader that names no option.
std::string subject(const std::string& path, const std::string& who) {
  return who.empty() ? path : fmt::format("{}: {}", who, path);
}

// strerror with a lower-case first letter, to sit inside a sentence.
std::string errno_text(int err) {
  std::string s = std::strerror(err);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
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
  if (!ec && bytes > kMaxFileBytes)
    throw UsageError(fmt::format("{}: {} bytes is more than a results file can be (at most {} MB)", name, bytes,
                                 kMaxFileBytes >> 20));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("{}: not JSON ({}); give the file a railbench run wrote with --json", name,
                                 cut_for_error(e.what(), 200)));
  }
  check_results_document(doc, path, who);
  return doc;
}

}  // namespace railbench
