// The stragglers report as the results' JSON section and as printed lines, and the
// --straggler-threshold syntax.
#include <cstdlib>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/observe/stragglers.h"

namespace railbench {

using nlohmann::json;

namespace {

// "10%" -> 0.10, "0.1" -> 0.1; false when it is not a fraction in (0, 1].
bool parse_fraction(const std::string& s, double& out) {
  if (s.empty()) return false;
  const bool percent = s.back() == '%';
  const std::string num = percent ? s.substr(0, s.size() - 1) : s;
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size()) return false;
  if (percent) v /= 100;
  if (!(v > 0 && v <= 1)) return false;
  out = v;
  return true;
}

json blamed_json(const Blamed& b, int iterations, bool link) {
  json j{{"name", b.name},
         {"cost_ms", static_cast<double>(b.cost_ns) / 1e6},
         {"ops", b.ops},
         {"iterations", b.iterations},
         {"iteration_share", iterations ? static_cast<double>(b.iterations) / iterations : 0.0},
         {"iterations_over", b.iterations_over},
         {"beyond_threshold", b.beyond_threshold}};
  if (link) {
    j["src_node"] = b.src_node;
    j["dst_node"] = b.dst_node;
    j["rail"] = b.rail;
    j["worst_rate_ratio"] = b.worst_rate_ratio;
  } else {
    j["rank"] = b.rank;
  }
  return j;
}

}  // namespace

StragglerThreshold parse_straggler_threshold(const std::string& text) {
  StragglerThreshold t;
  const auto comma = text.find(',');
  const std::string a = text.substr(0, comma);
  const std::string b = comma == std::string::npos ? "" : text.substr(comma + 1);
  if (!parse_fraction(a, t.time_fraction) || (comma != std::string::npos && !parse_fraction(b, t.iteration_fraction)))
    throw UsageError(
        fmt::format("--straggler-threshold '{}' is not TIME%,ITERATIONS%: give the share of an iteration's time a "
                    "straggler must cost and the share of iterations it must do so in, e.g. 10%,25% (or 0.1,0.25)",
                    text));
  return t;
}

std::string to_string(const StragglerThreshold& t) {
  return fmt::format("{:g}%,{:g}%", t.time_fraction * 100, t.iteration_fraction * 100);
}

json to_json(const StragglerReport& r, size_t max_ops) {
  json ranks = json::array(), links = json::array(), ops = json::array();
  for (const auto& b : r.ranks) ranks.push_back(blamed_json(b, r.iterations, false));
  for (const auto& b : r.links) links.push_back(blamed_json(b, r.iterations, true));
  for (size_t i = 0; i < r.op_blames.size() && i < max_ops; ++i) {
    const OpBlame& b = r.op_blames[i];
    json o{{"iteration", b.key.iteration},
           {"index", b.key.index},
           {"label", std::string(b.key.name())},
           {"op_us", static_cast<double>(b.op_ns) / 1e3}};
    if (b.late_rank >= 0)
      o["late"] = json{{"rank", b.late_rank}, {"cause", b.late_cause}, {"cost_us", b.late_ns / 1e3}};
    if (b.slow_link >= 0)
      o["slow_link"] = json{{"name", b.link_name}, {"cost_us", b.link_ns / 1e3}, {"rate_ratio", b.link_rate_ratio}};
    ops.push_back(std::move(o));
  }
  return json{{"threshold", json{{"time_fraction", r.threshold.time_fraction},
                                 {"iteration_fraction", r.threshold.iteration_fraction}}},
              {"iterations", r.iterations},
              {"ops", r.ops},
              {"dropped_ops", r.dropped_ops},
              {"unmatched_messages", r.unmatched_msgs},
              {"clock_uncertainty_us", static_cast<double>(r.max_uncertainty_ns) / 1e3},
              {"ranks", std::move(ranks)},
              {"links", std::move(links)},
              {"op_blames", std::move(ops)},
              {"op_blames_left_out", r.op_blames.size() > max_ops ? r.op_blames.size() - max_ops : 0},
              {"verdict", json{{"kind", r.verdict_kind}, {"text", r.verdict}}}};
}

std::vector<std::string> straggler_table(const StragglerReport& r, size_t top) {
  std::vector<std::string> out;
  out.push_back(fmt::format("# stragglers: {} ops in {} iterations, clock uncertainty <= {:.1f} us, threshold {}",
                            r.ops, r.iterations, static_cast<double>(r.max_uncertainty_ns) / 1e3,
                            to_string(r.threshold)));
  out.push_back(fmt::format("#   {:<13} {:<40} {:>10} {:>6} {:>11} {:>10}", "as", "who", "cost (ms)", "ops",
                            "iterations", "over thr."));
  auto rows = [&](const std::vector<Blamed>& list, const char* as) {
    for (size_t i = 0; i < list.size() && i < top; ++i) {
      const Blamed& b = list[i];
      out.push_back(fmt::format("#   {:<13} {:<40} {:>10.3f} {:>6} {:>10.0f}% {:>10}", as, b.name,
                                static_cast<double>(b.cost_ns) / 1e6, b.ops,
                                100.0 * b.iterations / std::max(r.iterations, 1), b.iterations_over));
    }
  };
  rows(r.ranks, "late arriver");
  rows(r.links, "slow link");
  if (r.ranks.empty() && r.links.empty()) out.push_back("#   (nobody blamed beyond the clock uncertainty)");
  if (r.dropped_ops)
    out.push_back(
        fmt::format("#   {} ops were over the recorder's cap and left out (the last ones are kept)", r.dropped_ops));
  out.push_back("# straggler verdict: " + r.verdict);
  return out;
}

}  // namespace railbench
