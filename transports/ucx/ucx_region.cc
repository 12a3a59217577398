// A region of the UCX transport (ucx_region.h).
#include "transports/ucx/ucx_region.h"

#include <algorithm>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::ucx {

namespace {

class UcxRegion : public MemoryRegion {
 public:
  UcxRegion(void* data, size_t length, std::vector<std::shared_ptr<RailCore>> rails, uint64_t id, TransportCell cell)
      : MemoryRegion(data, length, MemoryKind::host), rails_(std::move(rails)), cell_(std::move(cell)) {
    key_.length = length;
    for (const auto& core : rails_) {
      ucp_mem_map_params_t p{};
      p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
      p.address = data;
      p.length = std::max<size_t>(length, 1);
      ucp_mem_h memh = nullptr;
      ucs_status_t st = ucp_mem_map(core->context.get(), &p, &memh);
      if (st != UCS_OK)
        throw TransportError(
            fmt::format("ucp_mem_map of {} bytes on device {}: {}", length, core->device, ucs_status_string(st)));
      memhs_.push_back(memh);
      void* buf = nullptr;
      size_t size = 0;
      st = ucp_rkey_pack(core->context.get(), memh, &buf, &size);
      if (st != UCS_OK)
        throw TransportError(fmt::format("ucp_rkey_pack on device {}: {}", core->device, ucs_status_string(st)));
      RailKey rk{reinterpret_cast<uint64_t>(data), id, {}};
      rk.packed.assign(static_cast<uint8_t*>(buf), static_cast<uint8_t*>(buf) + size);
      ucp_rkey_buffer_release(buf);
      key_.rails.push_back(std::move(rk));
    }
  }
  ~UcxRegion() override {
    if (*cell_ != nullptr) cancel_receives_into(*cell_, at(0), length());
    for (size_t i = 0; i < memhs_.size(); ++i) ucp_mem_unmap(rails_[i]->context.get(), memhs_[i]);
  }
  RemoteKey remote_key() const override { return key_; }

 private:
  std::vector<std::shared_ptr<RailCore>> rails_;
  std::vector<ucp_mem_h> memhs_;
  RemoteKey key_;
  TransportCell cell_;
};

}  // namespace

std::unique_ptr<MemoryRegion> make_region(void* data, size_t length, std::vector<std::shared_ptr<RailCore>> rails,
                                          uint64_t id, TransportCell cell) {
  return std::make_unique<UcxRegion>(data, length, std::move(rails), id, std::move(cell));
}

}  // namespace railbench::ucx
