// railbench timeline: a --timeline file's per-link figures (peak 1 ms, peak 1 s, 5 min
// average) on stdout, and with --csv its buckets as a spreadsheet-ready table. Needs no
// ranks and no transport: it runs before any bootstrap, like `report`.
#include <memory>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/runner/timeline_run.h"
#include "lib/core/csv.h"
#include "lib/observe/timeline.h"
#include "lib/results/results.h"

namespace railbench {

namespace {

struct TimelineArgs {
  std::string file;
  std::string csv;
};

// One row per bucket: its start in ms, then one column per recorded (rank, rail,
// series), e.g. r0.rail1.tx, in bytes; the iteration marks are not in it.
std::string timeline_csv(const TimelineData& d) {
  std::string out = "ms";
  std::vector<const uint64_t*> cols;
  for (uint32_t r = 0; r < d.ranks; ++r) {
    for (uint32_t rail = 0; rail < d.rails; ++rail) {
      for (int s = 0; s < kTimelineSeriesCount; ++s) {
        const auto series = static_cast<TimelineSeries>(s);
        if (!d.has(r, rail, series)) continue;
        out += fmt::format(",r{}.rail{}.{}", r, rail, to_string(series));
        cols.push_back(d.series(r, rail, series));
      }
    }
  }
  out += "\r\n";
  for (uint64_t b = 0; b < d.buckets; ++b) {
    out += fmt::format("{}", static_cast<double>(b) * d.bucket_us / 1000.0);
    for (const uint64_t* c : cols) out += fmt::format(",{}", c[b]);
    out += "\r\n";
  }
  return out;
}

int run_timeline(const TimelineArgs& args) {
  const TimelineData d = read_timeline_file(args.file);
  for (const auto& line : timeline_summary_lines(d, args.file)) fmt::print("{}\n", line);
  uint64_t iterations = 0;
  for (const auto& m : d.marks) iterations += m.size();
  if (iterations > 0) fmt::print("#   {} collective iterations marked\n", iterations);
  if (!args.csv.empty()) {
    check_results_path(args.csv, "--csv", "timeline.csv");
    write_text_file(args.csv, timeline_csv(d), "--csv");
    fmt::print("# csv: {} ({} rows)\n", args.csv, d.buckets);
  }
  return 0;
}

const bool cmd_timeline_registered = register_subcommand(Subcommand{
    "timeline", "A --timeline file's peak 1 ms vs 1 s vs 5 min figures per link, and its buckets as CSV", 66,
    [](CLI::App& sub, CommonOptions&) {
      auto args = std::make_shared<TimelineArgs>();
      sub.add_option("file", args->file, "The file --timeline wrote")->required();
      sub.add_option("--csv", args->csv, "Write one row per 1 ms bucket, one column per (rank, rail, series)");
      return SubcommandRun{[args] { return std::optional<int>(run_timeline(*args)); }, {}};
    }});

}  // namespace
}  // namespace railbench
