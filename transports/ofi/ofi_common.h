// Internal to transports/ofi: RAII handles for libfabric objects, the per-operation
// context and its pool, and error text helpers.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/transport/transport.h"

namespace railbench::ofi {

// Every fid (fabric, domain, ep, cq, av, mr) is released by fi_close. Its status is
// ignored: a destructor has no one to report to, and the process is usually exiting.
struct FidCloser {
  template <class T>
  void operator()(T* p) const noexcept {
    if (p != nullptr) fi_close(&p->fid);
  }
};
template <class T>
using FidPtr = std::unique_ptr<T, FidCloser>;

struct InfoFree {
  void operator()(fi_info* p) const noexcept { fi_freeinfo(p); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoFree>;

// The context of one posted operation. libfabric hands `fi` back as op_context, so it
// must come first; fi_context2 satisfies both FI_CONTEXT and FI_CONTEXT2 mode.
struct OpContext {
  fi_context2 fi;
  uint64_t wr_id = 0;
  int peer = -1;
  int rail = 0;
  OpKind op = OpKind::send;
  size_t length = 0;
  bool from_rx_pool = false;
  bool in_flight = false;        // taken from the pool and not yet completed
  const void* region = nullptr;  // the local region (OfiMemoryRegion) it reads or writes

  // Batched writes (post_write_batch) post one fi_writemsg per chunk of spans (up to
  // kMaxIov local and kMaxIov remote iovecs), each with a context of its own. `batch` points at the first chunk's
  // context (the lead), which keeps the caller's wr_id, the batch's bytes in `length`, how many chunks have yet to
  // finish and whether one failed; it goes back to the pool last.
  static constexpr size_t kMaxIov = 4;
  OpContext* batch = nullptr;
  uint32_t batch_pending = 0;
  bool batch_failed = false;
  // The chunk's fi_writemsg arguments, kept so poll() can post it later when the
  // provider answered -FI_EAGAIN partway through the batch.
  size_t iov_count = 0;  // local iovecs
  size_t rma_count = 0;  // remote iovecs (as many bytes, not always as many entries)
  iovec iov[kMaxIov]{};
  void* desc[kMaxIov]{};
  fi_rma_iov rma[kMaxIov]{};
  fi_addr_t addr = 0;
  uint64_t data = 0;
  uint64_t flags = 0;
};
static_assert(offsetof(OpContext, fi) == 0, "op_context must point at the fi_context2");

// Fixed set of contexts allocated at setup; take/give never allocate, so the data path
// stays allocation-free and an empty pool is the natural "retry" signal.
class ContextPool {
 public:
  ContextPool(size_t size, int rail, bool rx) : storage_(size) {
    free_.reserve(size);
    for (auto& c : storage_) {
      c.rail = rail;
      c.from_rx_pool = rx;
      free_.push_back(&c);
    }
  }
  ContextPool(const ContextPool&) = delete;
  ContextPool& operator=(const ContextPool&) = delete;

  OpContext* take() noexcept {
    if (free_.empty()) return nullptr;
    OpContext* c = free_.back();
    free_.pop_back();
    c->in_flight = true;
    return c;
  }
  // Capacity is reserved for every context, so push_back cannot reallocate.
  void give(OpContext* c) noexcept {
    c->in_flight = false;
    c->region = nullptr;
    c->batch = nullptr;
    c->batch_pending = 0;
    c->batch_failed = false;
    free_.push_back(c);
  }
  // Whether an operation still in flight uses `region` (teardown only: scans the pool).
  bool uses(const void* region) const noexcept {
    for (const auto& c : storage_)
      if (c.in_flight && c.region == region) return true;
    return false;
  }
  size_t size() const { return storage_.size(); }
  size_t available() const { return free_.size(); }

 private:
  std::vector<OpContext> storage_;
  std::vector<OpContext*> free_;
};

// "Connection refused (-111)" style text for a negative libfabric return code.
std::string fi_error_text(long long ret);
// The same text as a fmt argument, for the data path: it formats in place instead of
// building a std::string first, so it cannot throw bad_alloc.
struct FiErrorText {
  long long ret;
};
// "FI_MR_LOCAL|FI_MR_VIRT_ADDR", or "none".
std::string mr_mode_string(uint64_t mr_mode);
// Provider name before the first ';': "tcp" for "tcp;ofi_rxm".
std::string core_provider(const char* prov_name);

}  // namespace railbench::ofi

template <>
struct fmt::formatter<railbench::ofi::FiErrorText> : fmt::formatter<fmt::string_view> {
  auto format(railbench::ofi::FiErrorText e, fmt::format_context& ctx) const {
    return fmt::format_to(ctx.out(), "{} ({})", fi_strerror(static_cast<int>(e.ret < 0 ? -e.ret : e.ret)), e.ret);
  }
};
