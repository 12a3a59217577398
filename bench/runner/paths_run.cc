#include "bench/runner/paths_run.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/observe/flow_trace.h"

namespace railbench {
namespace {

using json = nlohmann::json;

// Traces at once per rank: a trace spends most of its time waiting for hops that do not
// answer (the destination's NIC takes the probe and says nothing), so a few run side by
// side; the pacer still holds the probe rate.
constexpr int kParallelTraces = 8;
// More flows than this and the table gives way to one line per (rank, peer, rail).
constexpr size_t kMaxFlowLines = 64;

TraceOptions paths_trace_options() {
  TraceOptions o;
  o.first_ttl = 1;
  o.max_ttl = 8;  // leaf, spine, super-spine, spine, leaf, and room
  o.hop_timeout = std::chrono::milliseconds(250);
  o.tries = 2;
  o.max_silent = 2;  // past the last switch nothing answers: a RoCE NIC takes UDP 4791 silently
  return o;
}

json trace_json(int rank, const std::string& rail_name, const NetworkFlow& f, const FlowTrace& trace) {
  json hops = json::array();
  for (const auto& h : trace.hops) hops.push_back(json{{"ttl", h.ttl}, {"address", h.address}, {"rtt_us", h.rtt_us}});
  json j{{"rank", rank},           {"peer", f.peer},          {"rail", f.rail},
         {"rail_name", rail_name}, {"channel", f.channel},    {"role", f.role},
         {"qpn", f.qpn},           {"dest_qpn", f.dest_qpn},  {"protocol", f.protocol},
         {"src", f.src_ip},        {"src_port", f.src_port},  {"dst", f.dst_ip},
         {"dst_port", f.dst_port}, {"hops", std::move(hops)}, {"reached", trace.reached}};
  if (trace.hops.empty()) {
    j["error"] =
        trace.error.empty() ? "no hop answered: the probes or their ICMP answers are dropped on the way" : trace.error;
  }
  return j;
}

// "10.1.0.1 > 10.10.0.2 > 10.20.0.1", "*" for a hop that did not answer.
std::string path_text(const json& flow) {
  std::string out;
  for (const auto& h : flow.at("hops")) {
    if (!out.empty()) out += " > ";
    const std::string a = h.at("address").get<std::string>();
    out += a.empty() ? "*" : a;
  }
  return out.empty() ? "(no hop answered)" : out;
}

// "9 via A, 7 via B" (infix " via "): each key with its count, and their total in `total`.
std::string counts_text(const std::map<std::string, int>& counts, const char* infix, int& total) {
  std::string out;
  total = 0;
  for (const auto& [key, n] : counts) {
    total += n;
    out += fmt::format("{}{}{}{}", out.empty() ? "" : ", ", n, infix, key);
  }
  return out;
}

// ECMP balance at each first switch (a leaf): how its traced flows spread over the next
// switches (the spines). An even hash gives max / mean near 1 once there are several
// flows a next hop; a polarized or port-blind hash piles them onto a few.
std::vector<std::string> next_hop_balance(const json& flows) {
  std::map<std::string, std::map<std::string, int>> by_first;
  for (const auto& f : flows) {
    const auto& hops = f.at("hops");
    if (hops.size() < 2) continue;
    const std::string first = hops[0].at("address").get<std::string>();
    const std::string next = hops[1].at("address").get<std::string>();
    if (!first.empty() && !next.empty()) by_first[first][next]++;
  }
  std::vector<std::string> lines;
  for (const auto& [first, nexts] : by_first) {
    int total = 0, most = 0;
    const std::string parts = counts_text(nexts, " ", total);
    for (const auto& [next, n] : nexts) most = std::max(most, n);
    const double mean = static_cast<double>(total) / static_cast<double>(nexts.size());
    lines.push_back(fmt::format("#   at {}: {} flow(s) over {} next switch(es): {} (max / mean {:.2f})", first, total,
                                nexts.size(), parts, most / mean));
  }
  return lines;
}

std::vector<std::string> describe(const json& flows, int ranks, double rate) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "# paths: {} flows of {} ranks, each traced by TTL-limited udp probes with its own addresses and ports "
      "({:.1f} probes/s a rank); hops by the address that answered",
      flows.size(), ranks, rate));
  if (flows.size() <= kMaxFlowLines) {
    for (const auto& f : flows) {
      lines.push_back(fmt::format("#   rank {} -> {} {} ch {} {:<4} {}:{} > {}:{}  {}", f.at("rank").get<int>(),
                                  f.at("peer").get<int>(), f.at("rail_name").get<std::string>(),
                                  f.at("channel").get<int>(), f.at("role").get<std::string>(),
                                  f.at("src").get<std::string>(), f.at("src_port").get<int>(),
                                  f.at("dst").get<std::string>(), f.at("dst_port").get<int>(), path_text(f)));
    }
  }
  // Per (rank, peer, rail): how many distinct paths its flows took. ECMP spreads a pair
  // only as far as its flows' ports differ: one path for many queue pairs is the hash
  // (or a polarized fabric) putting them all on one spine.
  std::map<std::tuple<int, int, std::string>, std::map<std::string, int>> by_pair;
  int silent = 0;
  for (const auto& f : flows) {
    if (f.contains("error")) ++silent;
    by_pair[{f.at("rank").get<int>(), f.at("peer").get<int>(), f.at("rail_name").get<std::string>()}][path_text(f)]++;
  }
  for (const auto& [key, paths] : by_pair) {
    const auto& [rank, peer, rail] = key;
    int total = 0;
    const std::string parts = counts_text(paths, " via ", total);
    lines.push_back(fmt::format("#   rank {} -> {} {}: {} flow(s) over {} path(s): {}", rank, peer, rail, total,
                                paths.size(), parts));
  }
  for (const auto& line : next_hop_balance(flows)) lines.push_back(line);
  if (silent > 0) {
    lines.push_back(fmt::format(
        "# paths: {} flow(s) without one answering hop: ICMP time-exceeded is filtered or rate-limited on the "
        "way (lower --probe-rate, or allow ICMP from the switches)",
        silent));
  }
  return lines;
}

}  // namespace

