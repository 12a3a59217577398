#include "bench/runner/results_metrics.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include <fmt/format.h>

#include "bench/runner/results_csv.h"

namespace railbench {

using nlohmann::json;

namespace {

constexpr double kGB = 1e9;       // the JSON's GB/s are 1e9 bytes/s
constexpr double kUs = 1e-6;      // and its latencies microseconds
constexpr double kGbit = 1.25e8;  // line rates Gb/s

// A running validate's document has nulls where phases have not run yet: every read
// below goes through metrics_text.h's field_of / text_of and these.

// The array at `key`, or an empty one.
const json& items_of(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json& v = field_of(j, key);
  return v.is_array() ? v : kEmpty;
}

int int_of(const json& j, const char* key, int fallback) {
  const json& v = field_of(j, key);
  return v.is_number_integer() ? v.get<int>() : fallback;
}

// A number where the document has one, NaN (left out) where it has null or nothing.
double num(const json& j, const char* key) {
  if (!j.is_object()) return NAN;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}

double num_at(const json& matrix, size_t i, size_t j) {
  if (!matrix.is_array() || i >= matrix.size() || !matrix[i].is_array() || j >= matrix[i].size()) return NAN;
  return matrix[i][j].is_number() ? matrix[i][j].get<double>() : NAN;
}

// Sizes as labels: whole bytes, as the JSON has them.
std::string bytes_label(const json& entry) {
  const json& v = field_of(entry, "bytes");
  return v.is_number_unsigned() ? std::to_string(v.get<uint64_t>()) : "";
}

int verdict_code(const std::string& v) {
  return v == "FAIL" ? 2 : v == "WARN" ? 1 : 0;
}

}  // namespace

void validate_metrics(const json& doc, const MetricsOptions& options, MetricsText& out) {
  const json& inventory = items_of(doc, "inventory");
  std::map<std::string, int> node_index;  // as findings name nodes: inventory order
  for (const auto& i : inventory) node_index.emplace(text_of(i, "node"), static_cast<int>(node_index.size()));
  const auto verdicts = validate_link_verdicts(doc);
  const bool finished = doc.contains("verdict") && doc["verdict"].is_string();

  out.gauge("railbench_rail_line_rate_bytes_per_second", "A rail's line rate", "bytes_per_second");
  out.gauge("railbench_link_tx_bytes_per_second", "A link's sending bandwidth, median over its rail partners",
            "bytes_per_second");
  out.gauge("railbench_link_rx_bytes_per_second", "A link's receiving bandwidth, median over its rail partners",
            "bytes_per_second");
  out.gauge("railbench_link_bidir_bytes_per_second", "A link's bidirectional bandwidth, median over its partners",
            "bytes_per_second");
  out.gauge("railbench_link_latency_p50_seconds", "A link's median latency (RTT/2) over its partners", "seconds");
  out.gauge("railbench_link_latency_p99_seconds", "A link's p99 latency (RTT/2) over its partners", "seconds");
  out.gauge("railbench_link_failed_pairs", "Pair tests of the link that did not finish");
  out.gauge("railbench_link_downs", "Times the link went down during its pair tests");
  out.gauge("railbench_link_verdict_code", "The link's verdict: 0 PASS, 1 WARN, 2 FAIL");
  for (const auto& rail : items_of(doc, "rails")) {
    const int r = int_of(rail, "rail", -1);
    const std::string rs = std::to_string(r), nic = text_of(rail, "nic"), leaf = text_of(rail, "leaf");
    out.sample("railbench_rail_line_rate_bytes_per_second", {{"rail", rs}, {"nic", nic}, {"leaf", leaf}},
               num(rail, "line_rate_gbps") * kGbit);
    for (const auto& l : items_of(rail, "links")) {
      const std::string node = text_of(l, "node");
      const MetricLabels labels{{"node", node}, {"rail", rs}, {"nic", nic}, {"leaf", leaf}};
      out.sample("railbench_link_tx_bytes_per_second", labels, num(l, "tx_gbs") * kGB);
      out.sample("railbench_link_rx_bytes_per_second", labels, num(l, "rx_gbs") * kGB);
      out.sample("railbench_link_bidir_bytes_per_second", labels, num(l, "bidir_gbs") * kGB);
      out.sample("railbench_link_latency_p50_seconds", labels, num(l, "lat_p50_us") * kUs);
      out.sample("railbench_link_latency_p99_seconds", labels, num(l, "lat_p99_us") * kUs);
      out.sample("railbench_link_failed_pairs", labels, num(l, "failed"));
      out.sample("railbench_link_downs", labels, num(l, "link_downs"));
      const auto n = node_index.find(node);
      const auto v = n == node_index.end() ? verdicts.end() : verdicts.find({n->second, r});
      // A link without findings passed once the run has its verdict; before that it has none.
      if (v != verdicts.end() && !v->second.verdict.empty()) {
        out.sample("railbench_link_verdict_code", labels, verdict_code(v->second.verdict));
      } else if (finished) {
        out.sample("railbench_link_verdict_code", labels, 0);
      }
    }
    if (!options.pairs) continue;
    out.gauge("railbench_pair_bandwidth_bytes_per_second", "Bandwidth from node to peer on a rail", "bytes_per_second");
    out.gauge("railbench_pair_latency_p99_seconds", "p99 latency (RTT/2) between node and peer on a rail", "seconds");
    const json& nodes = items_of(rail, "nodes");
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (size_t j = 0; j < nodes.size(); ++j) {
        if (i == j) continue;
        const MetricLabels labels{{"node", nodes[i].is_string() ? nodes[i].get<std::string>() : ""},
                                  {"peer", nodes[j].is_string() ? nodes[j].get<std::string>() : ""},
                                  {"rail", rs},
                                  {"leaf", leaf}};
        out.sample("railbench_pair_bandwidth_bytes_per_second", labels, num_at(field_of(rail, "bw_gbs"), i, j) * kGB);
        out.sample("railbench_pair_latency_p99_seconds", labels, num_at(field_of(rail, "lat_p99_us"), i, j) * kUs);
      }
    }
  }
  // Findings by severity and kind: the alert a dashboard starts from.
  std::map<std::pair<std::string, std::string>, int> findings;
  for (const auto& f : items_of(doc, "findings")) ++findings[{text_of(f, "severity"), text_of(f, "kind")}];
  out.gauge("railbench_findings", "Findings of the run by severity and kind");
  for (const auto& [key, count] : findings)
    out.sample("railbench_findings", {{"severity", key.first}, {"kind", key.second}}, count);
  out.gauge("railbench_collective_busbw_bytes_per_second", "Bus bandwidth of a collective", "bytes_per_second");
  out.gauge("railbench_collective_required_busbw_bytes_per_second", "The bus bandwidth the SU's config requires",
            "bytes_per_second");
  for (const auto& c : items_of(doc, "collectives")) {
    const MetricLabels labels{
        {"collective", text_of(c, "collective")}, {"algo", text_of(c, "algo")}, {"bytes", bytes_label(c)}};
    out.sample("railbench_collective_busbw_bytes_per_second", labels, num(c, "busbw_gbs") * kGB);
    out.sample("railbench_collective_required_busbw_bytes_per_second", labels, num(c, "need_busbw_gbs") * kGB);
  }
}

