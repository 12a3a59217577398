// What `railbench compare --job` prints and writes (job.h): the table per collective and
// size, the shortfalls ranked by time lost, what was not compared and why, the summary,
// and the same as JSON.
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "bench/offline/compare/job.h"
#include "lib/core/sizes.h"

namespace railbench::compare {

using nlohmann::json;

namespace {

// Four significant digits, without an exponent for a long job's seconds of collectives.
std::string ms(double us) {
  return std::fabs(us) < 1e6 ? fmt::format("{:.4g}", us / 1e3) : fmt::format("{:.0f}", us / 1e3);
}

std::string figure_how(const JobRow& r) {
  if (!r.fabric) return "-";
  if (r.fabric->exact) return "measured";
  return fmt::format("interp {}..{}", format_size(r.fabric->below), format_size(r.fabric->above));
}

std::string hosts_text(const std::set<std::string>& hosts) {
  std::string out;
  size_t shown = 0;
  for (const auto& h : hosts) {
    if (++shown > 4) return fmt::format("{} and {} more", out, hosts.size() - 4);
    out += fmt::format("{}{}", out.empty() ? "" : ", ", h);
  }
  return out;
}

std::string subject(const JobRow& r) {
  return fmt::format("{} {} at {} ranks", r.group.collective, format_size(r.group.bytes), r.group.nranks);
}

// The time the job spent in the groups compared, and how much of it was lost (the groups
// faster than railbench's figure count as losing none).
std::pair<double, double> time_in_compared(const JobComparison& c) {
  double total = 0, lost = 0;
  for (const auto& r : c.rows) {
    if (!r.fabric) continue;
    total += r.group.total_us();
    lost += std::max(0.0, r.lost_us);
  }
  return {total, lost};
}

void add_notes(const JobComparison& c, std::vector<std::string>& out) {
  std::map<std::string, size_t> mismatches;
  std::map<std::string, size_t> host_timed;
  size_t untimed = 0;
  std::set<std::string> warned;
  for (const auto& r : c.rows) {
    if (r.group.busbw_mismatches > 0) mismatches[r.group.nccl_name] += r.group.busbw_mismatches;
    if (r.group.host_timed > 0) host_timed[r.group.nccl_name] += r.group.host_timed;
    untimed += r.group.untimed;
    if (r.nodes != "different") continue;
    const std::string key = fmt::format("{} {} {}", r.group.collective, r.group.nranks, r.source);
    if (!warned.insert(key).second) continue;
    out.push_back(fmt::format(
        "# warning: {} at {} ranks ran on {}; railbench measured on {} ({}): compared anyway, "
        "against those nodes' figure",
        r.group.collective, r.group.nranks, hosts_text(r.group.hosts), hosts_text(r.fabric_hosts), r.source));
  }
  for (const auto& r : c.rows) {
    if (r.fabric) continue;
    out.push_back(fmt::format("# not compared: {} {} at {} ranks ({} calls, {} ms): {}", r.group.nccl_name,
                              format_size(r.group.bytes), r.group.nranks, r.group.time_us.size(),
                              ms(r.group.total_us()), r.why));
  }
  for (const auto& [name, n] : mismatches) {
    out.push_back(
        fmt::format("# note: {} {} record(s) carry a coll_busbw_gbs other than S x bus factor / "
                    "coll_exec_time_us; busbw here is computed from the size and time",
                    n, name));
  }
  for (const auto& [name, n] : host_timed) {
    out.push_back(
        fmt::format("# note: {} {} record(s) were timed by a host clock (coll_timing_source kernel_cpu or "
                    "collective_cpu), not the GPU's: their times include host-side delays",
                    n, name));
  }
  if (untimed > 0)
    out.push_back(
        fmt::format("# note: {} call(s) with coll_exec_time_us 0 (under 1 us) are not in the figures", untimed));
}

}  // namespace

std::vector<std::string> job_table_lines(const JobComparison& c) {
  std::vector<std::string> out;
  out.push_back("# railbench compare --job: the job's NCCL calls (NCCL Inspector) against railbench's figures");
  out.push_back(
      "# busbw = S x bus factor / time (nccl-tests); a call's time is its slowest rank's coll_exec_time_us; "
      "share = job busbw p50 / railbench busbw");
  out.push_back(fmt::format("# {:<14} {:>5} {:>8} {:>7} {:>10} {:>9} {:>19} {:>10} {:>6} {:>10}  {:<20} {}",
                            "collective", "ranks", "size", "calls", "total ms", "job p50", "job p10..p90", "railbench",
                            "share", "lost ms", "railbench figure", "nodes"));
  for (const auto& r : c.rows) {
    if (!r.fabric) continue;
    out.push_back(fmt::format("  {:<14} {:>5} {:>8} {:>7} {:>10} {:>9.4g} {:>19} {:>10.4g} {:>5.0f}% {:>10}  {:<20} {}",
                              r.group.collective, r.group.nranks, format_size(r.group.bytes), r.group.time_us.size(),
                              ms(r.group.total_us()), r.busbw_p50,
                              fmt::format("{:.4g}..{:.4g}", r.busbw_p10, r.busbw_p90), r.fabric->busbw, r.share * 100,
                              ms(r.lost_us), figure_how(r), r.nodes));
  }
  out.push_back("# (busbw in GB/s, 1e9 B/s)");
  if (!c.shortfalls.empty()) {
    out.push_back("# furthest short of the fabric, by time lost = calls x (job time - time at railbench's busbw):");
    int place = 0;
    for (size_t i : c.shortfalls) {
      const auto& r = c.rows[i];
      out.push_back(fmt::format(
          "  {:>2}. {}: {:.0f}% of the fabric's busbw ({:.4g} of {:.4g} GB/s), {} ms lost over "
          "{} calls",
          ++place, subject(r), r.share * 100, r.busbw_p50, r.fabric->busbw, ms(r.lost_us), r.group.time_us.size()));
    }
  }
  add_notes(c, out);
  return out;
}

std::string job_summary_line(const JobComparison& c) {
  const auto [total, lost] = time_in_compared(c);
  return fmt::format(
      "compare --job: {} of {} collective size(s) compared; the job spent {} ms in them, {} ms more than at "
      "railbench's busbw ({:.0f}%)",
      c.compared(), c.rows.size(), ms(total), ms(lost), total > 0 ? 100 * lost / total : 0.0);
}

json job_json(const JobComparison& c, const std::vector<std::string>& inspector_paths,
              const std::vector<std::string>& results_paths) {
  json rows = json::array();
  for (const auto& r : c.rows) {
    json row{{"collective", r.group.collective},
             {"nccl_collective", r.group.nccl_name},
             {"ranks", r.group.nranks},
             {"bytes", r.group.bytes},
             {"calls", r.group.time_us.size()},
             {"untimed_calls", r.group.untimed},
             {"host_timed_records", r.group.host_timed},
             {"busbw_mismatch_records", r.group.busbw_mismatches},
             {"communicators", r.group.comms.size()},
             {"total_us", r.group.total_us()},
             {"busbw_gbps", {{"p10", r.busbw_p10}, {"p50", r.busbw_p50}, {"p90", r.busbw_p90}}},
             {"hosts", r.group.hosts},
             {"compared", r.fabric.has_value()}};
    if (r.fabric) {
      row["railbench"] = json{{"busbw_gbps", r.fabric->busbw},
                              {"figure", r.fabric->exact ? "measured" : "interpolated"},
                              {"between_bytes", {r.fabric->below, r.fabric->above}},
                              {"source", r.source},
                              {"hosts", r.fabric_hosts}};
      row["share"] = r.share;
      row["railbench_time_us"] = r.fabric_time_us;
      row["lost_us"] = r.lost_us;
      row["nodes"] = r.nodes;
    } else {
      row["why"] = r.why;
    }
    rows.push_back(std::move(row));
  }
  const auto [total, lost] = time_in_compared(c);
  return json{{"schema", "railbench.compare_job"},
              {"schema_version", 1},
              {"inspector", inspector_paths},
              {"results", results_paths},
              {"summary",
               {{"groups", c.rows.size()},
                {"compared", c.compared()},
                {"not_compared", c.rows.size() - c.compared()},
                {"total_us", total},
                {"lost_us", lost}}},
              {"rows", rows},
              {"shortfalls", c.shortfalls}};
}

}  // namespace railbench::compare
