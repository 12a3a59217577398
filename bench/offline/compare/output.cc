#include "bench/offline/compare/output.h"

#include <cmath>

#include <fmt/format.h>

#include "lib/core/csv.h"
#include "lib/core/errors.h"
#include "lib/results/results.h"

namespace railbench::compare {

using nlohmann::json;

namespace {

std::string value(double v) {
  return fmt::format("{:.4g}", v);
}

std::string percent(double change) {
  if (std::isinf(change)) return change > 0 ? "+inf" : "-inf";
  return fmt::format("{:+.1f}%", change * 100);
}

std::string band(double lo, double hi) {
  return fmt::format("{}..{}", value(lo), value(hi));
}

// JSON has no infinity: a change from 0 is written as null.
json number_or_null(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

}  // namespace

std::vector<std::string> table_lines(const Diff& d, const CompareInputs& in, bool all) {
  std::vector<std::string> out;
  out.push_back(
      fmt::format("# railbench compare: {} (base) -> {} (new), {}, threshold {:.4g}%, noise bands +-{:.4g} sigma",
                  in.base_path, in.new_path, in.command, in.threshold * 100, in.noise_k));
  out.push_back(
      "# a regression is worse than the threshold AND outside the noise of both runs (their bands do not overlap)");
  size_t subject_w = 7;
  for (const auto& r : d.rows) subject_w = std::max(subject_w, r.subject.size());
  const std::string head =
      fmt::format("# {:<11} {:<{}} {:<13} {:>10} {:>10} {:>8} {:<5} {:>21} {:>21}", "verdict", "subject", subject_w,
                  "metric", "old", "new", "change", "unit", "old band", "new band");
  out.push_back(head);
  int shown = 0;
  for (const auto& r : d.rows) {
    if (!all && r.verdict == Verdict::same) continue;
    ++shown;
    out.push_back(fmt::format("  {:<11} {:<{}} {:<13} {:>10} {:>10} {:>8} {:<5} {:>21} {:>21}", to_string(r.verdict),
                              r.subject, subject_w, r.metric, value(r.old_value), value(r.new_value), percent(r.change),
                              r.unit, band(r.old_lo, r.old_hi), band(r.new_lo, r.new_hi)));
  }
  if (shown == 0) out.push_back("  (every figure within the threshold)");
  const int same = d.count(Verdict::same);
  if (!all && same > 0)
    out.push_back(
        fmt::format("# {} figure(s) within +-{:.4g}% not listed (--all lists them)", same, in.threshold * 100));
  if (!d.only_base.empty() || !d.only_new.empty()) {
    out.push_back(fmt::format("# not compared: {} figure(s) only in the base, {} only in the new run (e.g. {})",
                              d.only_base.size(), d.only_new.size(),
                              !d.only_base.empty() ? d.only_base.front() : d.only_new.front()));
  }
  return out;
}

std::string summary_line(const Diff& d, const CompareInputs& in) {
  const int reg = d.count(Verdict::regression);
  return fmt::format(
      "compare {}: {} regression(s), {} improvement(s), {} change(s) within the noise, {} within +-{:.4g}% ({} "
      "figures): {}",
      in.command, reg, d.count(Verdict::improvement), d.count(Verdict::noise), d.count(Verdict::same),
      in.threshold * 100, d.rows.size(), reg > 0 ? "REGRESSION" : "no regression");
}

json diff_json(const Diff& d, const CompareInputs& in) {
  json rows = json::array();
  for (const auto& r : d.rows) {
    rows.push_back(json{{"subject", r.subject},
                        {"metric", r.metric},
                        {"unit", r.unit},
                        {"higher_is_better", r.higher_better},
                        {"old", r.old_value},
                        {"new", r.new_value},
                        {"change", number_or_null(r.change)},
                        {"old_band", {r.old_lo, r.old_hi}},
                        {"new_band", {r.new_lo, r.new_hi}},
                        {"verdict", to_string(r.verdict)}});
  }
  return json{{"schema", "railbench.compare"},
              {"schema_version", 1},
              {"base", in.base_path},
              {"new", in.new_path},
              {"command", in.command},
              {"threshold", in.threshold},
              {"noise_k", in.noise_k},
              {"summary",
               {{"regressions", d.count(Verdict::regression)},
                {"improvements", d.count(Verdict::improvement)},
                {"noise", d.count(Verdict::noise)},
                {"same", d.count(Verdict::same)},
                {"only_base", d.only_base.size()},
                {"only_new", d.only_new.size()}}},
              {"verdict", d.count(Verdict::regression) > 0 ? "REGRESSION" : "OK"},
              {"rows", rows},
              {"only_base", d.only_base},
              {"only_new", d.only_new}};
}

std::string diff_csv(const Diff& d) {
  // Units differ by row (GB/s, us): the unit column names them; change is in percent.
  std::string out =
      "subject,metric,unit,verdict,old (unit),new (unit),change (%),old band low (unit),old band high (unit),"
      "new band low (unit),new band high (unit)\r\n";
  auto num = [](double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string(); };
  for (const auto& r : d.rows) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\r\n", csv_field(r.subject), csv_field(r.metric),
                       csv_field(r.unit), to_string(r.verdict), num(r.old_value), num(r.new_value), num(r.change * 100),
                       num(r.old_lo), num(r.old_hi), num(r.new_lo), num(r.new_hi));
  }
  return out;
}

void write_text_file(const std::string& path, const std::string& option, const std::string& text) {
  // lib/results' writer (beside the target, then renamed; a fifo once), with compare's
  // contract: an output it cannot write is bad input.
  try {
    railbench::write_text_file(path, text, option);
  } catch (const IoError& e) {
    throw UsageError(fmt::format("{}: name a file in a writable directory", e.what()));
  }
}

}  // namespace railbench::compare
