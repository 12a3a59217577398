#include "bench/offline/compare/figures.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "bench/kinds/result_kind.h"
#include "lib/core/errors.h"
#include "lib/core/sizes.h"

namespace railbench::compare {

using nlohmann::json;

namespace {

// 1.2816 standard deviations: the distance from the median to p90 of normal data, so
// (p90 - p50) / 1.2816 estimates the standard deviation.
constexpr double kP90Sigmas = 1.2816;

double num(const json& j, const char* key) {
  return j.at(key).get<double>();
}

bool has_samples(const json& summary) {
  return summary.is_object() && summary.value("count", 0) > 0;
}

// What a file must have is checked by the code that reads it; a field that is missing
// or of the wrong type names the file and the field.
[[noreturn]] void unreadable(const std::string& path, const std::string& what) {
  throw UsageError(
      fmt::format("compare: {}: {}: is it a results file (--json) of this railbench version?", path, what));
}

Figure from_summary(std::string subject, std::string metric, bool higher_better, const json& s, const char* pct,
                    Band band, const char* unit) {
  return Figure{std::move(subject), std::move(metric), unit, higher_better, num(s, pct), band.lo, band.hi};
}

// A figure computed from a mean time (busbw, kvcache GB/s): its band is the rate of the
// typical iteration, the figure x mean / t for t in the time's p50 band (no faster than
// the fastest iteration measured). The figure itself may lie below it: a few stalls move
// the mean far more than the typical iteration, and that is noise, not a slower fabric,
// while a fabric that is slower moves the whole band.
Figure rate_from_time(std::string subject, std::string metric, double value, double mean_time, const json& summary,
                      double k) {
  const Band t = p50_band(summary, k);
  Figure f{std::move(subject), std::move(metric), "GB/s", true, value, value, value};
  const double fastest = std::max(t.lo, num(summary, "min"));
  if (mean_time > 0 && fastest > 0 && t.hi > 0) {
    f.lo = value * mean_time / t.hi;
    f.hi = value * mean_time / fastest;
  }
  return f;
}

}  // namespace

void collective_figures(const json& doc, double k, std::vector<Figure>& out) {
  for (const auto& r : doc.at("results")) {
    const std::string size = format_size(r.at("bytes").get<uint64_t>());
    // The data type and operation are part of what was measured: bf16 and float at the
    // same size are different entries, not a change.
    const std::string what = r.value("redop", "none") == "none"
                                 ? fmt::format("{} {}", size, r.value("type", ""))
                                 : fmt::format("{} {} {}", size, r.value("type", ""), r.value("redop", ""));
    for (const char* side : {"out_of_place", "in_place"}) {
      if (!r.contains(side)) continue;
      const json& s = r.at(side);
      const json& it = s.at("iteration_us");
      if (!has_samples(it)) continue;
      const std::string subject = fmt::format("{} {}", what, side[0] == 'o' ? "out-of-place" : "in-place");
      out.push_back(rate_from_time(subject, "busbw", num(s, "busbw_gbps"), num(s, "time_us"), it, k));
      out.push_back(from_summary(subject, "time p99", false, it, "p99", p99_band(it, k), "us"));
    }
  }
}

void sendrecv_figures(const json& doc, double k, std::vector<Figure>& out) {
  for (const auto& r : doc.at("results")) {
    const std::string size = format_size(r.at("bytes").get<uint64_t>());
    for (const auto& p : r.at("pairs")) {
      const std::string subject = fmt::format("{} {} rank{}<->rank{} rail{}", r.value("op", "send"), size,
                                              p.at("a").get<int>(), p.at("b").get<int>(), p.at("rail").get<int>());
      for (auto [key, metric] : {std::pair{"bw_ab_gbps", "bw a->b p50"}, std::pair{"bw_ba_gbps", "bw b->a p50"},
                                 std::pair{"bw_bidir_gbps", "bw bidir p50"}}) {
        if (p.contains(key) && has_samples(p.at(key)))
          out.push_back(from_summary(subject, metric, true, p.at(key), "p50", p50_band(p.at(key), k), "GB/s"));
      }
      const json& lat = p.at("latency_us");
      if (!has_samples(lat)) continue;
      out.push_back(from_summary(subject, "lat p50", false, lat, "p50", p50_band(lat, k), "us"));
      out.push_back(from_summary(subject, "lat p99", false, lat, "p99", p99_band(lat, k), "us"));
      out.push_back(from_summary(subject, "lat p99.9", false, lat, "p99_9", p999_band(lat, k), "us"));
    }
  }
}

void kvcache_figures(const json& doc, double k, std::vector<Figure>& out) {
  for (const auto& r : doc.at("results")) {
    const json& t = r.at("request_us");
    if (!has_samples(t)) continue;
    const std::string subject =
        fmt::format("{} {} tokens", r.at("mode").get<std::string>(), r.at("tokens").get<long>());
    out.push_back(rate_from_time(subject, "GB/s", num(r, "gbps"), num(t, "mean"), t, k));
    out.push_back(from_summary(subject, "request p50", false, t, "p50", p50_band(t, k), "us"));
    out.push_back(from_summary(subject, "request p99", false, t, "p99", p99_band(t, k), "us"));
    out.push_back(from_summary(subject, "request p99.9", false, t, "p99_9", p999_band(t, k), "us"));
  }
}

void workload_figures(const json& doc, double k, std::vector<Figure>& out) {
  const json& s = doc.at("summary");
  const json& step = s.at("step_us");
  const json& exposed = s.at("exposed_us");
  if (!has_samples(step)) return;
  out.push_back(from_summary("step", "step p50", false, step, "p50", p50_band(step, k), "us"));
  out.push_back(from_summary("step", "step p99", false, step, "p99", p99_band(step, k), "us"));
  out.push_back(from_summary("step", "exposed p50", false, exposed, "p50", p50_band(exposed, k), "us"));
}

Band p50_band(const json& s, double k) {
  const double p50 = num(s, "p50");
  const double sigma = (num(s, "p90") - p50) / kP90Sigmas;
  return {p50 - k * sigma, p50 + k * sigma};
}

namespace {

Band tail_band(const json& s, const char* pct, double below, double above, double k) {
  const double v = num(s, pct);
  const double sigma = (num(s, "p90") - num(s, "p50")) / kP90Sigmas;
  return {std::min(below, v - k * sigma), std::max(above, v + k * sigma)};
}

}  // namespace

Band p99_band(const json& s, double k) {
  return tail_band(s, "p99", num(s, "p90"), num(s, "p99_9"), k);
}

Band p999_band(const json& s, double k) {
  return tail_band(s, "p99_9", num(s, "p99"), num(s, "max"), k);
}

std::vector<Figure> figures_of(const json& doc, const std::string& path, double k) {
  std::vector<Figure> out;
  const std::string command = doc.value("command", "");
  const ResultKind* kind = find_result_kind(command, ResultPart::figures);
  if (kind == nullptr)
    unreadable(path, fmt::format("command '{}' has no figures to compare (compare reads {})", command,
                                 result_kind_names(ResultPart::figures)));
  try {
    kind->figures(doc, k, out);
  } catch (const json::exception& e) {
    unreadable(path, fmt::format("a {} result lacks a field ({})", command, e.what()));
  }
  return out;
}

std::vector<Figure> only_metrics(std::vector<Figure> figures, const std::vector<std::string>& metrics) {
  if (metrics.empty()) return figures;
  std::set<std::string> have;
  for (const auto& f : figures) have.insert(f.metric);
  for (const auto& m : metrics) {
    if (have.count(m)) continue;
    std::string list;
    for (const auto& h : have) list += (list.empty() ? "" : ", ") + h;
    throw UsageError(fmt::format("--metrics: no figure is called '{}': this run has {}", m, list));
  }
  std::erase_if(figures,
                [&](const Figure& f) { return std::find(metrics.begin(), metrics.end(), f.metric) == metrics.end(); });
  return figures;
}

}  // namespace railbench::compare
