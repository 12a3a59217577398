#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "bench/kinds/result_kind.h"
#include "bench/offline/report/report.h"
#include "bench/offline/report/sections.h"
#include "lib/core/config_path.h"
#include "lib/core/errors.h"
#include "lib/results/read.h"

namespace railbench::report {

// A results file of a command without a report section is refused, so a newer
// railbench's new command is named instead of rendered as an empty page.
const ResultKind& report_kind(const nlohmann::json& doc, const std::string& path) {
  const std::string command = doc.value("command", "");
  const ResultKind* kind = find_result_kind(command, ResultPart::report_section);
  if (kind == nullptr)
    throw UsageError(fmt::format("{}: unknown command '{}' in the results; report draws {}", path, command,
                                 result_kind_names(ResultPart::report_section)));
  return *kind;
}

void check_document(const nlohmann::json& doc, const std::string& path) {
  check_results_document(doc, path);
  report_kind(doc, path);
}

namespace {

// Past this size a results file is a large SU's validate run: its matrices are read as
// floats (matrix_store.h), which is what keeps a 1,024 x 8 report to seconds.
constexpr uintmax_t kLargeFileBytes = 16ULL << 20;
// lib/results' limit for a reader that skips the pair records: read_results_file names it
// for a file beyond (a real 1,024 x 8 validate file with every rail_pairs is about 3 GB).
constexpr uintmax_t kMaxFileBytes = 8ULL << 30;

// The file mapped read-only: the text is the page cache's, not a copy of GBs.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && st.st_size > 0) {
      size_ = static_cast<size_t>(st.st_size);
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) data_ = static_cast<const char*>(p), ::madvise(p, size_, MADV_SEQUENTIAL);
    }
    const int err = errno;
    if (fd >= 0) ::close(fd);
    if (data_ == nullptr)
      throw UsageError(
          fmt::format("{}: cannot read the results file ({}): give the file a railbench run wrote with "
                      "--json",
                      path, std::strerror(err)));
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view text() const { return {data_, size_}; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

RunDocument read_large(const std::string& path) {
  const MappedFile file(path);
  RunDocument run{path, {}};
  auto store = std::make_shared<MatrixStore>();
  try {
    parse_with_matrices(file.text(), run.doc, *store);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("{}: not JSON ({}); give the file a railbench run wrote with --json", path,
                                 cut_for_error(e.what(), 200)));
  }
  check_results_document(run.doc, path);
  run.matrices = std::move(store);
  return run;
}

}  // namespace

// The report draws none of the pair records (the rails' matrices hold their figures).
const ElementVisitors kSkipPairs{{"rail_pairs", [](const nlohmann::json&) {}}};

RunDocument load_run(const std::string& path) {
  std::error_code ec;
  const uintmax_t bytes = std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
  RunDocument run = !ec && bytes > kLargeFileBytes && bytes <= kMaxFileBytes
                        ? read_large(path)
                        : RunDocument{path, read_results_file(path, "", kSkipPairs)};
  report_kind(run.doc, path);
  attach_timeline(run);
  return run;
}

}  // namespace railbench::report
