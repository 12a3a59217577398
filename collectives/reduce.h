// Element-wise reductions on host memory for every DataType and ReduceOp.
#pragma once

#include <cstddef>

#include "lib/datatype.h"

namespace railbench {

// dst[i] = a[i] op b[i] for i < count. dst may alias a or b.
void reduce(DataType type, ReduceOp op, const void* a, const void* b, void* dst, size_t count);

}  // namespace railbench
