// GPU tests: compiled in every CUDA build, run where a device is visible, and skipped
// (ctest SKIP_RETURN_CODE 77) with the reason printed everywhere else.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "lib/transport/gpu.h"

int main(int argc, char** argv) {
  const railbench::gpu::Probe p = railbench::gpu::probe();
  if (p.count == 0) {
    std::printf("SKIP: no CUDA device visible (cudaGetDeviceCount returned %s)\n", p.error.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
