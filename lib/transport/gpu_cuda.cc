// lib/transport/gpu.h over the CUDA runtime (linked statically, so railbench starts on hosts with
// no driver) and, for dma-buf, the driver API loaded with dlopen at run time.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/gpu.h"
#include "lib/transport/gpu_kernels.h"

namespace railbench::gpu {

namespace {

std::string describe(cudaError_t e) {
  return fmt::format("{} {}: {}", static_cast<int>(e), cudaGetErrorName(e), cudaGetErrorString(e));
}

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw TransportError(fmt::format("{} failed: {}", call, describe(e)));
}

}  // namespace

bool built_in() {
  return true;
}

int runtime_version() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess ? v : 0;
}

int driver_version() {
  int v = 0;
  return cudaDriverGetVersion(&v) == cudaSuccess ? v : 0;
}

Probe probe() {
  Probe p;
  const cudaError_t e = cudaGetDeviceCount(&p.count);
  if (e != cudaSuccess) {
    p.count = 0;
    p.status = static_cast<int>(e);
    p.error = describe(e);
    cudaGetLastError();  // the runtime keeps the error sticky otherwise
  }
  return p;
}

int require_devices(const std::string& what) {
  const Probe p = probe();
  if (p.count > 0) return p.count;
  const std::string why = p.status != 0 ? fmt::format("cudaGetDeviceCount returned {}", p.error)
                                        : std::string("cudaGetDeviceCount found 0 devices");
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const bool nccl = what.rfind("-t nccl", 0) == 0;
  throw UnsupportedError(fmt::format("{}: no CUDA device visible ({}{}); run on a GPU node or use {}", what, why,
                                     visible ? fmt::format(", CUDA_VISIBLE_DEVICES='{}'", visible) : "",
                                     nccl ? "-t ofi or -t verbs" : "--mem host"));
}

DeviceInfo device_info(int index) {
  DeviceInfo info;
  info.index = index;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
  info.name = prop.name;
  char bus[32] = {};
  check(cudaDeviceGetPCIBusId(bus, sizeof(bus), index), "cudaDeviceGetPCIBusId");
  // CUDA spells it "00000000:18:00.0"; sysfs "0000:18:00.0", lower case.
  std::string id = bus;
  if (id.size() > 12) id = id.substr(id.size() - 12);
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  info.pci_bus_id = id;
  return info;
}

void set_device(int index) {
  check(cudaSetDevice(index), "cudaSetDevice");
}

Buffer::Buffer(MemoryKind kind, size_t bytes) : size_(bytes), kind_(kind) {
  const size_t n = bytes ? bytes : 1;
  void* p = nullptr;
  switch (kind) {
    case MemoryKind::host:
      if (posix_memalign(&p, 4096, n) != 0)
        throw TransportError(fmt::format("cannot allocate {} bytes of host memory", n));
      break;
    case MemoryKind::cuda: check(cudaMalloc(&p, n), "cudaMalloc"); break;
    case MemoryKind::cuda_host: check(cudaMallocHost(&p, n), "cudaMallocHost"); break;
  }
  data_ = static_cast<std::byte*>(p);
}

Buffer::~Buffer() {
  switch (kind_) {
    case MemoryKind::host: std::free(data_); break;
    case MemoryKind::cuda: cudaFree(data_); break;
    case MemoryKind::cuda_host: cudaFreeHost(data_); break;
  }
}

void copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  // Host to host needs no driver (and must work on hosts without one).
  const bool to_device = is_device_pointer(dst);
  if (!to_device && !is_device_pointer(src)) {
    std::memcpy(dst, src, bytes);
    return;
  }
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
  // cudaMemcpy returns before the data has landed for a copy from pageable host memory
  // (once it is staged) and for device to device: a NIC, or NCCL's non-blocking stream,
  // could then read the old bytes (seen on an H200 as wrong elements of a one-rank
  // out-of-place all-gather at 512K-4M). The copy ran on the default stream: wait for it.
  if (to_device) check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
}

void zero(void* dst, size_t bytes) {
  if (bytes == 0) return;
  if (!is_device_pointer(dst)) {
    std::memset(dst, 0, bytes);
    return;
  }
  check(cudaMemset(dst, 0, bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

bool device_reduce(DataType type, ReduceOp op, const void* a, const void* b, void* dst, size_t count,
                   std::string& why) noexcept {
  if (count == 0) return true;
  cudaError_t e = launch_reduce(static_cast<int>(type), static_cast<int>(op), a, b, dst, count, nullptr);
  if (e == cudaSuccess) e = cudaStreamSynchronize(nullptr);
  if (e == cudaSuccess) return true;
  why = fmt::format("reduction kernel on {} elements failed: {}", count, describe(e));
  return false;
}

bool is_device_pointer(const void* ptr) noexcept {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

namespace {

// The driver API, loaded at run time: linking libcuda would stop railbench from
// starting on hosts without the driver.
using GetHandleFn = CUresult (*)(void*, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);
using ErrorStringFn = CUresult (*)(CUresult, const char**);

struct Driver {
  GetHandleFn get_handle = nullptr;
  ErrorStringFn error_string = nullptr;
  std::string load_error;
};

const Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
      const char* err = dlerror();
      d.load_error = fmt::format("dlopen(libcuda.so.1) failed: {}", err ? err : "unknown error");
      return;
    }
    d.get_handle = reinterpret_cast<GetHandleFn>(dlsym(lib, "cuMemGetHandleForAddressRange"));
    d.error_string = reinterpret_cast<ErrorStringFn>(dlsym(lib, "cuGetErrorString"));
    if (!d.get_handle) d.load_error = "the CUDA driver has no cuMemGetHandleForAddressRange (needs driver 515+)";
  });
  return d;
}

}  // namespace

int dmabuf_fd(const void* ptr, size_t bytes, uint64_t& offset, std::string& why) noexcept {
  const Driver& d = driver();
  if (!d.get_handle) {
    why = d.load_error;
    return -1;
  }
  // The handle must cover whole host pages.
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto addr = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t base = addr & ~(page - 1);
  const uintptr_t end = (addr + bytes + page - 1) & ~(page - 1);
  int fd = -1;
  const CUresult r =
      d.get_handle(&fd, static_cast<CUdeviceptr>(base), end - base, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS) {
    const char* text = nullptr;
    if (d.error_string) d.error_string(r, &text);
    why = fmt::format("cuMemGetHandleForAddressRange returned {} ({})", static_cast<int>(r),
                      text ? text : "no description");
    return -1;
  }
  offset = addr - base;
  return fd;
}

}  // namespace railbench::gpu
