#include "collectives/workload/trace.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "lib/core/config_path.h"
#include "lib/core/errors.h"

namespace railbench::workload {

using nlohmann::json;

const char* to_string(OpType t) {
  switch (t) {
    case OpType::compute: return "compute";
    case OpType::all_reduce: return "all_reduce";
    case OpType::reduce_scatter: return "reduce_scatter";
    case OpType::all_gather: return "all_gather";
    case OpType::all_to_all_v: return "all_to_all_v";
    case OpType::send: return "send";
    case OpType::recv: return "recv";
    case OpType::sendrecv: return "sendrecv";
    case OpType::wait: return "wait";
  }
  return "?";
}

namespace {

constexpr OpType kTypes[] = {OpType::compute,    OpType::all_reduce,   OpType::reduce_scatter,
                             OpType::all_gather, OpType::all_to_all_v, OpType::send,
                             OpType::recv,       OpType::sendrecv,     OpType::wait};
constexpr GroupKind kKinds[] = {GroupKind::tp, GroupKind::pp, GroupKind::dp, GroupKind::ep, GroupKind::edp};

bool collective(OpType t) {
  return t == OpType::all_reduce || t == OpType::reduce_scatter || t == OpType::all_gather || t == OpType::all_to_all_v;
}

GroupKind parse_kind(const std::string& s, const std::string& where) {
  for (GroupKind k : kKinds)
    if (s == to_string(k)) return k;
  throw UsageError(fmt::format("{}: kind '{}': use tp, pp, dp, ep or edp", where, cut_for_error(s, 20)));
}

uint64_t u64(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return 0;
  if (!j.at(key).is_number_unsigned() && !(j.at(key).is_number_integer() && j.at(key).get<int64_t>() >= 0))
    throw UsageError(fmt::format("{}: \"{}\" must be a non-negative integer", where, key));
  return j.at(key).get<uint64_t>();
}

int rank_field(const json& j, const char* key, int world, const std::string& where) {
  const uint64_t v = u64(j, key, where);
  if (!j.contains(key) || v >= static_cast<uint64_t>(world))
    throw UsageError(fmt::format("{}: \"{}\" must name a rank from 0 to {} (the trace's world is {})", where, key,
                                 world - 1, world));
  return static_cast<int>(v);
}

json op_json(const Trace& t, const Op& op) {
  json j{{"op", to_string(op.type)}};
  if (op.type == OpType::compute) j["us"] = op.us;
  if (op.group >= 0) j["group"] = t.groups[static_cast<size_t>(op.group)].name;
  if (op.type == OpType::send || op.type == OpType::sendrecv) j["peer"] = op.peer;
  if (op.type == OpType::recv || op.type == OpType::sendrecv) {
    j["from"] = op.from;
    j["recv_bytes"] = op.recv_bytes;
  }
  if (op.bytes) j["bytes"] = op.bytes;
  if (!op.split_bytes.empty()) j["split_bytes"] = op.split_bytes;
  if (op.tokens) {
    j["tokens"] = op.tokens;
    j["token_bytes"] = op.token_bytes;
    j["route_key"] = op.route_key;
  }
  if (op.async) j["async"] = true;
  if (op.type != OpType::compute && op.type != OpType::wait) j["kind"] = to_string(op.kind);
  if (!op.label.empty()) j["label"] = op.label;
  return j;
}

Op op_from_json(const json& j, const Trace& t, const std::map<std::string, int>& groups, const std::string& where) {
  if (!j.is_object() || !j.contains("op") || !j.at("op").is_string())
    throw UsageError(fmt::format("{}: expected an object with \"op\"", where));
  Op op;
  const std::string name = j.at("op").get<std::string>();
  const auto type = std::find_if(std::begin(kTypes), std::end(kTypes), [&](OpType x) { return name == to_string(x); });
  if (type == std::end(kTypes))
    throw UsageError(
        fmt::format("{}: op '{}': use compute, all_reduce, reduce_scatter, all_gather, all_to_all_v, "
                    "send, recv, sendrecv or wait",
                    where, cut_for_error(name, 30)));
  op.type = *type;
  op.label = j.value("label", "");
  op.async = j.value("async", false);
  op.bytes = u64(j, "bytes", where);
  if (op.type == OpType::compute) {
    if (!j.contains("us") || !j.at("us").is_number() || j.at("us").get<double>() < 0)
      throw UsageError(fmt::format("{}: compute needs \"us\" >= 0 (microseconds)", where));
    op.us = j.at("us").get<double>();
  }
  if (j.contains("kind")) op.kind = parse_kind(j.at("kind").get<std::string>(), where);
  if (collective(op.type)) {
    const std::string g = j.value("group", "");
    const auto it = groups.find(g);
    if (it == groups.end())
      throw UsageError(fmt::format("{}: {} names group '{}', which the trace's \"groups\" do not define", where,
                                   to_string(op.type), cut_for_error(g, 30)));
    op.group = it->second;
    if (!j.contains("kind")) op.kind = t.groups[static_cast<size_t>(op.group)].kind;
  }
  if (op.type == OpType::send || op.type == OpType::sendrecv) op.peer = rank_field(j, "peer", t.world, where);
  if (op.type == OpType::recv || op.type == OpType::sendrecv) {
    op.from = rank_field(j, "from", t.world, where);
    op.recv_bytes = u64(j, "recv_bytes", where);
    if (op.type == OpType::recv && !op.recv_bytes) op.recv_bytes = op.bytes, op.bytes = 0;
  }
  if (op.type == OpType::send || op.type == OpType::recv || op.type == OpType::sendrecv)
    if (!j.contains("kind")) op.kind = GroupKind::pp;
  if (op.type == OpType::all_to_all_v) {
    if (j.contains("split_bytes")) op.split_bytes = j.at("split_bytes").get<std::vector<uint64_t>>();
    op.tokens = u64(j, "tokens", where);
    op.token_bytes = u64(j, "token_bytes", where);
    op.route_key = static_cast<uint32_t>(u64(j, "route_key", where));
    const size_t members = t.groups[static_cast<size_t>(op.group)].ranks.size();
    if (op.split_bytes.empty() == (op.tokens == 0))
      throw UsageError(
          fmt::format("{}: all_to_all_v needs either \"split_bytes\" (bytes to each member) or "
                      "\"tokens\" with \"token_bytes\" (routed by the trace's \"routing\")",
                      where));
    if (!op.split_bytes.empty() && op.split_bytes.size() != members)
      throw UsageError(fmt::format("{}: \"split_bytes\" has {} entries for a group of {}: one per member", where,
                                   op.split_bytes.size(), members));
    if (op.tokens && (t.routing.experts <= 0 || t.routing.topk <= 0))
      throw UsageError(fmt::format("{}: routed all_to_all_v needs \"routing\" with \"experts\" and \"topk\"", where));
  }
  return op;
}

}  // namespace

json to_json(const Trace& t) {
  json groups = json::array();
  for (const auto& g : t.groups) groups.push_back({{"name", g.name}, {"kind", to_string(g.kind)}, {"ranks", g.ranks}});
  json ranks = json::array();
  for (const auto& ops : t.ranks) {
    json list = json::array();
    for (const auto& op : ops) list.push_back(op_json(t, op));
    ranks.push_back(std::move(list));
  }
  json j{{"format", "railbench-workload-trace"},
         {"version", 1},
         {"world", t.world},
         {"dtype", t.dtype},
         {"groups", groups},
         {"ranks", ranks},
         {"meta", t.meta}};
  if (t.routing.experts > 0)
    j["routing"] = {{"distribution", t.routing.distribution},
                    {"experts", t.routing.experts},
                    {"topk", t.routing.topk},
                    {"seed", t.routing.seed}};
  return j;
}

Trace trace_from_json(const json& j, const std::string& where) {
  if (!j.is_object() || j.value("format", "") != "railbench-workload-trace")
    throw UsageError(
        fmt::format("{}: not a workload trace (\"format\": \"railbench-workload-trace\" missing): "
                    "write one with railbench workload --emit-trace",
                    where));
  if (j.value("version", 0) != 1)
    throw UsageError(
        fmt::format("{}: trace version {} is not 1, the one this railbench reads", where, j.value("version", 0)));
  Trace t;
  t.world = static_cast<int>(u64(j, "world", where));
  if (t.world < 1) throw UsageError(fmt::format("{}: \"world\" must be at least 1", where));
  t.dtype = j.value("dtype", "bf16");
  t.meta = j.value("meta", json::object());
  if (j.contains("routing")) {
    const auto& r = j.at("routing");
    t.routing.distribution = r.value("distribution", "uniform");
    t.routing.experts = r.value("experts", 0);
    t.routing.topk = r.value("topk", 0);
    t.routing.seed = r.value("seed", uint64_t{1});
  }
  std::map<std::string, int> names;
  for (const auto& g : j.value("groups", json::array())) {
    GroupDef def;
    def.name = g.value("name", "");
    const std::string gw = fmt::format("{}: group '{}'", where, cut_for_error(def.name, 30));
    def.kind = parse_kind(g.value("kind", "dp"), gw);
    def.ranks = g.value("ranks", std::vector<int>{});
    if (def.name.empty() || names.count(def.name))
      throw UsageError(fmt::format("{}: every group needs a unique \"name\"", gw));
    if (def.ranks.size() < 2) throw UsageError(fmt::format("{}: a group needs at least 2 ranks", gw));
    for (int r : def.ranks)
      if (r < 0 || r >= t.world)
        throw UsageError(
            fmt::format("{}: rank {} is outside the trace's world of {} (ranks 0..{})", gw, r, t.world, t.world - 1));
    std::vector<int> sorted = def.ranks;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      throw UsageError(fmt::format("{}: a rank appears twice", gw));
    names[def.name] = static_cast<int>(t.groups.size());
    t.groups.push_back(std::move(def));
  }
  const json& ranks = j.value("ranks", json::array());
  if (!ranks.is_array() || static_cast<int>(ranks.size()) != t.world)
    throw UsageError(fmt::format("{}: \"ranks\" must list {} op lists, one per rank of the world", where, t.world));
  for (int r = 0; r < t.world; ++r) {
    std::vector<Op> ops;
    size_t i = 0;
    for (const auto& o : ranks[static_cast<size_t>(r)])
      ops.push_back(op_from_json(o, t, names, fmt::format("{}: rank {} op {}", where, r, i++)));
    t.ranks.push_back(std::move(ops));
  }
  check_trace(t);
  return t;
}

}  // namespace railbench::workload
