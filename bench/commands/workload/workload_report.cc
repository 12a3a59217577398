#include "bench/commands/workload/workload_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "lib/core/stats.h"
#include "lib/results/results.h"

namespace railbench {

using nlohmann::json;
using namespace workload;

namespace {

constexpr GroupKind kAll[] = {GroupKind::tp, GroupKind::pp, GroupKind::dp, GroupKind::ep, GroupKind::edp};

std::string ranks_text(const std::vector<int>& r) {
  std::string s;
  for (size_t i = 0; i < r.size() && i < 8; ++i) s += (i ? "," : "") + std::to_string(r[i]);
  if (r.size() > 8) s += fmt::format(",... ({} ranks)", r.size());
  return s;
}

}  // namespace

void print_rank_map(const RunContext& ctx, const Trace& trace) {
  for (GroupKind k : kAll) {
    std::string line;
    int n = 0;
    for (const auto& g : trace.groups) {
      if (g.kind != k) continue;
      if (n++ < 4) line += fmt::format(" {}=[{}]", g.name, ranks_text(g.ranks));
    }
    if (n == 0) continue;
    if (n > 4) line += fmt::format(" ... {} groups", n);
    ctx.print(fmt::format("# {:<3} groups:{}", to_string(k), line));
  }
}

double ideal_step_us(const WorkloadTotals& t, double gbps) {
  const double bytes_per_us = gbps * 1e3 / 8 * std::max(t.rails, 1);  // Gb/s per rail -> bytes per us
  const double sync = t.sync_link_bytes / bytes_per_us;
  const double async = t.async_link_bytes / bytes_per_us;
  // The buckets overlap the backward of the last micro-batch (2/3 of its compute).
  const double window = t.compute_us * 2.0 / 3.0 / std::max(t.micro_batches, 1);
  return t.compute_us + sync + std::max(0.0, async - window);
}

json print_workload_summary(const RunContext& ctx, const WorkloadTotals& t, bool check) {
  json kinds = json::object();
  ctx.print(fmt::format("# {:<4} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10}", "kind", "bytes/step", "busbw_GB/s",
                        "op_p50_us", "op_p99_us", "op_p99.9", "ops"));
  for (GroupKind k : kAll) {
    const size_t i = static_cast<size_t>(k);
    if (t.op_us[i].empty()) continue;
    const Summary s = summarize(t.op_us[i]);
    const double per_iter_us = t.iterations ? t.kind_us[i] / t.iterations : 0;
    const double busbw = per_iter_us > 0 ? t.bus_bytes[i] / per_iter_us / 1e3 : 0;
    ctx.print(fmt::format("  {:<4} {:>12.0f} {:>10.2f} {:>10.1f} {:>10.1f} {:>10.1f} {:>10}", to_string(k), t.bytes[i],
                          busbw, s.p50, s.p99, s.p999, s.count));
    kinds[to_string(k)] = {{"bytes_per_step", t.bytes[i]},
                           {"busbw_gbps", busbw},
                           {"op_us", to_json(s)},
                           {"time_per_step_us", per_iter_us}};
  }
  const Summary step = summarize(t.step_us), exposed = summarize(t.exposed_us);
  const double ideal = ideal_step_us(t, t.line_rate_gbps);
  ctx.print(
      fmt::format("# step p50 {:.3f} ms, p99 {:.3f} ms; exposed communication p50 {:.3f} ms ({:.0f}% of the "
                  "step); compute {:.3f} ms",
                  step.p50 / 1e3, step.p99 / 1e3, exposed.p50 / 1e3, step.p50 > 0 ? 100 * exposed.p50 / step.p50 : 0,
                  t.compute_us / 1e3));
  ctx.print(fmt::format("# ideal step at {:.0f} Gb/s per rail x {} rail(s): {:.3f} ms; measured/ideal {:.2f}x",
                        t.line_rate_gbps, t.rails, ideal / 1e3, ideal > 0 ? step.p50 / ideal : 0));
  json what_if = json::array();
  std::string line = "# what-if (ideal step):";
  for (double g : {400.0, 800.0, 1600.0}) {
    const double us = ideal_step_us(t, g);
    line += fmt::format(" {:.0f} Gb/s {:.3f} ms;", g, us / 1e3);
    what_if.push_back({{"gbps_per_rail", g}, {"ideal_step_us", us}});
  }
  ctx.print(line);
  // The all-to-all-v lasts as long as its busiest member's share: even routing would
  // have taken 1 / rank_imbalance of the EP time.
  const size_t ep = static_cast<size_t>(GroupKind::ep);
  const double ep_us = t.iterations ? t.kind_us[ep] / t.iterations : 0;
  const double imbalance_cost_us = t.rank_imbalance > 1 ? ep_us * (1 - 1 / t.rank_imbalance) : 0;
  if (t.imbalance > 1.0)
    ctx.print(
        fmt::format("# EP: the busiest expert got {:.2f}x the mean token copies (worst op {:.2f}x), the busiest "
                    "rank {:.2f}x: about {:.3f} ms of the {:.3f} ms per step in EP ops is the imbalance's",
                    t.imbalance, t.worst_imbalance, t.rank_imbalance, imbalance_cost_us / 1e3, ep_us / 1e3));
  if (check) ctx.print(fmt::format("# Wrong elements : {} {}", t.wrong, t.wrong ? "FAILED" : "OK"));
  return json{{"step_us", to_json(step)},
              {"exposed_us", to_json(exposed)},
              {"compute_us", t.compute_us},
              {"kinds", kinds},
              {"ideal_step_us", ideal},
              {"ideal_ratio", ideal > 0 ? step.p50 / ideal : 0},
              {"what_if", what_if},
              {"expert_imbalance", {{"mean", t.imbalance}, {"worst", t.worst_imbalance}}},
              {"rank_imbalance", t.rank_imbalance},
              {"imbalance_cost_us", imbalance_cost_us},
              {"wrong", t.wrong}};
}

std::vector<TimelineSpan> timeline_spans(const workload::Trace& trace, int rank, const std::vector<float>& start_us,
                                         const std::vector<float>& end_us) {
  using workload::OpType;
  const auto& ops = trace.ranks[static_cast<size_t>(rank)];
  std::vector<TimelineSpan> out;
  for (size_t pc = 0; pc < ops.size() && pc < start_us.size(); ++pc) {
    const OpType t = ops[pc].type;
    if (t == OpType::wait || (t == OpType::compute && !(end_us[pc] > start_us[pc]))) continue;
    out.push_back({static_cast<uint32_t>(pc), start_us[pc], end_us[pc]});
  }
  if (out.size() > kTimelineOps) {
    std::nth_element(out.begin(), out.begin() + kTimelineOps, out.end(),
                     [](const auto& a, const auto& b) { return a.end_us - a.start_us > b.end_us - b.start_us; });
    out.resize(kTimelineOps);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pc < b.pc; });
  }
  return out;
}

