#include "bench/runner/results_csv.h"

#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/kinds/result_kind.h"

namespace railbench {

using nlohmann::json;

namespace {

// What one row is made from: the document, the result entry (one size, or one rail of
// validate), and the item inside it (a pair, a placement, a link); null where a row
// kind has none.
struct RowSource {
  const json* doc = nullptr;
  const json* entry = nullptr;
  const json* item = nullptr;
  const json* extra = nullptr;
};

using Getter = std::function<json(const RowSource&)>;
struct Column {
  std::string name;
  Getter get;
};

const json kNull;

// j[k1][k2]..., or null where any step is missing: an older or partial document leaves
// a cell empty instead of failing the whole file.
const json& field(const json* j, std::initializer_list<const char*> path) {
  if (j == nullptr) return kNull;
  const json* at = j;
  for (const char* k : path) {
    if (!at->is_object() || !at->contains(k)) return kNull;
    at = &(*at)[k];
  }
  return *at;
}

Getter from_entry(std::initializer_list<const char*> path) {
  std::vector<const char*> p(path);
  return [p](const RowSource& s) {
    const json* at = s.entry;
    for (const char* k : p) at = &field(at, {k});
    return *at;
  };
}

Getter from_item(std::initializer_list<const char*> path) {
  std::vector<const char*> p(path);
  return [p](const RowSource& s) {
    const json* at = s.item;
    for (const char* k : p) at = &field(at, {k});
    return *at;
  };
}

// The host of rank `rank_of(source)`, from the header's world.
Getter host_of(Getter rank_of) {
  return [rank_of](const RowSource& s) -> json {
    const json rank = rank_of(s);
    const json& ranks = field(s.doc, {"world", "ranks"});
    if (!rank.is_number_integer() || !ranks.is_array()) return nullptr;
    for (const auto& r : ranks)
      if (r.is_object() && r.value("rank", -1) == rank.get<int>()) return field(&r, {"host"});
    return nullptr;
  };
}

// A JSON summary (lib/results/results.h) as eight columns.
void add_summary(std::vector<Column>& cols, const std::string& name, const std::string& unit,
                 std::function<const json*(const RowSource&)> summary) {
  for (const char* stat : {"min", "p50", "p90", "p99", "p99_9", "max", "mean", "stdev"}) {
    cols.push_back(
        {name + "_" + stat + "_" + unit, [summary, stat](const RowSource& s) { return field(summary(s), {stat}); }});
  }
}

CsvTable make_table(const std::vector<Column>& cols, const std::vector<RowSource>& sources) {
  CsvTable t;
  for (const auto& c : cols) t.header.push_back(c.name);
  for (const auto& s : sources) {
    std::vector<std::string> row;
    row.reserve(cols.size());
    for (const auto& c : cols) row.push_back(csv_cell(c.get(s)));
    t.rows.push_back(std::move(row));
  }
  return t;
}

const json& results_of(const json& doc) {
  return field(&doc, {"results"});
}

// The collective columns of one placement ("out_of_place" or "in_place", in `extra`).
std::vector<Column> collective_columns() {
  std::vector<Column> cols{{"bytes", from_entry({"bytes"})},
                           {"count", from_entry({"count"})},
                           {"type", from_entry({"type"})},
                           {"redop", from_entry({"redop"})},
                           {"root", from_entry({"root"})},
                           {"algo", from_entry({"algo"})},
                           {"placement", [](const RowSource& s) { return s.extra ? *s.extra : kNull; }}};
  auto side = [](const RowSource& s) -> const json* {
    if (!s.extra || !s.item) return nullptr;
    return &field(s.entry, {s.extra->get_ref<const std::string&>().c_str()});
  };
  for (const char* f : {"time_us", "algbw_gbps", "busbw_gbps", "wrong"})
    cols.push_back({f, [side, f](const RowSource& s) { return field(side(s), {f}); }});
  add_summary(cols, "iteration", "us", [side](const RowSource& s) { return &field(side(s), {"iteration_us"}); });
  return cols;
}

const json kPlacements[] = {"out_of_place", "in_place"};

}  // namespace

CsvTable sendrecv_csv(const json& doc) {
  std::vector<Column> cols{{"bytes", from_entry({"bytes"})},
                           {"op", from_entry({"op"})},
                           {"a", from_item({"a"})},
                           {"b", from_item({"b"})},
                           {"host_a", host_of(from_item({"a"}))},
                           {"host_b", host_of(from_item({"b"}))},
                           {"rail", from_item({"rail"})},
                           {"wrong", from_item({"wrong"})}};
  for (const auto& [name, key, unit] :
       {std::tuple{"latency", "latency_us", "us"}, std::tuple{"bw_ab", "bw_ab_gbps", "gbps"},
        std::tuple{"bw_ba", "bw_ba_gbps", "gbps"}, std::tuple{"bw_bidir", "bw_bidir_gbps", "gbps"}}) {
    std::string k = key;
    add_summary(cols, name, unit, [k](const RowSource& s) { return &field(s.item, {k.c_str()}); });
  }
  std::vector<RowSource> sources;
  for (const auto& e : results_of(doc))
    for (const auto& p : field(&e, {"pairs"})) sources.push_back({&doc, &e, &p});
  return make_table(cols, sources);
}

CsvTable collective_csv(const json& doc) {
  std::vector<RowSource> sources;
  for (const auto& e : results_of(doc))
    for (const auto& place : kPlacements) sources.push_back({&doc, &e, &e, &place});
  return make_table(collective_columns(), sources);
}

CsvTable alltoall_csv(const json& doc) {
  static const json kCollective = "collective", kLink = "link";
  // `item` is the entry for a placement row, the link for a link row; `extra` the placement.
  std::vector<Column> cols{{"row", [](const RowSource& s) { return s.extra ? kCollective : kLink; }}};
  for (auto& c : collective_columns()) cols.push_back(std::move(c));
  // A link row repeats its size's identity; the collective figures stay empty.
  auto link = [](const RowSource& s) { return s.extra ? nullptr : s.item; };
  cols.push_back({"src", [link](const RowSource& s) { return field(link(s), {"src"}); }});
  cols.push_back({"dst", [link](const RowSource& s) { return field(link(s), {"dst"}); }});
  cols.push_back({"src_host", host_of([link](const RowSource& s) { return field(link(s), {"src"}); })});
  cols.push_back({"dst_host", host_of([link](const RowSource& s) { return field(link(s), {"dst"}); })});
  add_summary(cols, "step", "us", [link](const RowSource& s) { return &field(link(s), {"step_us"}); });
  cols.push_back({"link_gbps", [link](const RowSource& s) { return field(link(s), {"gbps"}); }});
  // --routing (uneven MoE dispatch): the size's routing on its placement rows, only in
  // a routed run's CSV.
  if (!field(&doc, {"config", "routing"}).is_null()) {
    for (const char* f : {"tokens_per_rank", "hidden", "expert_imbalance", "pair_imbalance", "busiest_bytes"})
      cols.push_back({f, [f](const RowSource& s) { return s.extra ? field(s.entry, {"routing", f}) : json(); }});
  }
  std::vector<RowSource> sources;
  for (const auto& e : results_of(doc)) {
    for (const auto& place : kPlacements) sources.push_back({&doc, &e, &e, &place});
    for (const auto& p : field(&e, {"pairs"})) sources.push_back({&doc, &e, &p, nullptr});
  }
  return make_table(cols, sources);
}

CsvTable workload_csv(const json& doc) {
  std::vector<Column> cols{{"iteration", from_entry({"iteration"})},   {"iterations", from_entry({"iterations"})},
                           {"step_us", from_entry({"step_us"})},       {"step_max_us", from_entry({"step_max_us"})},
                           {"exposed_us", from_entry({"exposed_us"})}, {"compute_us", from_entry({"compute_us"})},
                           {"async_us", from_entry({"async_us"})}};
  for (const char* k : {"tp", "pp", "dp", "ep", "edp"})
    cols.push_back({fmt::format("{}_us", k), from_entry({"kind_us", k})});
  std::vector<RowSource> sources;
  for (const auto& e : results_of(doc)) sources.push_back({&doc, &e, &e});
  return make_table(cols, sources);
}

CsvTable kvcache_csv(const json& doc) {
  std::vector<Column> cols{{"tokens", from_entry({"tokens"})},
                           {"mode", from_entry({"mode"})},
                           {"bytes", from_entry({"bytes"})},
                           {"blocks", from_entry({"blocks"})},
                           {"ops", from_entry({"ops"})}};
  add_summary(cols, "request", "us", [](const RowSource& s) { return &field(s.entry, {"request_us"}); });
  for (const char* f : {"gbps", "blocks_per_s", "aggregate_gbps", "ratio_to_contiguous", "wrong"})
    cols.push_back({f, from_entry({f})});
  // kvcache --serve: its queueing, total and load columns, only in a serving run's CSV.
  if (doc.contains("config") && doc["config"].contains("serve")) {
    add_summary(cols, "queue", "us", [](const RowSource& s) { return &field(s.entry, {"queue_us"}); });
    add_summary(cols, "total", "us", [](const RowSource& s) { return &field(s.entry, {"total_us"}); });
    for (const char* f : {"requests", "offered_rps", "carried_rps", "offered_gbps", "carried_gbps", "overload"})
      cols.push_back({f, from_entry({f})});
    cols.push_back({"slo_goodput", from_entry({"slo", "goodput"})});
    // --route / --decode-cache: the KV bytes not sent because the decode rank held them.
    cols.push_back({"bytes_saved", from_entry({"routing", "bytes_saved"})});
    cols.push_back({"saved_share", from_entry({"routing", "saved_share"})});
  }
  std::vector<RowSource> sources;
  for (const auto& e : results_of(doc)) sources.push_back({&doc, &e, &e});
  return make_table(cols, sources);
}

// One row per placement x victim metric x aggressor pattern; the figures are in the
// row's "unit" (us for latency and allreduce, GB/s for bandwidth).
CsvTable congestion_csv(const json& doc) {
  auto element = [](const char* key, size_t i) {
    return [key, i](const RowSource& s) -> json {
      const json& a = field(s.entry, {key});
      return a.is_array() && a.size() > i ? a[i] : kNull;
    };
  };
  std::vector<Column> cols{{"placement", from_entry({"placement"})},
                           {"victim_a", element("victim_ranks", 0)},
                           {"victim_b", element("victim_ranks", 1)},
                           {"victim_a_host", element("victim_hosts", 0)},
                           {"victim_b_host", element("victim_hosts", 1)},
                           {"metric", from_entry({"metric"})},
                           {"unit", from_entry({"unit"})},
                           {"aggressor", from_entry({"aggressor"})},
                           {"aggressor_gbps", from_entry({"aggressor_gbps"})},
                           {"aggressor_capped", from_entry({"aggressor_capped"})}};
  for (const char* phase : {"isolated", "congested"}) {
    cols.push_back({std::string(phase) + "_count", from_entry({phase, "count"})});
    for (const char* stat : {"p50", "p99", "p99_9"})
      cols.push_back({std::string(phase) + "_" + stat, from_entry({phase, stat})});
  }
  for (const char* stat : {"p50", "p99", "p99_9"})
    cols.push_back({std::string("impact_") + stat, from_entry({"impact", stat})});
  std::vector<RowSource> sources;
  for (const auto& e : results_of(doc)) sources.push_back({&doc, &e, &e});
  return make_table(cols, sources);
}

std::map<std::pair<int, int>, LinkVerdict> validate_link_verdicts(const json& doc) {
  std::map<std::pair<int, int>, LinkVerdict> out;
  std::map<std::pair<int, int>, std::set<std::string>> kinds;
  for (const auto& f : field(&doc, {"findings"})) {
    const json& node = field(&f, {"node"});
    const json& rail = field(&f, {"rail"});
    if (!node.is_number_integer() || !rail.is_number_integer()) continue;
    const auto key = std::pair{node.get<int>(), rail.get<int>()};
    const std::string severity = f.value("severity", "");
    auto& v = out[key].verdict;
    if (severity == "FAIL" || v.empty()) v = severity;
    kinds[key].insert(f.value("kind", ""));
  }
  for (auto& [key, set] : kinds) {
    for (const auto& k : set) out[key].kinds += (out[key].kinds.empty() ? "" : ";") + k;
  }
  return out;
}

CsvTable validate_csv(const json& doc) {
  const json& inventory = field(&doc, {"inventory"});
  const json& rails = field(&doc, {"rails"});
  // Node indices (as findings name them): the order nodes first appear in the inventory.
  std::map<std::string, int> node_index;
  for (const auto& i : inventory) node_index.emplace(i.value("node", ""), static_cast<int>(node_index.size()));
  const auto verdicts = validate_link_verdicts(doc);
  const bool finished = field(&doc, {"verdict"}).is_string();

  auto inv = [](std::initializer_list<const char*> path) { return from_item(path); };
  auto link = [](const char* key) { return [key](const RowSource& s) -> json { return field(s.extra, {key}); }; };
  auto verdict_of = [&](const RowSource& s) -> const LinkVerdict* {
    const json& node = field(s.item, {"node"});
    const json& slot = field(s.item, {"slot"});
    if (!node.is_string() || !slot.is_number_integer()) return nullptr;
    const auto n = node_index.find(node.get<std::string>());
    if (n == node_index.end()) return nullptr;
    const auto v = verdicts.find({n->second, slot.get<int>()});
    return v == verdicts.end() ? nullptr : &v->second;
  };
  std::vector<Column> cols{{"rail", inv({"slot"})},
                           {"node", inv({"node"})},
                           {"rank", inv({"rank"})},
                           {"nic", inv({"nic", "nic"})},
                           {"leaf", from_entry({"leaf"})},
                           {"found", inv({"nic", "found"})},
                           {"port_state", inv({"nic", "state"})},
                           {"port_speed_gbit_s", inv({"nic", "speed_gbps"})},
                           {"mtu", inv({"nic", "mtu"})},
                           {"line_rate_gbit_s", from_entry({"line_rate_gbps"})},
                           {"pairs", link("pairs")},
                           {"failed_pairs", link("failed")},
                           {"tx_gbps", link("tx_gbs")},
                           {"rx_gbps", link("rx_gbs")},
                           {"bidir_gbps", link("bidir_gbs")},
                           {"lat_p50_us", link("lat_p50_us")},
                           {"lat_p99_us", link("lat_p99_us")},
                           {"bw_spread", link("bw_spread")},
                           {"link_downs", link("link_downs")},
                           {"carrier_changes", link("carrier_changes")},
                           {"link_downed", link("link_downed")},
                           // The verdict once the run has one: a link without findings passed.
                           {"verdict",
                            [verdict_of, finished](const RowSource& s) -> json {
                              const LinkVerdict* v = verdict_of(s);
                              if (v && !v->verdict.empty()) return v->verdict;
                              return finished ? json("PASS") : json(nullptr);
                            }},
                           {"findings", [verdict_of](const RowSource& s) -> json {
                              const LinkVerdict* v = verdict_of(s);
                              return v ? json(v->kinds) : json("");
                            }}};

  // A row's `item` is the link's inventory entry, `entry` its rail (null before the rail
  // checks), `extra` its figures in that rail's "links" (null until measured). Rail by
  // rail, nodes in the run's order, as the matrices are.
  std::vector<RowSource> sources;
  int max_slot = -1;
  for (const auto& i : inventory) max_slot = std::max(max_slot, i.value("slot", -1));
  for (int r = 0; r <= max_slot; ++r) {
    const json* rail = nullptr;
    if (rails.is_array())
      for (const auto& x : rails)
        if (x.value("rail", -1) == r) rail = &x;
    for (const auto& i : inventory) {
      if (i.value("slot", -1) != r) continue;
      const json* figures = nullptr;
      for (const auto& l : field(rail, {"links"}))
        if (l.value("node", "") == i.value("node", "")) figures = &l;
      sources.push_back({&doc, rail, &i, figures});
    }
  }
  return make_table(cols, sources);
}

CsvTable results_csv(const json& doc) {
  const std::string command = field(&doc, {"command"}).is_string() ? doc.at("command").get<std::string>() : "";
  const ResultKind* kind = find_result_kind(command, ResultPart::csv);
  // The document is the running command's own: a command that writes --csv without a
  // kind that has a table is a bug, not bad input.
  if (kind == nullptr)
    throw std::invalid_argument(fmt::format("no CSV table for command '{}': --csv writes those of {}", command,
                                            result_kind_names(ResultPart::csv)));
  return kind->csv(doc);
}

std::string results_csv_text(const json& doc) {
  return to_csv(results_csv(doc));
}

}  // namespace railbench
