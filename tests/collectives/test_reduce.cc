#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/check.h"
#include "collectives/reduce.h"

using namespace railbench;

TEST_CASE("reductions of every op on float and integer types", "[reduce]") {
  std::vector<float> a{1, -2, 3.5f, 8}, b{4, 5, -1, 2}, d(4);
  reduce(DataType::f32, ReduceOp::sum, a.data(), b.data(), d.data(), 4);
  CHECK(d == std::vector<float>{5, 3, 2.5f, 10});
  reduce(DataType::f32, ReduceOp::prod, a.data(), b.data(), d.data(), 4);
  CHECK(d == std::vector<float>{4, -10, -3.5f, 16});
  reduce(DataType::f32, ReduceOp::min, a.data(), b.data(), d.data(), 4);
  CHECK(d == std::vector<float>{1, -2, -1, 2});
  reduce(DataType::f32, ReduceOp::max, a.data(), b.data(), d.data(), 4);
  CHECK(d == std::vector<float>{4, 5, 3.5f, 8});

  std::vector<uint8_t> ua{250, 1, 7}, ub{10, 2, 9}, ud(3);
  reduce(DataType::u8, ReduceOp::sum, ua.data(), ub.data(), ud.data(), 3);
  CHECK(ud == std::vector<uint8_t>{4, 3, 16});  // wraps like the hardware type

  std::vector<int64_t> la{1LL << 40, -3}, lb{2, -4}, ld(2);
  reduce(DataType::i64, ReduceOp::sum, la.data(), lb.data(), ld.data(), 2);
  CHECK(ld == std::vector<int64_t>{(1LL << 40) + 2, -7});
}

TEST_CASE("bf16 and f16 reductions round once", "[reduce]") {
  // bf16 of 1.0 is 0x3f80, of 2.0 is 0x4000, 3.0 is 0x4040.
  std::vector<uint16_t> a{0x3f80, 0x4000}, b{0x4000, 0x4000}, d(2);
  reduce(DataType::bf16, ReduceOp::sum, a.data(), b.data(), d.data(), 2);
  CHECK(d == std::vector<uint16_t>{0x4040, 0x4080});  // 3.0, 4.0
  std::vector<_Float16> ha{_Float16(1.5f), _Float16(2.0f)}, hb{_Float16(2.25f), _Float16(-3.0f)}, hd(2);
  reduce(DataType::f16, ReduceOp::sum, ha.data(), hb.data(), hd.data(), 2);
  CHECK(static_cast<float>(hd[0]) == 3.75f);
  CHECK(static_cast<float>(hd[1]) == -1.0f);
}

namespace {

// Scalar references, written apart from collectives/reduce.cc: widen, apply in float,
// round to nearest even once (NaN stays a quiet NaN).
float bf16_ref_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t float_to_bf16_ref(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  const uint32_t lsb = (u >> 16) & 1;
  return static_cast<uint16_t>((u + 0x7fff + lsb) >> 16);
}
float apply_ref(ReduceOp op, float x, float y) {
  switch (op) {
    case ReduceOp::sum: return x + y;
    case ReduceOp::prod: return x * y;
    case ReduceOp::min: return std::min(x, y);
    case ReduceOp::max: return std::max(x, y);
  }
  return x;
}

}  // namespace

TEST_CASE("f16 and bf16 reductions match the scalar reference bit for bit, at every length", "[reduce]") {
  // Random bit patterns cover normals, subnormals, infinities and NaNs; lengths cover the
  // eight-wide vector body and every tail.
  std::mt19937 rng(20261123);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{15}, size_t{16}, size_t{17},
                     size_t{31}, size_t{1000}, size_t{4099}}) {
      INFO(to_string(op) << " n=" << n);
      std::vector<uint16_t> a(n), b(n), d(n);
      for (size_t i = 0; i < n; ++i) a[i] = static_cast<uint16_t>(rng()), b[i] = static_cast<uint16_t>(rng());
      // bf16
      reduce(DataType::bf16, op, a.data(), b.data(), d.data(), n);
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) {
        const uint16_t want = float_to_bf16_ref(apply_ref(op, bf16_ref_to_float(a[i]), bf16_ref_to_float(b[i])));
        const bool both_nan = std::isnan(bf16_ref_to_float(want)) && std::isnan(bf16_ref_to_float(d[i]));
        if (d[i] != want && !both_nan) ++wrong;
      }
      CHECK(wrong == 0);
      // f16
      reduce(DataType::f16, op, a.data(), b.data(), d.data(), n);
      wrong = 0;
      for (size_t i = 0; i < n; ++i) {
        _Float16 ha, hb, hd;
        std::memcpy(&ha, &a[i], 2), std::memcpy(&hb, &b[i], 2), std::memcpy(&hd, &d[i], 2);
        const _Float16 want = static_cast<_Float16>(apply_ref(op, static_cast<float>(ha), static_cast<float>(hb)));
        uint16_t wbits;
        std::memcpy(&wbits, &want, 2);
        const bool both_nan = std::isnan(static_cast<float>(want)) && std::isnan(static_cast<float>(hd));
        if (d[i] != wbits && !both_nan) ++wrong;
      }
      CHECK(wrong == 0);
    }
  }
  // In place: dst aliasing the first input.
  std::vector<uint16_t> x(21, 0x3f80), y(21, 0x4000);
  reduce(DataType::bf16, ReduceOp::sum, x.data(), y.data(), x.data(), x.size());
  CHECK(x == std::vector<uint16_t>(21, 0x4040));
}

TEST_CASE("dst may alias an input", "[reduce]") {
  std::vector<double> a{1, 2, 3}, b{10, 20, 30};
  reduce(DataType::f64, ReduceOp::sum, a.data(), b.data(), a.data(), 3);
  CHECK(a == std::vector<double>{11, 22, 33});
}

TEST_CASE("the all-reduce check accepts a correct result and counts each wrong element", "[check]") {
  for (DataType t :
       {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i32, DataType::i64, DataType::u8}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
      INFO(to_string(t) << " " << to_string(op));
      const int n = 5;
      const size_t count = 1023;
      const size_t es = size_of(t);
      std::vector<std::byte> acc(count * es), in(count * es);
      fill_input(t, op, 0, 7, acc.data(), count);
      for (int r = 1; r < n; ++r) {
        fill_input(t, op, r, 7, in.data(), count);
        reduce(t, op, acc.data(), in.data(), acc.data(), count);
      }
      CHECK(count_wrong_allreduce(t, op, n, 7, acc.data(), count) == 0);
      // Corrupt two elements: exactly two are counted.
      std::memset(acc.data() + 3 * es, 0x7f, es);
      std::memset(acc.data() + 1000 * es, 0x7f, es);
      CHECK(count_wrong_allreduce(t, op, n, 7, acc.data(), count) == 2);
      // A different seed's result is wrong almost everywhere.
      CHECK(count_wrong_allreduce(t, op, n, 8, acc.data(), count) > count / 3);
    }
  }
}

TEST_CASE("byte patterns detect a single flipped byte", "[check]") {
  std::vector<uint8_t> buf(4096);
  fill_bytes(3, 11, buf.data(), buf.size());
  CHECK(count_wrong_bytes(3, 11, buf.data(), buf.size()) == 0);
  buf[777] ^= 1;
  CHECK(count_wrong_bytes(3, 11, buf.data(), buf.size()) == 1);
  CHECK(count_wrong_bytes(4, 11, buf.data(), buf.size()) > 4000);  // another sender's pattern
}
