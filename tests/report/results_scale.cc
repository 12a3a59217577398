// Writes the results file of a validate run of any SU size through validate's own writer
// (PairResult's to_json, link_stats, rail_matrices and lib/results' ResultsFile), without
// running a rank: the pairs are validate's circle schedule on every rail, the figures
// seeded noise of the real shape (full-precision doubles, counters when asked). It prints
// the pair tests, the file's size, and each write's seconds and peak RSS: the figures of
// the report guide's "Size and speed" (scripts/bench/results-scale.py runs it).
//
//   railbench_results_scale OUT.json [--nodes 1024] [--rails 8] [--counters] [--fail-every K] [--dom]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/commands/validate/report.h"
#include "bench/commands/validate/verdict.h"
#include "lib/core/schedule.h"
#include "lib/results/results.h"

namespace {

using nlohmann::json;
using railbench::PairResult;

struct Options {
  std::string out;
  int nodes = 1024, rails = 8;
  bool counters = false;  // each side's NIC counters, as a run without --no-counters keeps them
  bool dom = false;       // rail_pairs and rails as JSON values (ResultsFile::set), as validate wrote them before
  long fail_every = 0;    // every K-th pair test did not finish (0: none)
};

// The peak resident set since the last reset, in MB (Linux: VmHWM).
double peak_rss_mb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024;
  return 0;
}

// Starts a new peak: each step's own figure, not the largest so far.
void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

// What a clean pair test's NICs count (data counters move; no fault kind does).
json side_counters(int rail, uint64_t bytes) {
  return json{{"rail", rail},
              {"rail_name", fmt::format("mlx5_{}", rail)},
              {"kinds", json::object()},
              {"deltas",
               {{"port/port_xmit_data_bytes", bytes},
                {"port/port_rcv_data_bytes", bytes},
                {"port/port_xmit_packets", bytes / 4096},
                {"port/port_rcv_packets", bytes / 4096}}}};
}

std::vector<PairResult> pair_results(const Options& o) {
  std::mt19937_64 rng(15);
  std::normal_distribution<double> bw(46.5, 0.4), lat(3.1, 0.05);
  std::vector<PairResult> out;
  out.reserve(static_cast<size_t>(o.nodes) * (o.nodes - 1) / 2 * o.rails);
  long k = 0;
  for (const auto& round : railbench::circle_schedule(o.nodes)) {
    for (const auto& p : round) {
      for (int s = 0; s < o.rails; ++s) {
        PairResult r{railbench::PairPhase::rail, p.a, p.b, s, s};
        if (o.fail_every > 0 && ++k % o.fail_every == 0) {
          r.ok = false;
          r.error = fmt::format("pair test did not finish within 30 s (node {} never answered)", p.b);
        } else {
          r.bw_ab = bw(rng), r.bw_ba = bw(rng), r.bidir = r.bw_ab + r.bw_ba - 0.2;
          r.lat_p50 = lat(rng), r.lat_p99 = r.lat_p50 * 1.4, r.lat_p999 = r.lat_p50 * 1.9;
          r.bw_spread = 0.02 * lat(rng), r.test_s = 1.5 + 0.01 * lat(rng);
        }
        if (o.counters) r.counters_a = side_counters(s, 8ULL << 30), r.counters_b = side_counters(s, 8ULL << 30);
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

railbench::SuConfig su_config(const Options& o, const std::vector<std::string>& names) {
  railbench::SuConfig c;
  c.name = fmt::format("su-{}x{}", o.nodes, o.rails);
  c.nodes = names;
  c.gpus_per_node = o.rails;
  for (int s = 0; s < o.rails; ++s) {
    railbench::SuRail r;
    r.gpu = s, r.nic = fmt::format("mlx5_{}", s), r.leaf = fmt::format("leaf{}", s / 2 + 1);
    r.speed_gbps = 400, r.line_rate_gbps = 400, r.mtu = 4096;
    c.rails.push_back(r);
  }
  return c;
}

template <class F>
void step(const char* what, F&& f) {
  reset_peak_rss();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("{:<34} {:8.2f} s  peak RSS {:8.0f} MB\n", what, s, peak_rss_mb());
}

int usage(const char* why) {
  fmt::print(stderr,
             "railbench_results_scale: {}: give OUT.json [--nodes N>=2] [--rails R>=1] [--counters] "
             "[--fail-every K] [--dom]\n",
             why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--nodes" && has_value)
      o.nodes = std::atoi(argv[++i]);
    else if (a == "--rails" && has_value)
      o.rails = std::atoi(argv[++i]);
    else if (a == "--fail-every" && has_value)
      o.fail_every = std::atol(argv[++i]);
    else if (a == "--counters")
      o.counters = true;
    else if (a == "--dom")
      o.dom = true;
    else if (o.out.empty() && a.rfind("--", 0) != 0)
      o.out = a;
    else
      return usage(fmt::format("unknown option '{}'", a).c_str());
  }
  if (o.out.empty() || o.nodes < 2 || o.rails < 1) return usage("missing or out-of-range argument");
  std::vector<std::string> names;
  for (int x = 0; x < o.nodes; ++x) names.push_back(fmt::format("gpu{:04}", x + 1));
  const railbench::SuConfig c = su_config(o, names);
  std::vector<PairResult> pairs;
  step("pair results in memory (validate's)", [&] { pairs = pair_results(o); });
  fmt::print("rail pair tests: {} ({} nodes x {} rails)\n", pairs.size(), o.nodes, o.rails);
  railbench::ResultsFile file(o.out, json{{"command", "validate"},
                                          {"config", {{"su", c.name}, {"transport", "verbs"}}},
                                          {"world", {{"size", o.nodes * o.rails}, {"hosts", o.nodes}}},
                                          {"transport", {{"name", "verbs"}, {"rails", 1}}}});
  step("write rail_pairs", [&] {
    if (o.dom)
      file.set("rail_pairs", pairs);
    else
      file.set_array("rail_pairs", pairs.size(), [&](size_t i) { return json(pairs[i]); });
  });
  step("write rails (matrices)", [&] {
    const auto stats = railbench::link_stats(c, o.nodes, pairs);
    if (o.dom) {
      file.set("rails", railbench::rail_matrices(c, names, pairs, stats));
      return;
    }
    auto rails =
        railbench::rail_matrices_streamed(c, names, std::make_shared<const std::vector<PairResult>>(pairs), stats);
    file.set_with_arrays("rails", std::move(rails.rails), std::move(rails.matrices));
  });
  step("write the verdict (finish)", [&] { file.finish(true); });
  const auto bytes = std::filesystem::file_size(o.out);
  fmt::print("file: {} bytes ({:.1f} MB), {:.0f} bytes per pair test\n", bytes, bytes / 1e6,
             static_cast<double>(bytes) / static_cast<double>(pairs.size()));
  return 0;
}