namespace {
// A float's microseconds as a double rounded to the nanosecond (no float noise in the JSON).
double to_ns(float us) {
  return std::round(static_cast<double>(us) * 1e3) / 1e3;
}
}  // namespace

nlohmann::json timeline_json(const workload::Trace& trace, int rank, const std::string& node, int iteration,
                             double step_us, const std::vector<TimelineSpan>& spans) {
  using workload::OpType;
  const auto& ops = trace.ranks[static_cast<size_t>(rank)];
  nlohmann::json list = nlohmann::json::array();
  size_t in_step = 0;  // what the timeline could show: every op but the waits
  for (const workload::Op& op : ops) in_step += op.type != OpType::wait;
  for (const TimelineSpan& s : spans) {
    const workload::Op& op = ops[s.pc];
    const bool compute = op.type == OpType::compute;
    nlohmann::json o{{"index", s.pc},
                     {"lane", compute ? "compute" : workload::to_string(op.kind)},
                     {"type", workload::to_string(op.type)},
                     {"label", op.label},
                     {"start_us", to_ns(s.start_us)},
                     {"us", to_ns(s.end_us - s.start_us)}};
    if (op.async) o["async"] = true;
    list.push_back(std::move(o));
  }
  return {{"iteration", iteration}, {"rank", rank},           {"node", node},
          {"step_us", step_us},     {"ops", std::move(list)}, {"ops_in_step", in_step}};
}

}  // namespace railbench
