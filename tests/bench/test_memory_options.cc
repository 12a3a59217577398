// --mem and --gpu-map as the command line gives them.
#include <catch2/catch.hpp>

#include "bench/runner/memory_setup.h"
#include "lib/core/errors.h"
#include "lib/transport/gpu.h"

using namespace railbench;
using Catch::Matchers::Contains;

TEST_CASE("mem option: accepts host, cuda and cuda-host and names them on anything else", "[options]") {
  CHECK(parse_memory_kind("host") == MemoryKind::host);
  CHECK(parse_memory_kind("cuda") == MemoryKind::cuda);
  CHECK(parse_memory_kind("cuda-host") == MemoryKind::cuda_host);
  CHECK_THROWS_AS(parse_memory_kind("gpu"), UsageError);
  CHECK_THROWS_WITH(parse_memory_kind("gpu"), Contains("unknown --mem 'gpu'") && Contains("cuda-host"));
}

TEST_CASE("gpu-map option: takes distinct GPU indices, one per local rank", "[options]") {
  CHECK(parse_gpu_map("").empty());
  CHECK(parse_gpu_map("3,2,1,0") == std::vector<int>{3, 2, 1, 0});
  CHECK_THROWS_WITH(parse_gpu_map("0,x"), Contains("'x' is not a GPU index"));
  CHECK_THROWS_WITH(parse_gpu_map("0,,1"), Contains("'' is not a GPU index"));
  CHECK_THROWS_WITH(parse_gpu_map("-1"), Contains("not a GPU index"));
  // Local ranks may share a GPU, except where the transport needs one per rank.
  CHECK(parse_gpu_map("0,0") == std::vector<int>{0, 0});
  CHECK(gpu_map_shares(parse_gpu_map("0,1,0")));
  CHECK_FALSE(gpu_map_shares(parse_gpu_map("1,0")));
  CHECK_THROWS_WITH(parse_gpu_map("1,1", "-t nccl"), Contains("names GPU 1 twice: -t nccl needs a GPU of its own"));
}

TEST_CASE("local rank -> GPU: identity by default, the map when given, checked against the node", "[options]") {
  CHECK(gpu_for_local_rank({}, 5, 8) == 5);
  CHECK(gpu_for_local_rank({7, 6}, 1, 8) == 6);
  CHECK_THROWS_WITH(gpu_for_local_rank({}, 8, 8), Contains("shows 8 GPU(s)") && Contains("--gpu-map"));
  CHECK_THROWS_WITH(gpu_for_local_rank({0, 1}, 2, 8), Contains("has 2 entries") && Contains("local rank 2"));
  CHECK_THROWS_WITH(gpu_for_local_rank({9}, 0, 8), Contains("GPU 9"));
}

TEST_CASE("host memory needs no GPU, GPU memory without one is a one-line UnsupportedError", "[options]") {
  const auto host = place_memory("host", "", MemoryKind::host, 0, PciTopology{});
  CHECK(host.kind == MemoryKind::host);
  CHECK(host.gpu == -1);
  CHECK(host.to_json().at("memory") == "host");
  CHECK_THROWS_AS(place_memory("bogus", "", MemoryKind::host, 0, PciTopology{}), UsageError);
  if (gpu::probe().count > 0) return;  // the rest is about hosts without a GPU
  try {
    place_memory("cuda", "", MemoryKind::host, 0, PciTopology{});
    FAIL("expected an error without a GPU");
  } catch (const UnsupportedError& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    CHECK_THAT(what, Contains("--mem cuda"));
    CHECK_THAT(what, Contains(gpu::built_in() ? "cudaGetDeviceCount" : "built without CUDA"));
  }
}
