// Results documents into the store's rows (store.h): what each command's file holds that
// a fleet's history wants. validate: each NIC's link figures, each pair test (PairRow),
// each fabric link, every finding with its code, the drain list. Collectives: busbw and time per size.
// sendrecv: bandwidth and latency per size, pair and rail.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/core/stats.h"
#include "lib/results/read.h"
#include "lib/runtime/hostlist.h"
#include "lib/store/store.h"

namespace railbench::store {

using nlohmann::json;

namespace {

std::string text(const json& doc, const char* key) {
  const auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
}

double number(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

// FNV-1a, 64 bits: a stable key for a results file written before files had a run_id.
std::string legacy_key(const json& doc) {
  uint64_t h = 1469598103934665603ULL;
  const std::string s = text(doc, "command") + "|" + text(doc, "started_at") + "|" +
                        (doc.contains("argv") ? doc.at("argv").dump() : "") + "|" +
                        (doc.contains("world") ? doc.at("world").dump() : "");
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return fmt::format("legacy-{:016x}", h);
}

// The job's hosts in rank order, each once.
std::vector<std::string> hosts_of(const json& doc) {
  std::vector<std::string> out;
  if (!doc.contains("world") || !doc.at("world").contains("ranks")) return out;
  for (const auto& r : doc.at("world").at("ranks")) {
    const std::string h = text(r, "host");
    if (!h.empty() && std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  }
  return out;
}

std::string size_text(double bytes) {
  const char* units[] = {"B", "K", "M", "G", "T"};
  int u = 0;
  while (bytes >= 1024 && u < 4 && static_cast<uint64_t>(bytes) % 1024 == 0) bytes /= 1024, ++u;
  return fmt::format("{}{}", static_cast<uint64_t>(bytes), units[u]);
}

// validate's node names, in the config's order (its findings and pairs name nodes by index).
std::vector<std::string> validate_nodes(const json& doc) {
  if (doc.contains("rails") && !doc.at("rails").empty() && doc.at("rails")[0].contains("nodes"))
    return doc.at("rails")[0].at("nodes").get<std::vector<std::string>>();
  const json& c = doc.value("config", json::object());
  if (c.contains("nodes") && c.at("nodes").is_string()) return expand_hostlist(c.at("nodes").get<std::string>());
  if (c.contains("nodes") && c.at("nodes").is_array()) {
    std::vector<std::string> out;
    for (const auto& n : c.at("nodes")) out.push_back(n.is_string() ? n.get<std::string>() : text(n, "name"));
    return out;
  }
  return hosts_of(doc);
}

std::string nic_name(const std::string& node, int rail) {
  return fmt::format("{}:rail{}", node, rail);
}

// The link name a fabric finding's subject ends with: "... (su1-leaf0-spine2)". Only for
// results files written before findings carried it as "fabric_link".
std::string fabric_link_of(const std::string& subject) {
  const auto open = subject.rfind('(');
  if (open == std::string::npos || subject.empty() || subject.back() != ')') return "";
  return subject.substr(open + 1, subject.size() - open - 2);
}

void validate_nic_figures(const json& doc, RunRows& out) {
  if (!doc.contains("rails")) return;
  struct M {
    const char* key;
    const char* metric;
    const char* unit;
  };
  constexpr M kMetrics[] = {{"tx_gbs", "tx", "GB/s"},
                            {"rx_gbs", "rx", "GB/s"},
                            {"bidir_gbs", "bidir", "GB/s"},
                            {"lat_p50_us", "lat p50", "us"},
                            {"lat_p99_us", "lat p99", "us"}};
  for (const auto& rail : doc.at("rails")) {
    const int r = rail.value("rail", 0);
    if (!rail.contains("links")) continue;
    std::vector<const json*> measured;
    for (const auto& l : rail.at("links"))
      if (l.value("pairs", 0) - l.value("failed", 0) > 0) measured.push_back(&l);  // else nothing measured
    for (const json* l : measured) {
      const std::string nic = nic_name(text(*l, "node"), r);
      for (const M& m : kMetrics)
        if (l->contains(m.key) && l->at(m.key).is_number())
          out.figures.push_back({"nic", nic, m.metric, m.unit, l->at(m.key).get<double>()});
    }
    // Each NIC's bandwidth as a fraction of its rail's median in the same run: what
    // validate judges, and what a busier host or a slower run moves on every link alike
    // leaves alone, so a link's own drift shows over the fleet's common swings.
    for (const auto& [key, metric] : {std::pair{"tx_gbs", "tx/rail"}, std::pair{"rx_gbs", "rx/rail"}}) {
      std::vector<double> values;
      for (const json* l : measured) values.push_back(number(*l, key));
      const double mid = values.empty() ? 0 : median(values);
      if (mid <= 0) continue;
      for (const json* l : measured)
        out.figures.push_back({"nic", nic_name(text(*l, "node"), r), metric, "of rail median", number(*l, key) / mid});
    }
  }
}

// A finished pair test as a PairRow; false for one that did not finish.
bool pair_row(const json& p, PairRow& out) {
  if (!p.value("ok", false)) return false;
  out = PairRow{p.value("node_a", 0), p.value("rail_a", 0), p.value("node_b", 0), p.value("rail_b", 0),
                number(p, "bw_ab"),   number(p, "bw_ba"),   number(p, "lat_p50"), number(p, "lat_p99")};
  return true;
}

void validate_pairs(const json& doc, RunRows& out) {
  for (const char* key : {"rail_pairs", "cross_rail_pairs"}) {
    if (!doc.contains(key)) continue;
    PairRow r;
    for (const auto& p : doc.at(key))
      if (pair_row(p, r)) out.pairs.push_back(r);
  }
}

void validate_fabric_figures(const json& doc, RunRows& out) {
  if (!doc.contains("fabric")) return;
  const json& f = doc.at("fabric");
  std::map<std::string, std::vector<double>> gbps, retransmits;
  for (const auto& flow : f.value("flows", json::array())) {
    if (text(flow, "health") == "skipped") continue;
    for (const auto& l : flow.value("links", json::array())) {
      gbps[l.get<std::string>()].push_back(number(flow, "gbps"));
      retransmits[l.get<std::string>()].push_back(number(flow, "retransmits"));
    }
  }
  for (const auto& [link, v] : gbps) {
    out.figures.push_back({"fabric_link", link, "flow Gb/s", "Gb/s", median(v)});
    out.figures.push_back({"fabric_link", link, "flow retransmits", "segments", median(retransmits.at(link))});
  }
}

void validate_findings(const json& doc, const std::vector<std::string>& nodes, RunRows& out) {
  for (const auto& f : doc.value("findings", json::array())) {
    FindingRow row{
        "", "", text(f, "severity"), text(f, "kind"), text(f, "code"), text(f, "subject"), text(f, "reason")};
    const int node = f.contains("node") && f.at("node").is_number_integer() ? f.at("node").get<int>() : -1;
    const int rail = f.contains("rail") && f.at("rail").is_number_integer() ? f.at("rail").get<int>() : -1;
    if (node >= 0 && static_cast<size_t>(node) < nodes.size()) {
      row.thing_kind = rail >= 0 ? "nic" : "node";
      row.thing = rail >= 0 ? nic_name(nodes[static_cast<size_t>(node)], rail) : nodes[static_cast<size_t>(node)];
    } else if (row.kind == "fabric") {
      const std::string link = f.contains("fabric_link") ? text(f, "fabric_link") : fabric_link_of(row.subject);
      if (!link.empty()) row.thing_kind = "fabric_link", row.thing = link;
    }
    out.findings.push_back(std::move(row));
  }
  const json& bad = doc.value("bad_nodes", json::object());
  for (const auto& h : bad.value("hosts", json::array())) {
    std::string reason;
    if (bad.contains("reasons") && bad.at("reasons").contains(h.get<std::string>()))
      for (const auto& r : bad.at("reasons").at(h.get<std::string>()))
        reason += (reason.empty() ? "" : "; ") + r.get<std::string>();
    out.drains.push_back({"node", h.get<std::string>(), "", "", "", "", reason});
  }
  const json ports = bad.value("switch_ports", json::array());
  const json links = bad.value("switch_port_links", json::array());
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string line = ports[i].get<std::string>();
    std::string link;
    if (i < links.size() && links[i].is_string()) {
      link = links[i].get<std::string>();
    } else {
      const auto colon = line.find("): ");
      link = fabric_link_of(colon == std::string::npos ? line : line.substr(0, colon + 1));
    }
    if (!link.empty()) out.drains.push_back({"fabric_link", link, "", "", "", "", line});
  }
}

void collective_figures(const json& doc, RunRows& out) {
  const std::string command = text(doc, "command");
  for (const auto& r : doc.value("results", json::array())) {
    if (!r.contains("out_of_place") || !r.contains("bytes")) continue;
    const std::string name = fmt::format("{} {}", command, size_text(number(r, "bytes")));
    const json& s = r.at("out_of_place");
    out.figures.push_back({"collective", name, "busbw", "GB/s", number(s, "busbw_gbps")});
    // The rank count the figure was measured at (compare --job holds a job's collective
    // against the same count); runs.hosts names each host once.
    if (doc.contains("world") && doc.at("world").contains("size"))
      out.figures.push_back({"collective", name, "ranks", "ranks", number(doc.at("world"), "size")});
    if (s.contains("iteration_us"))
      out.figures.push_back({"collective", name, "time p50", "us", number(s.at("iteration_us"), "p50")});
  }
}

// kvcache: per mode and token count, the rate and the request time p50 and p99.
void kvcache_figures(const json& doc, RunRows& out) {
  for (const auto& r : doc.value("results", json::array())) {
    if (!r.contains("mode") || !r.contains("tokens")) continue;
    const std::string name = fmt::format("kvcache {} {} tokens", text(r, "mode"), r.value("tokens", 0));
    out.figures.push_back({"kvcache", name, "GB/s", "GB/s", number(r, "gbps")});
    if (r.contains("request_us") && r.at("request_us").is_object()) {
      out.figures.push_back({"kvcache", name, "request p50", "us", number(r.at("request_us"), "p50")});
      out.figures.push_back({"kvcache", name, "request p99", "us", number(r.at("request_us"), "p99")});
    }
  }
}

// workload: the step's time p50 and p99 and its exposed communication p50, as the
// summary has them; the thing is the model and its parallel layout (config.spec).
void workload_figures(const json& doc, RunRows& out) {
  if (!doc.contains("summary") || !doc.at("summary").contains("step_us")) return;
  const json& s = doc.at("summary");
  const json& config = doc.value("config", json::object());
  const json& c = config.value("spec", json::object());
  std::string name = "workload";
  for (const char* k : {"model", "tp", "pp", "dp", "ep"})
    if (c.contains(k) && (c.at(k).is_string() || c.at(k).is_number_integer()))
      name += c.at(k).is_string() ? " " + c.at(k).get<std::string>() : fmt::format(" {}{}", k, c.at(k).get<int>());
  out.figures.push_back({"workload", name, "step p50", "us", number(s.at("step_us"), "p50")});
  out.figures.push_back({"workload", name, "step p99", "us", number(s.at("step_us"), "p99")});
  if (s.contains("exposed_us"))
    out.figures.push_back({"workload", name, "exposed p50", "us", number(s.at("exposed_us"), "p50")});
}

void sendrecv_figures(const json& doc, RunRows& out) {
  std::vector<std::string> host_of_rank;
  if (doc.contains("world") && doc.at("world").contains("ranks"))
    for (const auto& r : doc.at("world").at("ranks")) host_of_rank.push_back(text(r, "host"));
  const auto end = [&](int rank, int rail) {
    const std::string host = static_cast<size_t>(rank) < host_of_rank.size() ? host_of_rank[rank] : "";
    return fmt::format("{}/rank{}:rail{}", host, rank, rail);
  };
  for (const auto& r : doc.value("results", json::array())) {
    const std::string op = text(r, "op"), size = size_text(number(r, "bytes"));
    for (const auto& p : r.value("pairs", json::array())) {
      const std::string name =
          end(p.value("a", 0), p.value("rail", 0)) + "-" + end(p.value("b", 0), p.value("rail", 0));
      const auto add = [&](const char* key, const char* metric, const char* unit) {
        if (p.contains(key))
          out.figures.push_back(
              {"pair", name, fmt::format("{} {} {}", op, size, metric), unit, number(p.at(key), "p50")});
      };
      add("latency_us", "lat p50", "us");
      add("bw_ab_gbps", "bw a->b p50", "GB/s");
      add("bw_ba_gbps", "bw b->a p50", "GB/s");
    }
  }
}

}  // namespace

std::string link_name(const std::string& node_a, int rail_a, const std::string& node_b, int rail_b) {
  std::string a = nic_name(node_a, rail_a), b = nic_name(node_b, rail_b);
  if (b < a) std::swap(a, b);
  return a + "-" + b;
}

RunRows rows_of(const json& doc, const std::string& source) {
  if (!doc.is_object() || text(doc, "schema") != "railbench.result" || text(doc, "command").empty())
    throw UsageError(
        fmt::format("{}: not a railbench results file (no \"schema\": \"railbench.result\"): give a file "
                    "a run wrote with --json",
                    source));
  RunRows out;
  RunRow& r = out.run;
  r.key = text(doc, "run_id").empty() ? legacy_key(doc) : text(doc, "run_id");
  r.command = text(doc, "command");
  r.started_at = text(doc, "started_at");
  r.finished_at = text(doc, "finished_at");
  r.status = text(doc, "status");
  r.verdict = text(doc, "verdict");
  r.version = text(doc, "railbench_version");
  if (doc.contains("transport"))
    r.transport = doc.at("transport").is_string() ? text(doc, "transport") : text(doc.at("transport"), "name");
  const json& config = doc.value("config", json::object());
  r.su = config.is_object() ? text(config, "su") : "";
  r.config = config.dump();
  for (const auto& h : hosts_of(doc)) r.hosts += (r.hosts.empty() ? "" : ",") + h;

  if (r.command == "validate") {
    const auto nodes = validate_nodes(doc);
    validate_nic_figures(doc, out);
    out.nodes = nodes;
    validate_pairs(doc, out);
    validate_fabric_figures(doc, out);
    validate_findings(doc, nodes, out);
  } else if (r.command == "sendrecv") {
    sendrecv_figures(doc, out);
  } else if (r.command == "kvcache") {
    kvcache_figures(doc, out);
  } else if (r.command == "workload") {
    workload_figures(doc, out);
  } else {
    collective_figures(doc, out);
  }
  return out;
}

RunRows rows_of_file(const std::string& path, const std::string& who) {
  std::vector<PairRow> pairs;
  const auto keep = [&pairs](const json& p) {
    PairRow r;
    if (pair_row(p, r)) pairs.push_back(r);
  };
  const json doc = read_results_file(path, who, {{"rail_pairs", keep}, {"cross_rail_pairs", keep}});
  RunRows out = rows_of(doc, path);
  if (out.run.command == "validate") out.pairs = std::move(pairs);
  return out;
}

}  // namespace railbench::store
