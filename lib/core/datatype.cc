#include "lib/core/datatype.h"

#include <array>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

namespace {

struct TypeName {
  DataType type;
  const char* short_name;
  const char* nccl_name;
  size_t size;
};

constexpr std::array<TypeName, 7> kTypes{{
    {DataType::f32, "f32", "float", 4},
    {DataType::f64, "f64", "double", 8},
    {DataType::f16, "f16", "half", 2},
    {DataType::bf16, "bf16", "bfloat16", 2},
    {DataType::i32, "i32", "int32", 4},
    {DataType::i64, "i64", "int64", 8},
    {DataType::u8, "u8", "uint8", 1},
}};

struct OpName {
  ReduceOp op;
  const char* name;
};

constexpr std::array<OpName, 4> kOps{{
    {ReduceOp::sum, "sum"},
    {ReduceOp::prod, "prod"},
    {ReduceOp::min, "min"},
    {ReduceOp::max, "max"},
}};

}  // namespace

size_t size_of(DataType t) {
  for (const auto& e : kTypes)
    if (e.type == t) return e.size;
  return 0;
}

const char* to_string(DataType t) {
  for (const auto& e : kTypes)
    if (e.type == t) return e.nccl_name;
  return "unknown";
}

const char* to_string(ReduceOp op) {
  for (const auto& e : kOps)
    if (e.op == op) return e.name;
  return "unknown";
}

DataType parse_datatype(std::string_view s) {
  for (const auto& e : kTypes)
    if (s == e.short_name || s == e.nccl_name) return e.type;
  std::string valid;
  for (const auto& e : kTypes) valid += fmt::format("{}{} ({})", valid.empty() ? "" : ", ", e.short_name, e.nccl_name);
  throw UsageError(fmt::format("unknown data type '{}': use one of {}", s, valid));
}

ReduceOp parse_reduce_op(std::string_view s) {
  for (const auto& e : kOps)
    if (s == e.name) return e.op;
  throw UsageError(fmt::format("unknown reduction '{}': use one of sum, prod, min, max", s));
}

}  // namespace railbench
