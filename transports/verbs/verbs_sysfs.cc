#include "transports/verbs/verbs_sysfs.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

namespace railbench::verbs {

namespace {

std::string read_first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

void print_sysfs_devices() {
  const std::filesystem::path root = "/sys/class/infiniband";
  std::error_code ec;
  if (!std::filesystem::exists(root, ec)) {
    fmt::print(
        "verbs devices: none (no /sys/class/infiniband: this kernel has no RDMA, or no RDMA device; "
        "see scripts/rxe-vm for soft-RoCE)\n");
    return;
  }
  bool any = false;
  for (const auto& dev : std::filesystem::directory_iterator(root, ec)) {
    for (const auto& port : std::filesystem::directory_iterator(dev.path() / "ports", ec)) {
      any = true;
      fmt::print("verbs device {} port {}: state {}, rate {}, link layer {}\n", dev.path().filename().string(),
                 port.path().filename().string(), read_first_line(port.path() / "state"),
                 read_first_line(port.path() / "rate"), read_first_line(port.path() / "link_layer"));
    }
  }
  if (!any) fmt::print("verbs devices: none\n");
}

}  // namespace railbench::verbs
