// Device buffers, copies and the reduction kernels against the host reductions.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <vector>

#include "collectives/check.h"
#include "collectives/reduce.h"
#include "lib/transport/gpu.h"

using namespace railbench;

TEST_CASE("device and pinned buffers round-trip through copy and zero", "[gpu]") {
  for (MemoryKind kind : {MemoryKind::cuda, MemoryKind::cuda_host}) {
    gpu::Buffer buf(kind, 1 << 20);
    std::vector<std::byte> in(buf.size()), out(buf.size());
    fill_bytes(1, 42, in.data(), in.size());
    gpu::copy(buf.data(), in.data(), in.size());
    gpu::copy(out.data(), buf.data(), out.size());
    CHECK(std::memcmp(in.data(), out.data(), in.size()) == 0);
    gpu::zero(buf.data(), buf.size());
    gpu::copy(out.data(), buf.data(), out.size());
    CHECK(out[12345] == std::byte{0});
    CHECK(gpu::is_device_pointer(buf.data()) == (kind == MemoryKind::cuda));
  }
}

TEST_CASE("the reduction kernels match the host reductions for every type and op", "[gpu]") {
  const size_t count = 100003;  // not a multiple of the block size
  for (DataType t :
       {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i32, DataType::i64, DataType::u8}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
      INFO(to_string(t) << " " << to_string(op));
      const size_t bytes = count * size_of(t);
      std::vector<std::byte> a(bytes), b(bytes), want(bytes), got(bytes);
      fill_input(t, op, 0, 1, a.data(), count);
      fill_input(t, op, 1, 1, b.data(), count);
      reduce(t, op, a.data(), b.data(), want.data(), count);
      gpu::Buffer da(MemoryKind::cuda, bytes), db(MemoryKind::cuda, bytes);
      gpu::copy(da.data(), a.data(), bytes);
      gpu::copy(db.data(), b.data(), bytes);
      std::string why;
      REQUIRE(gpu::device_reduce(t, op, da.data(), db.data(), da.data(), count, why));
      gpu::copy(got.data(), da.data(), bytes);
      CHECK(std::memcmp(want.data(), got.data(), bytes) == 0);
    }
  }
}

TEST_CASE("dma-buf export of device memory answers an fd or says why", "[gpu]") {
  gpu::Buffer buf(MemoryKind::cuda, 4 << 20);
  uint64_t offset = 99;
  std::string why;
  const int fd = gpu::dmabuf_fd(buf.data() + 4096, 1 << 20, offset, why);
  if (fd < 0) {
    WARN("no dma-buf on this node: " << why);
    CHECK_FALSE(why.empty());
  } else {
    CHECK(offset == 0);
    ::close(fd);
  }
}