std::vector<int> paths_peers(int rank, int world_size, int n) {
  std::vector<int> out;
  for (int k = 1; k <= n && k < world_size; ++k) out.push_back((rank + k) % world_size);
  return out;
}

std::vector<NetworkFlow> paths_flows(const Transport& t, int n) {
  const std::vector<int> peers = paths_peers(t.rank(), t.world_size(), n);
  std::vector<NetworkFlow> flows;
  for (const auto& f : t.network_flows())
    if (std::find(peers.begin(), peers.end(), f.peer) != peers.end() && f.src_ip != f.dst_ip) flows.push_back(f);
  return flows;
}

std::string paths_plan_line(size_t flows, double rate) {
  // A trace asks about three switches and then waits out two silent TTLs (two tries of
  // 250 ms each); 8 at once.
  const double probes = static_cast<double>(flows) * (3 + 2 * 2);
  const double waits = std::ceil(static_cast<double>(flows) / kParallelTraces) * 2 * 2 * 0.25;
  return fmt::format("# paths: tracing {} flow(s) a rank at {:.1f} probes/s a rank: about {:.0f} s", flows, rate,
                     std::max(probes / rate, waits));
}

double paths_probe_rate(double switch_rate, int world_size) {
  return switch_rate / std::max(1.0, world_size / 3.0);
}

void check_paths_supported(const Transport& t) {
  const std::vector<NetworkFlow> all = t.network_flows();
  const bool udp = std::all_of(all.begin(), all.end(), [](const NetworkFlow& f) { return f.protocol == "udp"; });
  if (all.empty() || !udp) {
    throw UsageError(fmt::format(
        "--paths: transport {} ({}) does not say which IP flows carry its traffic; --paths traces RoCE v2 queue "
        "pairs (-t verbs on a RoCE port with an IPv4 GID). Leave --paths out here; validate's fabric phase traces "
        "TCP flows of its own on any Ethernet fabric",
        t.name(), t.provider()));
  }
}

PathsResult trace_transport_paths(const Transport& t, Bootstrap& b, const std::vector<NetworkFlow>& flows, double rate,
                                  const std::vector<std::string>& rail_names) {
  ProbePacer pacer(rate);
  const TraceOptions options = paths_trace_options();
  std::vector<FlowTrace> traces(flows.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  const int threads = static_cast<int>(std::min<size_t>(kParallelTraces, flows.size()));
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      for (size_t k = next++; k < flows.size(); k = next++) {
        const NetworkFlow& f = flows[k];
        const FlowTuple tuple{.src_ip = f.src_ip,
                              .dst_ip = f.dst_ip,
                              .src_port = f.src_port,
                              .dst_port = f.dst_port,
                              .proto = FlowProto::udp};
        traces[k] = trace_udp(tuple, options, pacer);
      }
    });
  }
  for (auto& w : workers) w.join();

  json mine = json::array();
  for (size_t k = 0; k < flows.size(); ++k) {
    const auto rail = static_cast<size_t>(flows[k].rail);
    mine.push_back(trace_json(t.rank(), rail < rail_names.size() ? rail_names[rail] : "", flows[k], traces[k]));
  }
  PathsResult out{json::array(), {}};
  const auto gathered = b.gather_strings(mine.dump());
  if (t.rank() != 0) return out;
  for (const auto& s : gathered)
    for (auto& f : json::parse(s)) out.flows.push_back(std::move(f));
  out.lines = describe(out.flows, t.world_size(), rate);
  return out;
}

}  // namespace railbench
