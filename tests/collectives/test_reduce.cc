#include <catch2/catch.hpp>

#include <cstring>
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