void sendrecv_metrics(const json& doc, const MetricsOptions&, MetricsText& out) {
  out.gauge("railbench_pair_bandwidth_bytes_per_second", "Bandwidth from node to peer on a rail, median",
            "bytes_per_second");
  out.gauge("railbench_pair_latency_p50_seconds", "Median latency between the pair (RTT/2)", "seconds");
  out.gauge("railbench_pair_latency_p99_seconds", "p99 latency between the pair (RTT/2)", "seconds");
  out.gauge("railbench_pair_latency_p99_9_seconds", "p99.9 latency between the pair (RTT/2)", "seconds");
  for (const auto& e : items_of(doc, "results")) {
    const std::string bytes = bytes_label(e), op = text_of(e, "op");
    for (const auto& p : items_of(e, "pairs")) {
      const int a = int_of(p, "a", -1), b = int_of(p, "b", -1);
      const std::string rail = std::to_string(int_of(p, "rail", -1));
      auto labels = [&](int from, int to) {
        return MetricLabels{{"node", rank_host(doc, from)},
                            {"peer", rank_host(doc, to)},
                            {"rank", std::to_string(from)},
                            {"peer_rank", std::to_string(to)},
                            {"rail", rail},
                            {"op", op},
                            {"bytes", bytes}};
      };
      out.sample("railbench_pair_bandwidth_bytes_per_second", labels(a, b),
                 num(field_of(p, "bw_ab_gbps"), "p50") * kGB);
      out.sample("railbench_pair_bandwidth_bytes_per_second", labels(b, a),
                 num(field_of(p, "bw_ba_gbps"), "p50") * kGB);
      const json lat = field_of(p, "latency_us");
      out.sample("railbench_pair_latency_p50_seconds", labels(a, b), num(lat, "p50") * kUs);
      out.sample("railbench_pair_latency_p99_seconds", labels(a, b), num(lat, "p99") * kUs);
      out.sample("railbench_pair_latency_p99_9_seconds", labels(a, b), num(lat, "p99_9") * kUs);
    }
  }
}

void collective_metrics(const json& doc, const MetricsOptions&, MetricsText& out) {
  out.gauge("railbench_collective_busbw_bytes_per_second", "Bus bandwidth (nccl-tests' busbw)", "bytes_per_second");
  out.gauge("railbench_collective_algbw_bytes_per_second", "Algorithm bandwidth (size / time)", "bytes_per_second");
  out.gauge("railbench_collective_time_p50_seconds", "Median iteration time (the slowest rank's)", "seconds");
  out.gauge("railbench_collective_time_p99_seconds", "p99 iteration time (the slowest rank's)", "seconds");
  out.gauge("railbench_collective_wrong_elements", "Elements that failed the -c check");
  const std::string command = text_of(doc, "command");
  for (const auto& e : items_of(doc, "results")) {
    for (const char* placement : {"out_of_place", "in_place"}) {
      if (!e.contains(placement) || !e[placement].is_object()) continue;
      const json& p = e[placement];
      const MetricLabels labels{{"collective", command},
                                {"algo", text_of(e, "algo")},
                                {"type", text_of(e, "type")},
                                {"bytes", bytes_label(e)},
                                {"placement", placement}};
      out.sample("railbench_collective_busbw_bytes_per_second", labels, num(p, "busbw_gbps") * kGB);
      out.sample("railbench_collective_algbw_bytes_per_second", labels, num(p, "algbw_gbps") * kGB);
      const json iter = field_of(p, "iteration_us");
      out.sample("railbench_collective_time_p50_seconds", labels, num(iter, "p50") * kUs);
      out.sample("railbench_collective_time_p99_seconds", labels, num(iter, "p99") * kUs);
      out.sample("railbench_collective_wrong_elements", labels, num(p, "wrong"));
    }
  }
}

}  // namespace railbench
