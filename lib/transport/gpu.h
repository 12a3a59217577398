// GPU memory for every transport: allocation (cudaMalloc / cudaMallocHost), copies,
// device reductions and the device probe. The only place above transports/ that talks
// to the CUDA runtime; builds without CUDA get stubs that throw UnsupportedError.
//
// Setup calls throw typed errors whose one line names the CUDA call and what it
// returned. device_reduce and copy are data-path helpers for buffers set up here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/core/datatype.h"
#include "lib/transport/transport.h"

namespace railbench::gpu {

// True when this railbench was compiled with CUDA (nvcc and the toolkit were found).
bool built_in();

// CUDA runtime version this build links (e.g. 13000), 0 without CUDA.
int runtime_version();
// Version of the installed driver, 0 when there is none (cudaDriverGetVersion).
int driver_version();

// What cudaGetDeviceCount says, without throwing: count > 0, or the error.
struct Probe {
  int count = 0;
  int status = 0;     // cudaError_t as an int; 0 is success
  std::string error;  // e.g. "cudaErrorNoDevice: no CUDA-capable device is detected"
};
Probe probe();

// Throws UnsupportedError when no device is visible, e.g. "--mem cuda: no CUDA device
// visible (cudaGetDeviceCount returned 100: ...); run on a GPU node or use --mem host".
// `what` names the option that asked for a GPU. Returns the device count.
int require_devices(const std::string& what);

struct DeviceInfo {
  int index = -1;
  std::string name;        // "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;  // "0000:18:00.0", as sysfs spells it
};
DeviceInfo device_info(int index);

// Makes `index` the calling thread's current device (cudaSetDevice).
void set_device(int index);

// A buffer of `bytes` in `kind` memory, released when destroyed. host: page-aligned
// malloc; cuda: cudaMalloc on the current device; cuda_host: cudaMallocHost (pinned).
class Buffer {
 public:
  Buffer(MemoryKind kind, size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  MemoryKind kind() const { return kind_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  MemoryKind kind_;
};

// Copies between any two of host, device and pinned memory (unified addressing), and
// waits for the copy. Throws TransportError naming the CUDA error.
void copy(void* dst, const void* src, size_t bytes);
void zero(void* dst, size_t bytes);

// dst[i] = a[i] op b[i] on the current device (any of the pointers may be device or
// pinned memory); waits for the kernel. Returns false with `why` set on a CUDA error.
bool device_reduce(DataType type, ReduceOp op, const void* a, const void* b, void* dst, size_t count,
                   std::string& why) noexcept;

// True when `ptr` is device memory (cudaPointerGetAttributes); false for host memory
// and in builds without CUDA.
bool is_device_pointer(const void* ptr) noexcept;

// A dma-buf file descriptor for [ptr, ptr+bytes) of device memory, for
// ibv_reg_dmabuf_mr (cuMemGetHandleForAddressRange through the driver, loaded at run
// time). The handle covers whole pages: `offset` is where ptr lies inside it. Returns -1
// with `why` set when the driver, the call or the kernel refuses.
int dmabuf_fd(const void* ptr, size_t bytes, uint64_t& offset, std::string& why) noexcept;

}  // namespace railbench::gpu
