#include "collectives/check.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "collectives/reduce.h"

namespace railbench {

namespace {

// prod: 1s and 2s, so products are powers of two. Others: a part that varies with the
// element and seed (so min and max also change between runs and catch stale data) plus
// a part that varies with the rank.
double input_value(ReduceOp op, int rank, uint32_t seed, size_t i) {
  if (op == ReduceOp::prod) return 1.0 + static_cast<double>((static_cast<size_t>(rank) + i + seed) % 2);
  return 1.0 + static_cast<double>((i + seed) % 5) + static_cast<double>(rank % 3);
}

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);  // inputs are small integers: exact, no rounding
}

float from_bf16(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void store(DataType type, void* buf, size_t i, double v) {
  switch (type) {
    case DataType::f32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case DataType::f64: static_cast<double*>(buf)[i] = v; break;
    case DataType::f16: static_cast<_Float16*>(buf)[i] = static_cast<_Float16>(v); break;
    case DataType::bf16: static_cast<uint16_t*>(buf)[i] = to_bf16(static_cast<float>(v)); break;
    case DataType::i32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); break;
    case DataType::i64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); break;
    case DataType::u8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v); break;
  }
}

double load(DataType type, const void* buf, size_t i) {
  switch (type) {
    case DataType::f32: return static_cast<const float*>(buf)[i];
    case DataType::f64: return static_cast<const double*>(buf)[i];
    case DataType::f16: return static_cast<double>(static_cast<const _Float16*>(buf)[i]);
    case DataType::bf16: return from_bf16(static_cast<const uint16_t*>(buf)[i]);
    case DataType::i32: return static_cast<const int32_t*>(buf)[i];
    case DataType::i64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case DataType::u8: return static_cast<const uint8_t*>(buf)[i];
  }
  return 0;
}

double epsilon(DataType type) {
  switch (type) {
    case DataType::f32: return 1.2e-7;
    case DataType::f64: return 2.3e-16;
    case DataType::f16: return 9.8e-4;
    case DataType::bf16: return 7.9e-3;
    default: return 0;  // integers: exact
  }
}

}  // namespace

void fill_input(DataType type, ReduceOp op, int rank, uint32_t seed, void* buf, size_t count) {
  for (size_t i = 0; i < count; ++i) store(type, buf, i, input_value(op, rank, seed, i));
}

uint64_t count_wrong_allreduce(DataType type, ReduceOp op, int nranks, uint32_t seed, const void* result, size_t count,
                               size_t first) {
  // Reference: reduce the ranks' inputs in rank order with the same kernel, in
  // blocks so memory stays bounded for large counts.
  constexpr size_t kBlock = 1 << 16;
  const size_t esize = size_of(type);
  std::vector<std::byte> acc(kBlock * esize), in(kBlock * esize);
  const double tol = epsilon(type) * nranks;
  uint64_t wrong = 0;
  for (size_t base = 0; base < count; base += kBlock) {
    const size_t n = std::min(kBlock, count - base);
    for (size_t i = 0; i < n; ++i) store(type, acc.data(), i, input_value(op, 0, seed, first + base + i));
    for (int r = 1; r < nranks; ++r) {
      for (size_t i = 0; i < n; ++i) store(type, in.data(), i, input_value(op, r, seed, first + base + i));
      reduce(type, op, acc.data(), in.data(), acc.data(), n);
    }
    const auto* res = static_cast<const std::byte*>(result) + base * esize;
    for (size_t i = 0; i < n; ++i) {
      const double want = load(type, acc.data(), i), got = load(type, res, i);
      if (std::isnan(got) || std::fabs(got - want) > tol * std::fabs(want)) ++wrong;
    }
  }
  return wrong;
}

namespace {
double block_value(int src, int dst, uint32_t seed, size_t i) {
  const size_t v = i * 7 + static_cast<size_t>(seed) * 13 + static_cast<size_t>(src) * 31 +
                   static_cast<size_t>(dst) * 17 + (i >> 8) * 3;
  return static_cast<double>(v % 251);
}
}  // namespace

void fill_block(DataType type, int src, int dst, uint32_t seed, void* buf, size_t count) {
  for (size_t i = 0; i < count; ++i) store(type, buf, i, block_value(src, dst, seed, i));
}

uint64_t count_wrong_block(DataType type, int src, int dst, uint32_t seed, const void* buf, size_t count) {
  uint64_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += load(type, buf, i) != block_value(src, dst, seed, i);
  return wrong;
}

uint64_t count_wrong_allgather(DataType type, int nranks, uint32_t seed, const void* result, size_t count) {
  const size_t block = count * size_of(type);
  uint64_t wrong = 0;
  for (int q = 0; q < nranks; ++q)
    wrong += count_wrong_block(type, q, 0, seed, static_cast<const std::byte*>(result) + static_cast<size_t>(q) * block,
                               count);
  return wrong;
}

void fill_alltoall(DataType type, int rank, int nranks, uint32_t seed, void* input, size_t count) {
  const size_t block = count * size_of(type);
  for (int q = 0; q < nranks; ++q)
    fill_block(type, rank, q, seed, static_cast<std::byte*>(input) + static_cast<size_t>(q) * block, count);
}

uint64_t count_wrong_alltoall(DataType type, int rank, int nranks, uint32_t seed, const void* result, size_t count) {
  const size_t block = count * size_of(type);
  uint64_t wrong = 0;
  for (int q = 0; q < nranks; ++q)
    wrong += count_wrong_block(type, q, rank, seed,
                               static_cast<const std::byte*>(result) + static_cast<size_t>(q) * block, count);
  return wrong;
}

void fill_bytes(int sender, uint32_t seed, void* buf, size_t len) {
  auto* p = static_cast<uint8_t*>(buf);
  const uint32_t s = static_cast<uint32_t>(sender) * 2654435761U + seed * 40503U;
  for (size_t i = 0; i < len; ++i) p[i] = static_cast<uint8_t>((i * 131U + s + (i >> 8)) & 0xff);
}

uint64_t count_wrong_bytes(int sender, uint32_t seed, const void* buf, size_t len) {
  const auto* p = static_cast<const uint8_t*>(buf);
  const uint32_t s = static_cast<uint32_t>(sender) * 2654435761U + seed * 40503U;
  uint64_t wrong = 0;
  for (size_t i = 0; i < len; ++i) wrong += p[i] != static_cast<uint8_t>((i * 131U + s + (i >> 8)) & 0xff);
  return wrong;
}

}  // namespace railbench
