// The launcher nvcc builds (gpu_kernels.cu); only lib/transport/gpu_cuda.cc calls it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace railbench::gpu {

// `type` and `op` are railbench::DataType and ReduceOp as ints (nvcc sees no C++20).
cudaError_t launch_reduce(int type, int op, const void* a, const void* b, void* dst, size_t count, cudaStream_t stream);

}  // namespace railbench::gpu
