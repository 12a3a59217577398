#include "bench/runner/timeline_run.h"

#include <fmt/format.h>

#include "lib/results/results.h"

namespace railbench {

using nlohmann::json;

RunTimeline::RunTimeline(std::string path, int ranks, std::unique_ptr<Transport>& transport, bool sample_interfaces)
    : path_(std::move(path)) {
  const int rails = transport->num_rails();
  recorder_ = std::make_unique<TimelineRecorder>(rails, timeline_bucket_cap(ranks, rails));
  transport = std::make_unique<TimelineTransport>(std::move(transport), *recorder_);
  if (sample_interfaces) {
    std::vector<std::string> names;
    for (int r = 0; r < rails; ++r) names.push_back(transport->rail_info(r).name);
    sampler_ = std::make_unique<InterfaceSampler>(*recorder_, names);
  }
}

RunTimeline::~RunTimeline() = default;

std::vector<std::string> RunTimeline::finish(Bootstrap& bootstrap, ResultsFile& results) {
  if (sampler_) sampler_->stop();
  const auto blobs = bootstrap.gather_v(serialize_rank(*recorder_));
  if (bootstrap.rank() != 0) return {};
  const TimelineData data = merge_ranks(blobs, recorder_->rails());
  write_timeline_file(path_, data, "--timeline");
  results.set("timeline", timeline_summary_json(data, path_));
  return timeline_summary_lines(data, path_);
}

json timeline_summary_json(const TimelineData& data, const std::string& path) {
  json links = json::array();
  uint64_t overflow = 0, marks = 0, dropped = 0;
  for (uint32_t r = 0; r < data.ranks; ++r) {
    overflow += data.overflow_bytes[r];
    marks += data.marks[r].size();
    dropped += data.dropped_marks[r];
    for (uint32_t rail = 0; rail < data.rails; ++rail) {
      for (auto s : {TimelineSeries::tx, TimelineSeries::iface_tx}) {
        if (!data.has(r, rail, s)) continue;
        const TimelineWindows w = timeline_windows(data.series(r, rail, s), data.buckets, data.bucket_us);
        if (w.bytes == 0) continue;
        links.push_back(json{{"rank", r},
                             {"rail", rail},
                             {"series", to_string(s)},
                             {"bytes", w.bytes},
                             {"peak_ms_gbps", w.peak_ms_gbps},
                             {"peak_1s_gbps", w.peak_1s_gbps},
                             {"peak_5min_gbps", w.peak_5min_gbps},
                             {"busy_fraction", w.busy_fraction}});
      }
    }
  }
  return json{{"file", path},
              {"format", "railbench.timeline"},
              {"version", kTimelineVersion},
              {"bucket_us", data.bucket_us},
              {"buckets", data.buckets},
              {"start_unix_ns", data.start_unix_ns},
              {"bytes_past_cap", overflow},
              {"iterations", marks},
              {"iterations_dropped", dropped},
              {"links", std::move(links)}};
}

std::vector<std::string> timeline_summary_lines(const TimelineData& data, const std::string& path) {
  std::vector<std::string> out;
  out.push_back(fmt::format("# timeline: {} ({} ranks, {} rails, {} x {} us buckets); sent per link in Gb/s:", path,
                            data.ranks, data.rails, data.buckets, data.bucket_us));
  for (uint32_t rail = 0; rail < data.rails; ++rail) {
    for (auto s : {TimelineSeries::tx, TimelineSeries::iface_tx}) {
      int best = -1;
      TimelineWindows top;
      for (uint32_t r = 0; r < data.ranks; ++r) {
        if (!data.has(r, rail, s)) continue;
        const TimelineWindows w = timeline_windows(data.series(r, rail, s), data.buckets, data.bucket_us);
        if (w.bytes > 0 && (best < 0 || w.peak_ms_gbps > top.peak_ms_gbps)) {
          best = static_cast<int>(r);
          top = w;
        }
      }
      if (best < 0) continue;
      out.push_back(fmt::format(
          "#   rail {} {:<8} busiest rank {}: peak 1 ms {:.3f}, peak 1 s {:.3f}, 5 min {:.4f} (busy {:.0f}% of ms, "
          "{} B)",
          rail, to_string(s), best, top.peak_ms_gbps, top.peak_1s_gbps, top.peak_5min_gbps, top.busy_fraction * 100,
          top.bytes));
    }
  }
  uint64_t overflow = 0;
  for (uint64_t o : data.overflow_bytes) overflow += o;
  if (overflow > 0)
    out.push_back(fmt::format("#   {} B came after the timeline's {} buckets and are counted, not placed", overflow,
                              data.buckets));
  return out;
}

}  // namespace railbench
