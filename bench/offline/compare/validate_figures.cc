// validate's figures: tx, rx, lat p50 and p99 per link (node x rail), each banded by what
// its partners measured (its rail_pairs records) and by its rail's spread; with a fabric
// phase, each leaf-spine link's flow rate. A 1,024 x 8
// file holds 4 M pair records, so they are read once into each link's lowest and highest
// value, and the loader keeps only the records that hold one (ValidatePairKeeper).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "bench/offline/compare/figures.h"
#include "lib/core/stats.h"

namespace railbench::compare {

using nlohmann::json;

namespace {

double num(const json& j, const char* key) {
  return j.at(key).get<double>();
}

// One link metric: its figure is the median over its partners (bench/validate); its
// band spans what its partners measured and k scaled MADs of the rail's links around
// it, whichever is wider.
struct LinkMetric {
  const char* link_key;  // in rails[].links
  const char* metric;
  const char* unit;
  bool higher_better;
  // The link's value in one of its pair tests, `a_side` when it was node_a.
  double (*of_pair)(const json& pair, bool a_side);
};

const LinkMetric kLinkMetrics[] = {
    {"tx_gbs", "tx", "GB/s", true, [](const json& p, bool a) { return num(p, a ? "bw_ab" : "bw_ba"); }},
    {"rx_gbs", "rx", "GB/s", true, [](const json& p, bool a) { return num(p, a ? "bw_ba" : "bw_ab"); }},
    {"lat_p50_us", "lat p50", "us", false, [](const json& p, bool) { return num(p, "lat_p50"); }},
    {"lat_p99_us", "lat p99", "us", false, [](const json& p, bool) { return num(p, "lat_p99"); }},
};
constexpr int kMetrics = static_cast<int>(std::size(kLinkMetrics));

bool measured(const json& link) {
  return link.at("pairs").get<int>() - link.at("failed").get<int>() > 0;
}

// Calls f(rail, node, metric, value) for both ends of a finished rail pair test.
template <class F>
void each_value(const json& p, F&& f) {
  if (p.at("phase") != "rail" || !p.at("ok").get<bool>()) return;
  const int r = p.at("rail_a").get<int>();
  for (const bool a : {true, false}) {
    const int node = p.at(a ? "node_a" : "node_b").get<int>();
    for (int m = 0; m < kMetrics; ++m) f(r, node, m, kLinkMetrics[m].of_pair(p, a));
  }
}

struct Bound {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
};
using LinkKey = std::tuple<int, int, int>;  // rail, node, metric

// The fabric phase's figures: per leaf-spine link, the median rate and the median TCP
// retransmits of the flows whose traced path crossed it (as validate's own link evidence
// takes them), each banded by the hull of those flows' values and k scaled MADs of every
// link's median: a link's flows differ by host pair, the fabric's links by the hash's
// share of them. A slow link moves the rate; a lossy one may keep its rate and shows in
// the retransmits.
struct FlowMetric {
  const char* key;  // in fabric.flows[]
  const char* metric;
  const char* unit;
  bool higher_better;
};
constexpr FlowMetric kFlowMetrics[] = {{"gbps", "flow Gb/s", "Gb/s", true},
                                       {"retransmits", "flow retransmits", "segments", false}};

void fabric_figures(const json& fabric, double k, std::vector<Figure>& out) {
  for (const FlowMetric& m : kFlowMetrics) {
    std::map<std::string, std::vector<double>> values;  // by link name
    for (const auto& flow : fabric.at("flows")) {
      if (flow.at("health") == "skipped") continue;
      for (const auto& link : flow.at("links")) values[link.get<std::string>()].push_back(num(flow, m.key));
    }
    std::vector<double> medians;
    for (const auto& [name, v] : values) medians.push_back(median(v));
    const double spread = k * scaled_mad(medians);
    for (const auto& link : fabric.at("links")) {
      const auto it = values.find(link.at("link").get<std::string>());
      if (it == values.end()) continue;  // no flow's path crossed it: nothing was measured
      const auto [lo, hi] = std::minmax_element(it->second.begin(), it->second.end());
      const double v = median(it->second);
      out.push_back(Figure{it->first, m.metric, m.unit, m.higher_better, v, std::max(0.0, std::min(*lo, v - spread)),
                           std::max(*hi, v + spread)});
    }
  }
}

}  // namespace

void validate_figures(const json& doc, double k, std::vector<Figure>& out) {
  if (doc.contains("fabric")) fabric_figures(doc.at("fabric"), k, out);
  if (!doc.contains("rails")) return;  // --inventory-only, --fabric-only, or no traffic ran
  std::map<LinkKey, Bound> bounds;
  if (doc.contains("rail_pairs"))
    for (const auto& p : doc.at("rail_pairs")) {
      each_value(p, [&](int r, int node, int m, double v) {
        Bound& b = bounds[{r, node, m}];
        b.lo = std::min(b.lo, v), b.hi = std::max(b.hi, v);
      });
    }
  for (const auto& rail : doc.at("rails")) {
    const int r = rail.at("rail").get<int>();
    for (int mi = 0; mi < kMetrics; ++mi) {
      const LinkMetric& m = kLinkMetrics[mi];
      std::vector<double> rail_values;
      for (const auto& l : rail.at("links"))
        if (measured(l)) rail_values.push_back(num(l, m.link_key));
      const double spread = k * scaled_mad(rail_values);
      for (size_t n = 0; n < rail.at("links").size(); ++n) {
        const json& l = rail.at("links")[n];
        if (!measured(l)) continue;
        const double v = num(l, m.link_key);
        Figure f{fmt::format("{} rail{}", l.at("node").get<std::string>(), r),
                 m.metric,
                 m.unit,
                 m.higher_better,
                 v,
                 v - spread,
                 v + spread};
        if (const auto it = bounds.find({r, static_cast<int>(n), mi}); it != bounds.end())
          f.lo = std::min(f.lo, it->second.lo), f.hi = std::max(f.hi, it->second.hi);
        out.push_back(f);
      }
    }
  }
}

void ValidatePairKeeper::add(const json& pair) {
  const size_t id = next_id_++;
  bool held = false;
  each_value(pair, [&](int r, int node, int m, double v) {
    Slot& s = slots_[{r, node, m}];
    for (Side* side : {&s.lo, &s.hi}) {
      const bool better = side == &s.lo ? v < side->value : v > side->value;
      if (side->id != kNone && !better) continue;
      if (side->id != kNone) release(side->id);
      side->id = id, side->value = v;
      ++refs_[id];
      held = true;
    }
  });
  if (held) records_.emplace(id, pair);
}

void ValidatePairKeeper::release(size_t id) {
  if (--refs_[id] > 0) return;
  refs_.erase(id);
  records_.erase(id);
}

json ValidatePairKeeper::kept() const {
  json out = json::array();
  for (const auto& [id, p] : records_) out.push_back(p);
  return out;
}

}  // namespace railbench::compare
