#include <cstring>

#include "lib/runtime/bootstrap.h"

namespace railbench {

namespace {

class SingleBootstrap final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string kind() const override { return "single"; }
  void all_gather(std::span<const std::byte> in, std::span<std::byte> out) override {
    std::memcpy(out.data(), in.data(), in.size());
  }
  void barrier() override {}

 protected:
  std::vector<std::vector<uint8_t>> gather_blocks(std::span<const uint8_t> in, int) override {
    return {std::vector<uint8_t>(in.begin(), in.end())};
  }
};

}  // namespace

std::unique_ptr<Bootstrap> make_single_bootstrap() {
  return std::make_unique<SingleBootstrap>();
}

}  // namespace railbench
