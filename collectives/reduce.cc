// Built with -O3 (see CMakeLists.txt) so these loops vectorize: a reduction must run
// faster than the link it follows or it becomes the benchmark.
#include "collectives/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "lib/errors.h"
#include "lib/gpu.h"

namespace railbench {

namespace {

struct Sum {
  template <class T>
  static T apply(T x, T y) {
    return static_cast<T>(x + y);
  }
};
struct Prod {
  template <class T>
  static T apply(T x, T y) {
    return static_cast<T>(x * y);
  }
};
struct Min {
  template <class T>
  static T apply(T x, T y) {
    return std::min(x, y);
  }
};
struct Max {
  template <class T>
  static T apply(T x, T y) {
    return std::max(x, y);
  }
};

template <class T, class Op>
void reduce_native(const void* a, const void* b, void* dst, size_t count) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  T* pd = static_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) pd[i] = Op::apply(pa[i], pb[i]);
}

// bfloat16: the top half of an IEEE float; round-to-nearest-even on the way back.
inline float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffU) > 0x7f800000U) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffU + ((u >> 16) & 1U);
  return static_cast<uint16_t>(u >> 16);
}

template <class Op>
void reduce_bf16(const void* a, const void* b, void* dst, size_t count) {
  const auto* pa = static_cast<const uint16_t*>(a);
  const auto* pb = static_cast<const uint16_t*>(b);
  auto* pd = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < count; ++i) pd[i] = float_to_bf16(Op::apply(bf16_to_float(pa[i]), bf16_to_float(pb[i])));
}

// half: computed in float and rounded once, as GPU reductions do.
template <class Op>
void reduce_f16(const void* a, const void* b, void* dst, size_t count) {
  const auto* pa = static_cast<const _Float16*>(a);
  const auto* pb = static_cast<const _Float16*>(b);
  auto* pd = static_cast<_Float16*>(dst);
  for (size_t i = 0; i < count; ++i) {
    pd[i] = static_cast<_Float16>(Op::apply(static_cast<float>(pa[i]), static_cast<float>(pb[i])));
  }
}

template <class Op>
void reduce_typed(DataType type, const void* a, const void* b, void* dst, size_t count) {
  switch (type) {
    case DataType::f32: return reduce_native<float, Op>(a, b, dst, count);
    case DataType::f64: return reduce_native<double, Op>(a, b, dst, count);
    case DataType::i32: return reduce_native<int32_t, Op>(a, b, dst, count);
    case DataType::i64: return reduce_native<int64_t, Op>(a, b, dst, count);
    case DataType::u8: return reduce_native<uint8_t, Op>(a, b, dst, count);
    case DataType::bf16: return reduce_bf16<Op>(a, b, dst, count);
    case DataType::f16: return reduce_f16<Op>(a, b, dst, count);
  }
}

}  // namespace

void reduce(DataType type, ReduceOp op, const void* a, const void* b, void* dst, size_t count) {
  switch (op) {
    case ReduceOp::sum: return reduce_typed<Sum>(type, a, b, dst, count);
    case ReduceOp::prod: return reduce_typed<Prod>(type, a, b, dst, count);
    case ReduceOp::min: return reduce_typed<Min>(type, a, b, dst, count);
    case ReduceOp::max: return reduce_typed<Max>(type, a, b, dst, count);
  }
}

void reduce(MemoryKind kind, DataType type, ReduceOp op, const void* a, const void* b, void* dst, size_t count) {
  if (kind != MemoryKind::cuda) return reduce(type, op, a, b, dst, count);
  std::string why;
  if (!gpu::device_reduce(type, op, a, b, dst, count, why)) throw TransportError(why);
}

void copy_bytes(MemoryKind kind, void* dst, const void* src, size_t bytes) {
  if (kind == MemoryKind::cuda) return gpu::copy(dst, src, bytes);
  std::memcpy(dst, src, bytes);
}

}  // namespace railbench
