// lib/transport/gpu.h in builds without CUDA: host memory works, everything GPU says why not.
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/gpu.h"

namespace railbench::gpu {

namespace {

[[noreturn]] void not_built(const std::string& what) {
  throw UnsupportedError(fmt::format(
      "{}: this railbench was built without CUDA (nvcc or the CUDA toolkit was not found at configure time); "
      "rebuild with -DRAILBENCH_WITH_CUDA=ON on a host with the toolkit, or use --mem host",
      what));
}

}  // namespace

bool built_in() {
  return false;
}
int runtime_version() {
  return 0;
}
int driver_version() {
  return 0;
}

Probe probe() {
  return Probe{0, -1, "built without CUDA"};
}

int require_devices(const std::string& what) {
  not_built(what);
}

DeviceInfo device_info(int) {
  not_built("GPU information");
}

void set_device(int) {
  not_built("selecting a GPU");
}

Buffer::Buffer(MemoryKind kind, size_t bytes) : size_(bytes), kind_(kind) {
  if (kind != MemoryKind::host) not_built(fmt::format("--mem {}", to_string(kind)));
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0)
    throw TransportError(fmt::format("cannot allocate {} bytes of host memory", bytes));
  data_ = static_cast<std::byte*>(p);
}

Buffer::~Buffer() {
  std::free(data_);
}

void copy(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void zero(void* dst, size_t bytes) {
  if (bytes) std::memset(dst, 0, bytes);
}

bool device_reduce(DataType, ReduceOp, const void*, const void*, void*, size_t, std::string& why) noexcept {
  why = "device reduction: built without CUDA";
  return false;
}

bool is_device_pointer(const void*) noexcept {
  return false;
}

int dmabuf_fd(const void*, size_t, uint64_t&, std::string& why) noexcept {
  why = "dma-buf export: built without CUDA";
  return -1;
}

}  // namespace railbench::gpu
