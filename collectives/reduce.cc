// Built with -O3 (see CMakeLists.txt) so these loops vectorize: a reduction must run
// faster than the link it follows or it becomes the benchmark.
#include "collectives/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "lib/core/errors.h"
#include "lib/transport/gpu.h"

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

#if defined(__x86_64__)
// Half-precision on x86: converting one element at a time calls libgcc's soft-float
// routines (a 17x slower all-reduce than f32 at the last review). With F16C (every x86
// CPU since 2012) eight halves convert in one instruction; bf16 is a 16-bit shift. These
// functions are compiled for AVX2+F16C whatever the build's -march, and used only when
// the CPU has them (have_avx2_f16c). Results are bit-identical to the scalar loops:
// round-to-nearest-even once, and min/max with std::min/std::max's operand order.
bool have_avx2_f16c() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return yes;
}

// One of four ops on eight floats; `op` is fixed for the whole loop, so the branch
// predicts perfectly.
__attribute__((target("avx2,f16c"))) inline __m256 apply8(ReduceOp op, __m256 x, __m256 y) {
  switch (op) {
    case ReduceOp::sum: return _mm256_add_ps(x, y);
    case ReduceOp::prod: return _mm256_mul_ps(x, y);
    // std::min(x, y) is (y < x) ? y : x, which is what minps(y, x) returns (NaN too).
    case ReduceOp::min: return _mm256_min_ps(y, x);
    case ReduceOp::max: return _mm256_max_ps(y, x);
  }
  return x;
}

__attribute__((target("avx2,f16c"))) size_t reduce_f16_avx2(ReduceOp op, const uint16_t* a, const uint16_t* b,
                                                            uint16_t* d, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(apply8(op, x, y), _MM_FROUND_TO_NEAREST_INT));
  }
  return i;  // the tail is the scalar loop's
}

__attribute__((target("avx2,f16c"))) inline __m256 bf16x8_to_float(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

__attribute__((target("avx2,f16c"))) size_t reduce_bf16_avx2(ReduceOp op, const uint16_t* a, const uint16_t* b,
                                                             uint16_t* d, size_t count) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i u = _mm256_castps_si256(apply8(op, bf16x8_to_float(a + i), bf16x8_to_float(b + i)));
    // float_to_bf16 below, eight at a time: NaN stays a quiet NaN, the rest rounds to
    // nearest even.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, lsb)), 16);
    const __m256i nan_out = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
    const __m256i out = _mm256_blendv_epi8(rounded, nan_out, nan);
    // 32-bit lanes (each <= 0xffff) to 16 bits: packus works per 128-bit half, the
    // permute puts the halves' results next to each other.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(out, out), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_castsi256_si128(packed));
  }
  return i;
}
#endif

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
#if defined(__x86_64__)
  if ((type == DataType::f16 || type == DataType::bf16) && have_avx2_f16c()) {
    const auto* pa = static_cast<const uint16_t*>(a);
    const auto* pb = static_cast<const uint16_t*>(b);
    auto* pd = static_cast<uint16_t*>(dst);
    const size_t done =
        type == DataType::f16 ? reduce_f16_avx2(op, pa, pb, pd, count) : reduce_bf16_avx2(op, pa, pb, pd, count);
    if (done == count) return;
    pa += done, pb += done, pd += done, count -= done;
    a = pa, b = pb, dst = pd;
  }
#endif
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
