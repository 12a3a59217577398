// Element types and reduction operators, named as nccl-tests names them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace railbench {

enum class DataType : uint8_t { f32, f64, f16, bf16, i32, i64, u8 };
enum class ReduceOp : uint8_t { sum, prod, min, max };

size_t size_of(DataType t);
// nccl-tests spellings: "float", "double", "half", "bfloat16", "int32", "int64", "uint8".
const char* to_string(DataType t);
const char* to_string(ReduceOp op);
// Accepts our short names (f32, bf16, ...) and the nccl-tests names; throws UsageError
// listing the valid names otherwise.
DataType parse_datatype(std::string_view s);
ReduceOp parse_reduce_op(std::string_view s);

}  // namespace railbench
