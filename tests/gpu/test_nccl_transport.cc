// The nccl transport over real GPUs: one rank per visible GPU (up to 4) as threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "collectives/check.h"
#include "lib/transport/gpu.h"
#include "lib/transport/progress.h"
#include "tests/support/world.h"
#include "transports/nccl/nccl_transport.h"

using namespace railbench;
using railbench::testing::expect;
using railbench::testing::run_ranks;

TEST_CASE("nccl: all-reduce, all-to-all and send/recv deliver the right data", "[gpu][nccl]") {
  const int n = std::min(gpu::probe().count, 4);
  run_ranks(n, [&](Bootstrap& b) {
    auto t = nccl::make_transport(nccl::NcclOptions{b.rank()}, b.rank(), b.size());
    t->connect_all(b);
    Progress p(*t, 30);
    const size_t count = 1 << 18;
    const size_t bytes = count * sizeof(float) * static_cast<size_t>(n);
    gpu::Buffer in(MemoryKind::cuda, bytes), out(MemoryKind::cuda, bytes);
    auto in_mr = t->register_memory(in.data(), bytes, MemoryKind::cuda);
    auto out_mr = t->register_memory(out.data(), bytes, MemoryKind::cuda);
    std::vector<std::byte> host(bytes);

    fill_input(DataType::f32, ReduceOp::sum, b.rank(), 3, host.data(), count);
    gpu::copy(in.data(), host.data(), count * sizeof(float));
    CollectiveOp op{
        CollectiveKind::all_reduce, {in_mr.get(), 0, 0}, {out_mr.get(), 0, 0}, count, DataType::f32, ReduceOp::sum};
    p.wait(p.post(b.rank(), OpKind::collective, [&](uint64_t id) { return t->post_collective(op, id); }), "allreduce");
    gpu::copy(host.data(), out.data(), count * sizeof(float));
    expect(count_wrong_allreduce(DataType::f32, ReduceOp::sum, n, 3, host.data(), count) == 0, "all-reduce result");
    expect(t->device_time_us() >= 0, "CUDA event timing");

    fill_alltoall(DataType::f32, b.rank(), n, 4, host.data(), count);
    gpu::copy(in.data(), host.data(), bytes);
    op.kind = CollectiveKind::all_to_all;
    p.wait(p.post(b.rank(), OpKind::collective, [&](uint64_t id) { return t->post_collective(op, id); }), "alltoall");
    gpu::copy(host.data(), out.data(), bytes);
    expect(count_wrong_alltoall(DataType::f32, b.rank(), n, 4, host.data(), count) == 0, "all-to-all result");

    // A ring of send/recv: each rank sends to the right, receives from the left.
    const int right = (b.rank() + 1) % n, left = (b.rank() + n - 1) % n;
    fill_bytes(b.rank(), 5, host.data(), 4096);
    gpu::copy(in.data(), host.data(), 4096);
    const uint64_t r = p.recv(left, 0, LocalSpan{out_mr.get(), 0, 4096});
    p.send(right, 0, LocalSpan{in_mr.get(), 0, 4096});
    p.wait(r, "a block from the left");
    p.wait_all("sends");
    gpu::copy(host.data(), out.data(), 4096);
    expect(count_wrong_bytes(left, 5, host.data(), 4096) == 0, "send/recv payload");
  });
}

TEST_CASE("nccl: host memory and one-sided operations are refused with a reason", "[gpu][nccl]") {
  run_ranks(1, [&](Bootstrap& b) {
    auto t = nccl::make_transport(nccl::NcclOptions{0}, 0, 1);
    expect(t->caps().native_collectives && t->caps().device_memory && !t->caps().write, "caps");
    std::vector<std::byte> host(64);
    bool threw = false;
    try {
      t->register_memory(host.data(), host.size(), MemoryKind::host);
    } catch (const UsageError&) {
      threw = true;
    }
    expect(threw, "host memory refused");
    (void)b;
  });
}

TEST_CASE("nccl: an input copied in just before the call is what the collective reads", "[gpu][nccl]") {
  // A copy from pageable host memory returns before its data has landed; NCCL's
  // non-blocking stream then read old bytes (an H200 showed wrong elements of a
  // one-rank out-of-place all-gather at 512K-4M in some runs). Each round writes a new
  // pattern and checks it comes out.
  run_ranks(1, [&](Bootstrap& b) {
    auto t = nccl::make_transport(nccl::NcclOptions{0}, 0, 1);
    t->connect_all(b);
    Progress p(*t, 30);
    for (size_t count : {size_t{1} << 17, size_t{1} << 18, size_t{1} << 20}) {
      const size_t bytes = count * sizeof(float);
      gpu::Buffer in(MemoryKind::cuda, bytes), out(MemoryKind::cuda, bytes);
      auto in_mr = t->register_memory(in.data(), bytes, MemoryKind::cuda);
      auto out_mr = t->register_memory(out.data(), bytes, MemoryKind::cuda);
      std::vector<std::byte> host(bytes);
      for (uint32_t round = 0; round < 20; ++round) {
        fill_block(DataType::f32, 0, 0, 100 + round, host.data(), count);
        gpu::copy(in.data(), host.data(), bytes);
        CollectiveOp op{
            CollectiveKind::all_gather, {in_mr.get(), 0, 0}, {out_mr.get(), 0, 0}, count, DataType::f32, ReduceOp::sum};
        p.wait(p.post(0, OpKind::collective, [&](uint64_t id) { return t->post_collective(op, id); }), "allgather");
        gpu::copy(host.data(), out.data(), bytes);
        INFO("count " << count << " round " << round);
        CHECK(count_wrong_allgather(DataType::f32, 1, 100 + round, host.data(), count) == 0);
      }
    }
  });
}
