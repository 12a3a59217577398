// Element-wise reductions on GPU memory for our own collectives (transports without
// native collectives). One kernel per element type; the operator is a kernel argument,
// which keeps nvcc's work (and build time) small. f16/bf16 reduce in float, as the
// host reductions do.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "lib/transport/gpu_kernels.h"

namespace railbench::gpu {

namespace {

template <class T>
struct Acc {
  using type = T;
  __device__ static T load(T v) { return v; }
  __device__ static T store(T v) { return v; }
};
template <>
struct Acc<__half> {
  using type = float;
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half(v); }
};
template <>
struct Acc<__nv_bfloat16> {
  using type = float;
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16(v); }
};

template <class T>
__global__ void reduce_kernel(int op, const T* a, const T* b, T* dst, size_t count) {
  using A = Acc<T>;
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const auto x = A::load(a[i]);
    const auto y = A::load(b[i]);
    typename A::type r;
    switch (op) {
      case 0: r = x + y; break;
      case 1: r = x * y; break;
      case 2: r = y < x ? y : x; break;
      default: r = x < y ? y : x; break;
    }
    dst[i] = A::store(r);
  }
}

template <class T>
cudaError_t launch(int op, const void* a, const void* b, void* dst, size_t count, cudaStream_t stream) {
  constexpr unsigned kThreads = 512;
  const size_t want = (count + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < 4096 ? (want > 0 ? want : 1) : 4096);
  reduce_kernel<T><<<blocks, kThreads, 0, stream>>>(op, static_cast<const T*>(a), static_cast<const T*>(b),
                                                    static_cast<T*>(dst), count);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_reduce(int type, int op, const void* a, const void* b, void* dst, size_t count,
                          cudaStream_t stream) {
  // Order of railbench::DataType: f32, f64, f16, bf16, i32, i64, u8.
  switch (type) {
    case 0: return launch<float>(op, a, b, dst, count, stream);
    case 1: return launch<double>(op, a, b, dst, count, stream);
    case 2: return launch<__half>(op, a, b, dst, count, stream);
    case 3: return launch<__nv_bfloat16>(op, a, b, dst, count, stream);
    case 4: return launch<int>(op, a, b, dst, count, stream);
    case 5: return launch<long long>(op, a, b, dst, count, stream);
    case 6: return launch<unsigned char>(op, a, b, dst, count, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace railbench::gpu
