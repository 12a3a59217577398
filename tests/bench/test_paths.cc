// --paths (bench/runner/paths_run.h): which ranks each rank traces towards, and the probe
// rate that keeps a switch under its ICMP budget however many ranks trace at once.
#include <catch2/catch.hpp>

#include "bench/runner/paths_run.h"

using namespace railbench;

TEST_CASE("paths: each rank traces the next N ranks, wrapping, never itself", "[paths]") {
  CHECK(paths_peers(0, 2, 1) == std::vector<int>{1});
  CHECK(paths_peers(1, 2, 1) == std::vector<int>{0});
  CHECK(paths_peers(3, 4, 2) == std::vector<int>{0, 1});
  // N past the world: every other rank once.
  CHECK(paths_peers(1, 3, 8) == std::vector<int>{2, 0});
  CHECK(paths_peers(0, 1, 4).empty());
}

TEST_CASE("paths: the per-rank probe rate shares a switch's ICMP budget", "[paths]") {
  // Up to 3 ranks: each may ask at the switch's rate (a trace asks each of ~3 hops once).
  CHECK(paths_probe_rate(100, 2) == Approx(100));
  CHECK(paths_probe_rate(100, 3) == Approx(100));
  // 256 ranks behind one switch in the worst case: 100 / (256 / 3).
  CHECK(paths_probe_rate(100, 256) == Approx(100.0 * 3 / 256));
  // The plan line: 16 flows at 100 probes/s: 112 probes, 1.1 s; two waves of silent
  // TTLs, 2 s: the waits decide.
  CHECK(paths_plan_line(16, 100) == "# paths: tracing 16 flow(s) a rank at 100.0 probes/s a rank: about 2 s");
  CHECK(paths_plan_line(16, 1) == "# paths: tracing 16 flow(s) a rank at 1.0 probes/s a rank: about 112 s");
}
