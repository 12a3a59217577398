#include "bench/commands/validate/report.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "lib/core/stats.h"

namespace railbench {

using nlohmann::json;

std::vector<Finding> judge_inventory(const SuConfig& c, const std::vector<std::string>& node_names,
                                     const std::vector<std::vector<NicReport>>& nics, bool& blocking) {
  std::vector<Finding> out;
  blocking = false;
  for (size_t n = 0; n < nics.size(); ++n) {
    for (size_t s = 0; s < nics[n].size(); ++s) {
      const NicReport& r = nics[n][s];
      const SuRail& want = c.rails[s];
      const std::string subject = link_name(c, node_names, {static_cast<int>(n), static_cast<int>(s)});
      auto add = [&](const char* code, const std::string& why, double measured, double expected,
                     const std::string& unit) {
        out.push_back(coded({Severity::fail, FindingKind::inventory, subject, why, measured, expected, unit,
                             static_cast<int>(n), static_cast<int>(s)},
                            code));
      };
      if (!r.found) {
        std::string have;
        for (const auto& p : r.present) have += (have.empty() ? "" : ", ") + p;
        add(reason::kInventoryNicMissing,
            fmt::format("{} {} not found on the node (it has: {}); check the cabling/driver, or the config's "
                        "rails[{}].nic",
                        r.kind == "rdma" ? "RDMA device" : "interface", want.nic, have.empty() ? "none" : have, s),
            0, 1, "");
        blocking = true;
        continue;
      }
      if (!r.up) {
        add(reason::kInventoryPortDown,
            fmt::format("port {} is not up (state {}): check the cable and the switch port", want.nic, r.state), 0, 1,
            "");
        blocking = true;
        continue;
      }
      if (r.speed_gbps > 0 && std::fabs(r.speed_gbps - want.speed_gbps) > 0.01 * want.speed_gbps) {
        add(reason::kInventorySpeedWrong,
            fmt::format("port {} runs at {} Gb/s, expected {} Gb/s (a wrong cable, optic or autonegotiation)", want.nic,
                        r.speed_gbps, want.speed_gbps),
            r.speed_gbps, want.speed_gbps, "Gb/s");
      }
      if (r.mtu > 0 && r.mtu != want.mtu) {
        add(reason::kInventoryMtuWrong, fmt::format("port {} has MTU {}, expected {}", want.nic, r.mtu, want.mtu),
            r.mtu, want.mtu, "B");
      }
    }
  }
  return out;
}

namespace {

// A rail's entry without its matrices and errors: what it is, its nodes and link figures.
json rail_entry(const SuConfig& c, const std::vector<std::string>& node_names, int r,
                const std::vector<std::vector<LinkStats>>& stats) {
  json links = json::array();
  for (const auto& l : stats[r]) {
    links.push_back(json{{"node", node_names[l.link.node]},
                         {"pairs", l.pairs},
                         {"failed", l.failed},
                         {"tx_gbs", l.tx},
                         {"rx_gbs", l.rx},
                         {"bidir_gbs", l.bidir},
                         {"lat_p50_us", l.lat_p50},
                         {"lat_p99_us", l.lat_p99},
                         {"bw_spread", l.spread},
                         {"link_downs", l.total_downs()},
                         {"carrier_changes", l.carrier_changes},
                         {"link_downed", l.link_downed}});
  }
  json entry{{"rail", r},
             {"nic", c.rails[r].nic},
             {"leaf", c.rails[r].leaf},
             {"line_rate_gbps", c.rails[r].line_rate_gbps},
             {"nodes", node_names},
             {"links", links},
             {"errors", json::array()}};
  // A rail over several leaves: each node's, parallel to "nodes" (the report groups by it).
  if (!c.rails[r].node_leaf.empty()) {
    json leaves = json::array();
    for (const auto& name : node_names) leaves.push_back(c.rails[r].leaf_of(name));
    entry["node_leaves"] = std::move(leaves);
  }
  return entry;
}

json pair_error(const std::vector<std::string>& node_names, const PairResult& p) {
  return json{{"a", node_names[p.node_a]}, {"b", node_names[p.node_b]}, {"error", p.error}};
}

}  // namespace

json rail_matrices(const SuConfig& c, const std::vector<std::string>& node_names, const std::vector<PairResult>& rail,
                   const std::vector<std::vector<LinkStats>>& stats) {
  const size_t n = node_names.size();
  json out = json::array();
  for (int r = 0; r < c.num_rails(); ++r) {
    auto empty = [&] { return std::vector<std::vector<json>>(n, std::vector<json>(n, nullptr)); };
    auto bw = empty(), bidir = empty(), p50 = empty(), p99 = empty(), p999 = empty();
    json entry = rail_entry(c, node_names, r, stats);
    for (const auto& p : rail) {
      if (p.rail_a != r || p.rail_b != r) continue;
      const int a = p.node_a, b = p.node_b;
      if (!p.ok) {
        entry["errors"].push_back(pair_error(node_names, p));
        continue;
      }
      bw[a][b] = p.bw_ab, bw[b][a] = p.bw_ba;
      bidir[a][b] = bidir[b][a] = p.bidir;
      p50[a][b] = p50[b][a] = p.lat_p50;
      p99[a][b] = p99[b][a] = p.lat_p99;
      p999[a][b] = p999[b][a] = p.lat_p999;
    }
    entry["bw_gbs"] = bw, entry["bidir_gbs"] = bidir, entry["lat_p50_us"] = p50;
    entry["lat_p99_us"] = p99, entry["lat_p999_us"] = p999;
    out.push_back(std::move(entry));
  }
  return out;
}

namespace {

// Each rail's n x n cells as the index of the pair test that measured them (-1: none).
struct PairIndex {
  std::shared_ptr<const std::vector<PairResult>> pairs;
  size_t n = 0;
  std::vector<std::vector<int32_t>> cells;  // [rail][a * n + b]
};

using PairFigure = double (*)(const PairResult& p, bool a_to_b);
constexpr std::pair<const char*, PairFigure> kMatrixFigures[] = {
    {"bw_gbs", [](const PairResult& p, bool ab) { return ab ? p.bw_ab : p.bw_ba; }},
    {"bidir_gbs", [](const PairResult& p, bool) { return p.bidir; }},
    {"lat_p50_us", [](const PairResult& p, bool) { return p.lat_p50; }},
    {"lat_p99_us", [](const PairResult& p, bool) { return p.lat_p99; }},
    {"lat_p999_us", [](const PairResult& p, bool) { return p.lat_p999; }},
};

}  // namespace

StreamedRails rail_matrices_streamed(const SuConfig& c, const std::vector<std::string>& node_names,
                                     std::shared_ptr<const std::vector<PairResult>> rail,
                                     const std::vector<std::vector<LinkStats>>& stats) {
  const size_t n = node_names.size();
  StreamedRails out{json::array(), {}};
  for (int r = 0; r < c.num_rails(); ++r) out.rails.push_back(rail_entry(c, node_names, r, stats));
  auto index = std::make_shared<PairIndex>();
  index->pairs = rail;
  index->n = n;
  index->cells.assign(c.num_rails(), std::vector<int32_t>(n * n, -1));
  for (size_t k = 0; k < rail->size(); ++k) {
    const PairResult& p = (*rail)[k];
    if (p.rail_a != p.rail_b || p.rail_a < 0 || p.rail_a >= c.num_rails()) continue;
    auto& cells = index->cells[p.rail_a];
    if (!p.ok) {
      out.rails[p.rail_a]["errors"].push_back(pair_error(node_names, p));
      continue;
    }
    cells[p.node_a * n + p.node_b] = cells[p.node_b * n + p.node_a] = static_cast<int32_t>(k);
  }
  for (int r = 0; r < c.num_rails(); ++r) {
    for (const auto& [key, figure] : kMatrixFigures) {
      out.rails[r][key] = json::array();
      out.matrices[fmt::format("/rails/{}/{}", r, key)] =
          StreamedArray{n, [index, r, figure = figure](size_t a) {
                          json row = json::array();
                          for (size_t b = 0; b < index->n; ++b) {
                            const int32_t k = index->cells[r][a * index->n + b];
                            if (k < 0) {
                              row.push_back(nullptr);
                              continue;
                            }
                            const PairResult& p = (*index->pairs)[k];
                            row.push_back(figure(p, static_cast<size_t>(p.node_a) == a));
                          }
                          return row;
                        }};
    }
  }
  return out;
}

std::vector<std::string> summary_lines(const SuConfig& c, const std::vector<std::string>& node_names,
                                       const std::vector<Finding>& findings,
                                       const std::vector<std::vector<LinkStats>>& stats) {
  std::vector<std::string> out;
  out.push_back("#");
  out.push_back("# per rail (link figures are medians over each link's partners):");
  out.push_back(fmt::format("# {:>5} {:>8} {:>7} {:>11} {:>11} {:>11} {:>10} {:>10} {:>6}  {}", "rail", "leaf", "links",
                            "tx min", "tx median", "line rate", "p50 med", "p99 max", "downs", "verdict"));
  out.push_back(fmt::format("# {:>5} {:>8} {:>7} {:>11} {:>11} {:>11} {:>10} {:>10} {:>6}", "", "", "", "(GB/s)",
                            "(GB/s)", "(GB/s)", "(us)", "(us)", "(links)"));
  for (size_t r = 0; r < stats.size(); ++r) {
    std::vector<double> tx, p50;
    double p99 = 0;
    int measured = 0, downs = 0;
    for (const auto& l : stats[r]) {
      downs += l.total_downs();
      if (l.pairs == 0 || l.pairs == l.failed) continue;
      ++measured;
      tx.push_back(std::min(l.tx, l.rx));
      p50.push_back(l.lat_p50);
      p99 = std::max(p99, l.lat_p99);
    }
    std::sort(tx.begin(), tx.end());
    std::sort(p50.begin(), p50.end());
    const bool bad = std::any_of(findings.begin(), findings.end(), [&](const Finding& f) {
      return f.severity == Severity::fail && f.rail == static_cast<int>(r);
    });
    out.push_back(fmt::format("  {:>5} {:>8} {:>7} {:>11.3f} {:>11.3f} {:>11.3f} {:>10.1f} {:>10.1f} {:>6}  {}", r,
                              c.rails[r].leaf, fmt::format("{}/{}", measured, stats[r].size()),
                              tx.empty() ? 0.0 : tx.front(), median(tx), line_gbytes(c.rails[r]), median(p50), p99,
                              downs,
                              bad             ? "FAIL"
                              : measured == 0 ? "not run"
                                              : "PASS"));
  }
  out.push_back("#");
  if (findings.empty()) {
    out.push_back("# findings: none");
  } else {
    // The reason code's column as wide as the longest code printed.
    size_t code_width = 4;
    for (const auto& f : findings) code_width = std::max(code_width, code_of(f).size());
    out.push_back("# findings, worst first:");
    out.push_back(fmt::format("# {:>4}  {:<7} {:<14} {:<{}} {:<34} {}", "#", "verdict", "check", "code", code_width,
                              "where", "measured vs expected"));
    for (size_t i = 0; i < findings.size(); ++i) {
      const Finding& f = findings[i];
      out.push_back(fmt::format("  {:>4}  {:<7} {:<14} {:<{}} {:<34} {}", i + 1, to_string(f.severity),
                                to_string(f.kind), code_of(f), code_width, f.subject, f.reason));
    }
  }
  std::set<std::string> bad_nodes, bad_links;
  for (const auto& f : findings) {
    if (f.severity != Severity::fail) continue;
    if (f.node >= 0) bad_nodes.insert(node_names[f.node]);
    if (f.node >= 0 && f.rail >= 0) bad_links.insert(link_name(c, node_names, {f.node, f.rail}));
  }
  const size_t fails =
      std::count_if(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::fail; });
  out.push_back("#");
  if (fails == 0) {
    out.push_back(fmt::format("# verdict: PASS: {} nodes x {} rails, every link within thresholds", node_names.size(),
                              c.num_rails()));
  } else {
    std::string links;
    for (const auto& l : bad_links) links += (links.empty() ? "" : ", ") + l;
    out.push_back(
        fmt::format("# verdict: FAIL: {} finding(s); bad links: {}", fails, links.empty() ? "none named" : links));
  }
  return out;
}

}  // namespace railbench
