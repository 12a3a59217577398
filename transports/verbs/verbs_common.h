// Internal to transports/verbs: RAII handles for ibverbs objects and error text.
#pragma once

#include <infiniband/verbs.h>

#include <cstring>
#include <memory>
#include <string>

#include <fmt/format.h>

namespace railbench::verbs {

// Each handle releases its object with the matching ibv_ call. Return codes are
// ignored: a destructor has no one to report to. Owners declare handles in creation
// order so they are destroyed in reverse (QPs, then SRQ and CQ, then MRs and the PD,
// then the context).
struct VerbsDeleter {
  void operator()(ibv_context* p) const noexcept { ibv_close_device(p); }
  void operator()(ibv_pd* p) const noexcept { ibv_dealloc_pd(p); }
  void operator()(ibv_cq* p) const noexcept { ibv_destroy_cq(p); }
  void operator()(ibv_srq* p) const noexcept { ibv_destroy_srq(p); }
  void operator()(ibv_qp* p) const noexcept { ibv_destroy_qp(p); }
  void operator()(ibv_mr* p) const noexcept { ibv_dereg_mr(p); }
};
template <class T>
using VerbsPtr = std::unique_ptr<T, VerbsDeleter>;

// ibv_get_device_list's array, freed with ibv_free_device_list.
class DeviceList {
 public:
  DeviceList() : list_(ibv_get_device_list(&count_)) {
    if (list_ == nullptr) count_ = 0;
  }
  ~DeviceList() {
    if (list_ != nullptr) ibv_free_device_list(list_);
  }
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;

  int size() const { return count_; }
  ibv_device* operator[](int i) const { return list_[i]; }

 private:
  int count_ = 0;
  ibv_device** list_;
};

// "Invalid argument (errno 22)". Verbs calls return an errno value or set errno.
std::string errno_text(int err);
// The same text as a fmt argument, for the data path: it formats in place instead of
// building a std::string first, so it cannot throw bad_alloc.
struct ErrnoText {
  int err;
};

// "Ethernet", "InfiniBand" or "unspecified".
const char* link_layer_name(uint8_t link_layer);

}  // namespace railbench::verbs

template <>
struct fmt::formatter<railbench::verbs::ErrnoText> : fmt::formatter<fmt::string_view> {
  auto format(railbench::verbs::ErrnoText e, fmt::format_context& ctx) const {
    const int err = e.err < 0 ? -e.err : e.err;  // some providers return -errno
    return fmt::format_to(ctx.out(), "{} (errno {})", std::strerror(err), err);
  }
};
