// A directory tree made for one test in the system's temp directory and removed with it:
// fake sysfs trees (counters, PCI topology) are written into one.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace railbench::testing {

class TempTree {
 public:
  // `name`: what the directory is for, in its name (railbench-NAME-XXXXXX).
  explicit TempTree(const std::string& name) {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("railbench-" + name + "-XXXXXX")).string();
    root_ = ::mkdtemp(tmpl.data());
  }
  ~TempTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::filesystem::path& root() const { return root_; }
  // Writes `text` and a newline (as sysfs files end) to `rel`, making its directories.
  void write(const std::filesystem::path& rel, const std::string& text) const {
    std::filesystem::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text << "\n";
  }
  void remove(const std::filesystem::path& rel) const { std::filesystem::remove(root_ / rel); }

 private:
  std::filesystem::path root_;
};

}  // namespace railbench::testing
