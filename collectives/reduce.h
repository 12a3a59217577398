// Element-wise reductions on host memory for every DataType and ReduceOp.
#pragma once

#include <cstddef>

#include "lib/core/datatype.h"
#include "lib/transport/transport.h"

namespace railbench {

// dst[i] = a[i] op b[i] for i < count. dst may alias a or b.
void reduce(DataType type, ReduceOp op, const void* a, const void* b, void* dst, size_t count);

// The same on buffers in `kind` memory: GPU memory reduces with the CUDA kernels
// (lib/transport/gpu_kernels.cu; throws TransportError naming the CUDA error), host and pinned
// memory on the CPU.
void reduce(MemoryKind kind, DataType type, ReduceOp op, const void* a, const void* b, void* dst, size_t count);

// memcpy for buffers in `kind` memory (cudaMemcpy for GPU memory).
void copy_bytes(MemoryKind kind, void* dst, const void* src, size_t bytes);

}  // namespace railbench
