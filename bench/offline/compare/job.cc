#include "bench/offline/compare/job.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "bench/offline/compare/load.h"
#include "bench/offline/compare/output.h"
#include "lib/core/errors.h"
#include "lib/core/sizes.h"
#include "lib/core/stats.h"

namespace railbench::compare {

using nlohmann::json;

namespace {

// busbw in GB/s (1e9 B/s) of S bytes in t us, nccl-tests' factor for n ranks.
double busbw_of(const std::string& collective, uint64_t bytes, int nranks, double time_us) {
  const auto p = pattern_of(collective);
  if (!p || time_us <= 0) return 0;
  return static_cast<double>(bytes) * bus_factor(*p, nranks) / (time_us * 1e3);
}

// The Inspector computes its own busbw per record; where it is not S x factor / time
// (AlltoAll, which it gives no factor; another version's definition) compare says so.
bool busbw_disagrees(const InspectorRecord& r, const std::string& collective, uint64_t bytes) {
  if (!r.file_busbw || r.exec_us <= 0 || !pattern_of(collective)) return false;
  const double ours = busbw_of(collective, bytes, r.nranks, r.exec_us);
  // The Inspector prints six decimals.
  return std::fabs(*r.file_busbw - ours) > 0.01 * ours + 1e-6;
}

}  // namespace

double JobGroup::total_us() const {
  double sum = 0;
  for (double t : time_us) sum += t;
  return sum;
}

size_t JobComparison::compared() const {
  return static_cast<size_t>(std::count_if(rows.begin(), rows.end(), [](const JobRow& r) { return r.fabric; }));
}

void CallGrouper::add(const InspectorRecord& r) {
  const std::string coll = railbench_collective(r.coll);
  const uint64_t bytes = collective_bytes(coll, r.msg_bytes, r.nranks);
  const GroupKey key{coll, r.nranks, bytes, r.coll};
  JobGroup& g = groups_[key];
  if (g.collective.empty()) {
    g.collective = coll;
    g.nccl_name = r.coll;
    g.nranks = r.nranks;
    g.bytes = bytes;
  }
  if (busbw_disagrees(r, coll, bytes)) ++g.busbw_mismatches;
  if (!r.timing_source.empty() && r.timing_source != "kernel_gpu") ++g.host_timed;
  const auto [comm, new_comm] = comm_index_.try_emplace(r.comm, static_cast<uint32_t>(comm_hosts_.size()));
  if (new_comm) comm_hosts_.emplace_back();
  if (!r.host.empty()) comm_hosts_[comm->second].insert(r.host);
  auto [call, fresh] = calls_[key].try_emplace({comm->second, r.sn}, r.exec_us);
  if (fresh)
    g.comms.insert(r.comm);
  else
    call->second = std::max(call->second, r.exec_us);
}

std::vector<JobGroup> CallGrouper::groups() {
  std::vector<std::string> comm_names(comm_hosts_.size());
  for (const auto& [name, index] : comm_index_) comm_names[index] = name;
  std::vector<JobGroup> out;
  for (auto& [key, g] : groups_) {
    for (const auto& [call, t] : calls_[key]) {
      if (t > 0)
        g.time_us.push_back(t);
      else
        ++g.untimed;
    }
    // A communicator's hosts are those of all its records, whichever calls were sampled.
    for (const auto& c : g.comms) {
      const auto& hosts = comm_hosts_[comm_index_.at(c)];
      g.hosts.insert(hosts.begin(), hosts.end());
    }
    out.push_back(std::move(g));
  }
  groups_.clear();
  calls_.clear();
  return out;
}

std::vector<JobGroup> group_calls(const std::vector<InspectorRecord>& records) {
  CallGrouper grouper;
  for (const auto& r : records) grouper.add(r);
  return grouper.groups();
}

namespace {

std::set<std::string> hosts_of(const json& doc) {
  std::set<std::string> hosts;
  if (!doc.contains("world") || !doc["world"].contains("ranks")) return hosts;
  for (const auto& r : doc["world"]["ranks"])
    if (r.value("host", json()).is_string()) hosts.insert(r["host"].get<std::string>());
  return hosts;
}

void sort_points(FabricCurve& c) {
  std::sort(c.points.begin(), c.points.end());
}

std::vector<FabricCurve> sweep_curve(const json& doc, const std::string& path, const std::string& command) {
  // An uneven (routed) all-to-all is not the collective NCCL's AlltoAll runs.
  if (doc.contains("config") && doc["config"].contains("routing")) return {};
  FabricCurve c{command, doc.at("world").at("size").get<int>(), path, {}, hosts_of(doc)};
  for (const auto& r : doc.at("results")) {
    for (const char* side : {"out_of_place", "in_place"}) {
      if (!r.contains(side) || r[side].value("busbw_gbps", 0.0) <= 0) continue;
      c.points.emplace_back(r.at("bytes").get<uint64_t>(), r[side]["busbw_gbps"].get<double>());
      break;
    }
  }
  sort_points(c);
  if (c.points.empty()) return {};
  return {c};
}

}  // namespace

std::vector<FabricCurve> fabric_curves(const json& doc, const std::string& path) {
  const std::string command = doc.value("command", "");
  try {
    if (command == "allreduce" || command == "allgather" || command == "reducescatter" || command == "alltoall")
      return sweep_curve(doc, path, command);
    if (command != "validate" || !doc.contains("collectives")) return {};
    std::map<std::pair<std::string, int>, FabricCurve> by;
    for (const auto& e : doc["collectives"]) {
      if (e.value("busbw_gbs", 0.0) <= 0) continue;
      const std::string coll = e.at("collective").get<std::string>();
      const int n = e.at("ranks").get<int>();
      FabricCurve& c = by[{coll, n}];
      if (c.points.empty()) c = FabricCurve{coll, n, path, {}, hosts_of(doc)};
      c.points.emplace_back(e.at("bytes").get<uint64_t>(), e["busbw_gbs"].get<double>());
    }
    std::vector<FabricCurve> out;
    for (auto& [k, c] : by) {
      sort_points(c);
      out.push_back(std::move(c));
    }
    return out;
  } catch (const json::exception& e) {
    throw UsageError(
        fmt::format("compare --job: {}: a {} result lacks a field ({}): is it a results file (--json) "
                    "of this railbench version?",
                    path, command, e.what()));
  }
}

std::vector<FabricCurve> fabric_curves_of_store(const std::vector<store::Store::CollectiveRun>& runs,
                                                const std::string& store_name) {
  std::vector<FabricCurve> out;
  for (const auto& run : runs) {
    FabricCurve c;
    c.collective = run.command;
    c.source = fmt::format("store {}: run {} of {}", store_name, run.key, run.started_at);
    for (size_t pos = 0; pos < run.hosts.size();) {  // comma-separated
      const size_t comma = std::min(run.hosts.find(',', pos), run.hosts.size());
      c.hosts.insert(run.hosts.substr(pos, comma - pos));
      pos = comma + 1;
    }
    c.nranks = run.ranks;
    const std::string prefix = run.command + " ";
    for (const auto& [name, gbs] : run.busbw) {
      if (name.rfind(prefix, 0) != 0) continue;
      try {
        c.points.emplace_back(parse_size(std::string_view(name).substr(prefix.size())), gbs);  // "4M", "512B"
      } catch (const UsageError&) {
        continue;  // a thing of that name that is no size
      }
    }
    if (c.nranks < 1 || c.points.empty()) continue;
    sort_points(c);
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<FabricFigure> fabric_at(const FabricCurve& curve, uint64_t bytes) {
  const auto& p = curve.points;
  if (p.empty() || bytes < p.front().first || bytes > p.back().first) return std::nullopt;
  const auto hi = std::lower_bound(p.begin(), p.end(), bytes, [](const auto& pt, uint64_t b) { return pt.first < b; });
  if (hi->first == bytes) return FabricFigure{hi->second, true, bytes, bytes};
  const auto lo = hi - 1;
  // Bandwidth curves are straight-ish against log(size), not against size.
  const double w = (std::log(static_cast<double>(bytes)) - std::log(static_cast<double>(lo->first))) /
                   (std::log(static_cast<double>(hi->first)) - std::log(static_cast<double>(lo->first)));
  return FabricFigure{lo->second + w * (hi->second - lo->second), false, lo->first, hi->first};
}

namespace {

const FabricCurve* pick_curve(const JobGroup& g, const std::vector<FabricCurve>& curves) {
  const FabricCurve* first = nullptr;
  for (const auto& c : curves) {
    if (c.collective != g.collective || c.nranks != g.nranks) continue;
    if (!g.hosts.empty() && c.hosts == g.hosts) return &c;
    if (first == nullptr) first = &c;
  }
  return first;
}

uint64_t pow2_at_most(uint64_t v) {
  uint64_t p = 1;
  while (p <= v / 2) p *= 2;
  return p;
}

uint64_t pow2_at_least(uint64_t v) {
  uint64_t p = 1;
  while (p < v && p <= UINT64_MAX / 2) p *= 2;
  return p;
}

// The sizes a sweep must span to cover every size the job used of one collective at one
// rank count: powers of two around them, so that a -f 2 sweep lands on both ends.
using SizeSpans = std::map<std::pair<std::string, int>, std::pair<uint64_t, uint64_t>>;
SizeSpans size_spans(const std::vector<JobGroup>& groups) {
  SizeSpans spans;
  for (const auto& g : groups) {
    auto [it, fresh] = spans.try_emplace({g.collective, g.nranks}, g.bytes, g.bytes);
    it->second.first = std::min(it->second.first, g.bytes);
    it->second.second = std::max(it->second.second, g.bytes);
  }
  return spans;
}

// Why a group has no figure to be held against, and what to run to get one.
std::string why_not(const JobGroup& g, const std::vector<FabricCurve>& curves, const SizeSpans& spans) {
  if (g.collective == "sendrecv")
    return fmt::format("railbench sendrecv measures pairs of ranks, not NCCL's {} inside a job", g.nccl_name);
  if (!pattern_of(g.collective) || g.collective == "broadcast")
    return fmt::format("railbench has no {} benchmark", g.nccl_name);
  std::set<int> counts;
  for (const auto& c : curves)
    if (c.collective == g.collective) counts.insert(c.nranks);
  const auto [lo, hi] = spans.at({g.collective, g.nranks});
  const std::string run =
      fmt::format("run `mpirun -np {} ... railbench {} -b {} -e {} -f 2 --json FILE` on the job's nodes and give FILE",
                  g.nranks, g.collective, format_size(pow2_at_most(lo)), format_size(pow2_at_least(hi)));
  if (counts.empty()) return fmt::format("the results given have no {} figure: {}", g.collective, run);
  std::string have;
  for (int n : counts) have += fmt::format("{}{}", have.empty() ? "" : ", ", n);
  return fmt::format("the results given have {} at {} rank(s), not at {}: {}", g.collective, have, g.nranks, run);
}

void fill_job_figures(JobRow& row) {
  std::vector<double> bw;
  for (double t : row.group.time_us) bw.push_back(busbw_of(row.group.collective, row.group.bytes, row.group.nranks, t));
  std::sort(bw.begin(), bw.end());
  if (bw.empty()) return;
  row.busbw_p10 = percentile_sorted(bw, 10);
  row.busbw_p50 = percentile_sorted(bw, 50);
  row.busbw_p90 = percentile_sorted(bw, 90);
}

}  // namespace

JobComparison compare_job(const std::vector<JobGroup>& groups, const std::vector<FabricCurve>& curves) {
  JobComparison out;
  const SizeSpans spans = size_spans(groups);
  for (const auto& g : groups) {
    JobRow row;
    row.group = g;
    fill_job_figures(row);
    const FabricCurve* c = pattern_of(g.collective) ? pick_curve(g, curves) : nullptr;
    if (c == nullptr) {
      row.why = why_not(g, curves, spans);
    } else if (g.time_us.empty()) {
      row.why = "every call took under the Inspector's 1 us grain (coll_exec_time_us 0): no busbw to compare";
    } else if (!(row.fabric = fabric_at(*c, g.bytes))) {
      row.why = fmt::format("{} lies outside railbench's sweep in {} ({}..{}): rerun it with -b/-e covering it",
                            format_size(g.bytes), c->source, format_size(c->points.front().first),
                            format_size(c->points.back().first));
    } else {
      row.source = c->source;
      row.fabric_hosts = c->hosts;
      row.nodes = g.hosts.empty() || c->hosts.empty() ? "unknown" : g.hosts == c->hosts ? "same" : "different";
      row.share = row.busbw_p50 / row.fabric->busbw;
      row.fabric_time_us =
          static_cast<double>(g.bytes) * bus_factor(*pattern_of(g.collective), g.nranks) / (row.fabric->busbw * 1e3);
      row.lost_us = g.total_us() - static_cast<double>(g.time_us.size()) * row.fabric_time_us;
    }
    out.rows.push_back(std::move(row));
  }
  for (size_t i = 0; i < out.rows.size(); ++i)
    if (out.rows[i].fabric && out.rows[i].lost_us > 0) out.shortfalls.push_back(i);
  std::stable_sort(out.shortfalls.begin(), out.shortfalls.end(),
                   [&](size_t a, size_t b) { return out.rows[a].lost_us > out.rows[b].lost_us; });
  return out;
}

namespace {

// "; AllReduce at 8 ranks (64K, 1M): why": one reason per collective and rank count, with
// the sizes it holds for.
std::string reasons_not_compared(const JobComparison& c) {
  struct Reason {
    std::string what, sizes, why;
  };
  std::vector<Reason> reasons;
  for (const auto& r : c.rows) {
    const std::string what = fmt::format("{} at {} ranks", r.group.nccl_name, r.group.nranks);
    auto same =
        std::find_if(reasons.begin(), reasons.end(), [&](const Reason& x) { return x.what == what && x.why == r.why; });
    if (same == reasons.end())
      reasons.push_back({what, format_size(r.group.bytes), r.why});
    else
      same->sizes += ", " + format_size(r.group.bytes);
  }
  std::string out;
  for (const auto& x : reasons) out += fmt::format("; {} ({}): {}", x.what, x.sizes, x.why);
  return out;
}

}  // namespace

int run_compare_job(const std::vector<std::string>& inspector_paths, const std::vector<std::string>& results_paths,
                    const std::string& json_path, const std::vector<FabricCurve>& stored) {
  if (inspector_paths.empty() || (results_paths.empty() && stored.empty())) {
    throw UsageError(
        "compare --job: give the job's NCCL Inspector files (or their directory) and railbench results files "
        "(--json of allreduce, allgather, reducescatter, alltoall or validate), or --db for the run store's "
        "collective sweeps: e.g. compare --job nccl-inspector-1234/ allreduce.json");
  }
  // Record by record: a long job's Inspector files hold tens of millions of lines.
  CallGrouper grouper;
  read_inspector_files(inspector_paths, [&](const InspectorRecord& r) { grouper.add(r); });
  const auto groups = grouper.groups();
  if (groups.empty())
    throw UsageError(
        "compare --job: the Inspector files hold no collective: was NCCL_INSPECTOR_ENABLE=1 set, and "
        "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS above 0?");
  std::vector<FabricCurve> curves;
  for (const auto& p : results_paths) {
    auto more = fabric_curves(load_results(p), p);
    curves.insert(curves.end(), more.begin(), more.end());
  }
  curves.insert(curves.end(), stored.begin(), stored.end());
  const JobComparison c = compare_job(groups, curves);
  if (c.compared() == 0) {
    throw UsageError(fmt::format("compare --job: nothing of the job could be held against the results given{}",
                                 reasons_not_compared(c)));
  }
  for (const auto& line : job_table_lines(c)) fmt::print("{}\n", line);
  fmt::print("{}\n", job_summary_line(c));
  if (!json_path.empty())
    write_text_file(json_path, "--json", job_json(c, inspector_paths, results_paths).dump(2) + "\n");
  return 0;
}

}  // namespace railbench::compare
