// PyTorch execution traces (torch.profiler.ExecutionTraceObserver's JSON): "nodes" in
// execution order (by id), a collective as a record_param_comms node whose inputs hold
// its tensor, request id, process group (name, description), peer, collective name and
// split sizes; the groups in the process_group:init node's input (or the trace's
// "pg_config" / "distributedInfo"). PARAM's own ET parser reads them the same way.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "collectives/workload/formats/formats.h"
#include "lib/core/errors.h"

namespace railbench::workload::formats {

namespace {

using nlohmann::json;

const json& io(const json& node, const char* which, const char* field) {
  static const json empty = json::array();
  if (!node.contains(which) || !node.at(which).is_object() || !node.at(which).contains(field)) return empty;
  return node.at(which).at(field);
}

bool is_tensor_type(const json& type) {
  return type.is_string() && (type.get<std::string>().rfind("Tensor", 0) == 0 ||
                              type.get<std::string>().rfind("GenericList[Tensor", 0) == 0);
}

// Bytes of a tensor value ([id, storage, offset, numel, elem_bytes, device]) or a list of
// them, the element size from the value or else from its type ("Tensor(c10::BFloat16)").
uint64_t tensor_bytes(const json& value, const json& type, const std::string& where) {
  if (value.is_array() && !value.empty() && value[0].is_array()) {
    uint64_t sum = 0;
    for (const auto& v : value) sum += tensor_bytes(v, type, where);
    return sum;
  }
  if (!value.is_array() || value.size() < 4 || !value[3].is_number_integer())
    throw UsageError(
        fmt::format("{}: \"inputs\"[0] is not a tensor [id, storage, offset, numel, elem_bytes, device]", where));
  uint64_t esz = value.size() > 4 && value[4].is_number_integer() ? value[4].get<uint64_t>() : 0;
  std::string t = type.is_string() ? type.get<std::string>() : "";
  if (const auto p = t.rfind('('); p != std::string::npos) t = t.substr(p + 1, t.find(')', p) - p - 1);
  if (!esz) esz = dtype_bytes(t);
  if (!esz) throw UsageError(fmt::format("{}: the tensor's type '{}' has no size railbench knows", where, t));
  return value[3].get<uint64_t>() * esz;
}

std::string dtype_of(const json& type) {
  std::string t = type.is_string() ? type.get<std::string>() : "";
  if (const auto p = t.rfind('('); p != std::string::npos) t = t.substr(p + 1, t.find(')', p) - p - 1);
  return executor_dtype(t);
}

// The process groups, wherever this trace holds them.
void read_groups(const json& j, const std::vector<const json*>& nodes, RankTrace& out) {
  for (const json* n : nodes)
    if (n->value("name", "").find("process_group:init") != std::string::npos) {
      const json& v = io(*n, "inputs", "values");
      if (!v.empty() && v[0].is_string())
        out.pgs = parse_pg_config(v[0].get<std::string>(), fmt::format("{}: node {}", out.file, n->value("id", 0)));
    }
  const json* cfg = j.contains("pg_config") ? &j.at("pg_config") : nullptr;
  if (j.contains("distributedInfo") && j.at("distributedInfo").contains("pg_config"))
    cfg = &j.at("distributedInfo").at("pg_config");
  if (out.pgs.empty() && cfg) out.pgs = parse_pg_config(cfg->dump(), out.file + ": pg_config");
}

struct Comm {
  std::string name;
  int64_t req = -1;
  std::string pg;
  int peer = -1;  // in the group
  const json* values = nullptr;
  const json* types = nullptr;
  size_t shift = 0;  // wait and barrier carry no tensor: their inputs start one later
};

Comm comm_of(const json& node) {
  Comm c;
  c.values = &io(node, "inputs", "values");
  c.types = &io(node, "inputs", "types");
  c.shift = !c.types->empty() && is_tensor_type((*c.types)[0]) ? 0 : 1;
  const json& v = *c.values;
  auto at = [&](size_t i) -> const json& {
    static const json null;
    return i >= c.shift && i - c.shift < v.size() ? v[i - c.shift] : null;
  };
  if (at(4).is_string()) c.name = at(4).get<std::string>();
  if (at(1).is_number_integer()) c.req = at(1).get<int64_t>();
  const json& pg = at(2);
  c.pg = pg.is_array() && !pg.empty() ? (pg[0].is_string() ? pg[0].get<std::string>() : pg[0].dump())
         : pg.is_string()             ? pg.get<std::string>()
                                      : pg.dump();
  if (at(3).is_number_integer()) c.peer = at(3).get<int>();
  return c;
}

}  // namespace

namespace {

// A record_param_comms node as an item; false when skipped (counted).
bool comm_item(const json& node, const Comm& c, const std::set<int64_t>& waited, RankTrace& out, Item& it) {
  const std::string where = fmt::format("{}: node {}", out.file, node.value("id", 0));
  const auto name = comm_name(c.name);
  if (!name) return ++out.skipped[fmt::format("'{}' (no such algorithm in the executor)", c.name)], false;
  if (name->op == OpType::compute) return false;  // init
  it.kind = name->kind;
  it.op = name->op;
  it.node = node.value("id", uint64_t{0});
  it.label = c.name;
  if (it.kind == ItemKind::wait) return true;
  const json& in_types = *c.types;
  const uint64_t in = tensor_bytes((*c.values)[0], in_types[0], where);
  const json& ov = io(node, "outputs", "values");
  const uint64_t outb = ov.empty() ? in : tensor_bytes(ov[0], io(node, "outputs", "types")[0], where);
  it.bytes = it.op == OpType::all_gather || it.kind == ItemKind::recv ? outb : in;
  if (out.dtype.empty()) out.dtype = dtype_of(in_types[0]);
  it.pg = c.pg;
  it.peer = c.peer;  // resolved to a global rank once the groups are known
  if (it.op == OpType::all_to_all_v && c.values->size() > 5 && (*c.values)[5].is_array() && !(*c.values)[5].empty()) {
    const uint64_t numel = (*c.values)[0][3].get<uint64_t>();
    for (const auto& s : (*c.values)[5]) it.split_bytes.push_back(numel ? s.get<uint64_t>() * (in / numel) : 0);
  }
  it.async = it.kind == ItemKind::collective && waited.count(c.req);
  return true;
}

// A compute node: one with a time ("dur", microseconds) whose parent has none (its
// children's time is inside its own).
bool compute_item(const json& node, const std::set<uint64_t>& timed, Item& it) {
  if (!node.contains("dur") || !node.at("dur").is_number()) return false;
  const uint64_t parent = node.value("ctrl_deps", node.value("parent", uint64_t{0}));
  if (timed.count(parent)) return false;
  it.kind = ItemKind::compute;
  it.us = node.at("dur").get<double>();
  it.node = node.value("id", uint64_t{0});
  it.label = node.value("name", "");
  return true;
}

void resolve_peers(RankTrace& out) {
  for (Item& it : out.items) {
    if (it.kind != ItemKind::send && it.kind != ItemKind::recv) continue;
    const auto pg =
        std::find_if(out.pgs.begin(), out.pgs.end(), [&](const ProcessGroup& p) { return p.name == it.pg; });
    if (pg == out.pgs.end() || pg->ranks.empty()) continue;  // the default group: its ranks are the global ones
    if (it.peer < 0 || it.peer >= static_cast<int>(pg->ranks.size()))
      throw UsageError(fmt::format("{}: node {}: the peer {} is outside process group '{}' of {} ranks", out.file,
                                   it.node, it.peer, it.pg, pg->ranks.size()));
    it.peer = pg->ranks[static_cast<size_t>(it.peer)];
  }
}

}  // namespace

RankTrace read_pytorch(const json& j, const std::string& file, int rank) {
  RankTrace out;
  out.file = file;
  out.format = "pytorch";
  out.fields = FieldNames{"inputs", "inputs (process group)", "inputs (peer)", "inputs (peer)"};
  if (!j.is_object() || !j.contains("nodes") || !j.at("nodes").is_array())
    throw UsageError(fmt::format("{}: a PyTorch execution trace is a JSON object with \"nodes\"", file));
  std::vector<const json*> nodes;
  for (const auto& n : j.at("nodes")) nodes.push_back(&n);
  std::stable_sort(nodes.begin(), nodes.end(),
                   [](const json* a, const json* b) { return a->value("id", 0) < b->value("id", 0); });
  read_groups(j, nodes, out);
  std::set<int64_t> waited;
  std::set<uint64_t> timed;
  for (const json* n : nodes) {
    if (n->value("name", "") == "record_param_comms") {
      const Comm c = comm_of(*n);
      if (comm_name(c.name) && comm_name(c.name)->kind == ItemKind::wait) waited.insert(c.req);
    } else if (n->contains("dur")) {
      timed.insert(n->value("id", uint64_t{0}));
    }
  }
  for (const json* n : nodes) {
    Item it;
    const bool comms = n->value("name", "") == "record_param_comms";
    if (comms ? comm_item(*n, comm_of(*n), waited, out, it) : compute_item(*n, timed, it))
      out.items.push_back(std::move(it));
  }
  // Older traces (PyTorch 2.1-2.2) name a collective's group by its backend's object id:
  // pg_config's "backend_id", not its "pg_name".
  for (Item& it : out.items) {
    if (it.pg.empty() || std::any_of(out.pgs.begin(), out.pgs.end(), [&](const auto& p) { return p.name == it.pg; }))
      continue;
    const auto by_id =
        std::find_if(out.pgs.begin(), out.pgs.end(), [&](const ProcessGroup& p) { return p.backend_id == it.pg; });
    if (by_id != out.pgs.end()) it.pg = by_id->name;
  }
  resolve_peers(out);
  (void)rank;
  return out;
}

}  // namespace railbench::workload::formats

namespace railbench::workload::formats {

namespace {

const char* et_type(const std::string& dtype) {
  return dtype == "f32" ? "Tensor(float)" : dtype == "f16" ? "Tensor(c10::Half)" : "Tensor(c10::BFloat16)";
}

// A tensor value of `bytes`: elements of the trace's dtype, or single bytes where the
// size is not whole elements (the value's elem_bytes says which).
json tensor(uint64_t id, uint64_t bytes, const std::string& dtype) {
  uint64_t esz = dtype_bytes(dtype);
  if (!esz || bytes % esz) esz = 1;
  return json::array({id, id, 0, bytes / esz, esz, "cuda:0"});
}

json et_node(uint64_t id, const std::string& name, json values, json types, json outputs, json out_types) {
  json shapes = json::array();
  for (size_t i = 0; i < values.size(); ++i) shapes.push_back(json::array());
  json out_shapes = json::array();
  for (size_t i = 0; i < outputs.size(); ++i) out_shapes.push_back(json::array());
  return json{{"id", id},
              {"name", name},
              {"ctrl_deps", 1},
              {"inputs", {{"values", std::move(values)}, {"shapes", shapes}, {"types", std::move(types)}}},
              {"outputs", {{"values", std::move(outputs)}, {"shapes", out_shapes}, {"types", std::move(out_types)}}},
              {"attrs", json::array()}};
}

const char* et_name(OpType t) {
  return t == OpType::all_reduce       ? "allreduce"
         : t == OpType::all_gather     ? "_allgather_base"
         : t == OpType::reduce_scatter ? "_reduce_scatter_base"
         : t == OpType::all_to_all_v   ? "all_to_allv"
         : t == OpType::send           ? "send"
                                       : "recv";
}

// One record_param_comms node: a collective on its group, or a send / receive on the
// default group (peer: its global rank).
json comm_node(const Trace& t, uint64_t id, int64_t req, OpType type, int group, uint64_t in, uint64_t out, int peer,
               const std::vector<uint64_t>& split) {
  const std::string dtype = t.dtype;
  json pg = json::array({"default_pg", "default_pg"});
  int first = 0, n = t.world;
  if (group >= 0) {
    const GroupDef& g = t.groups[static_cast<size_t>(group)];
    pg = json::array({std::to_string(group), g.name});
    first = g.ranks[0], n = static_cast<int>(g.ranks.size());
  }
  json split_el = json::array();
  const uint64_t esz = tensor(0, in, dtype)[4].get<uint64_t>();
  for (uint64_t b : split) split_el.push_back(b / esz);
  json values =
      json::array({tensor(id, in, dtype), req, pg, std::max(peer, 0), et_name(type), split_el, split_el, first, 1, n});
  json types = json::array({et_type(dtype), "Int", "Tuple[String,String]", "Int", "String", "GenericList[Int]",
                            "GenericList[Int]", "Int", "Int", "Int"});
  return et_node(id, "record_param_comms", std::move(values), std::move(types),
                 json::array({tensor(id + 1000000, out, dtype)}), json::array({et_type(dtype)}));
}

json wait_node(uint64_t id, int64_t req) {
  json values =
      json::array({req, json::array({"default_pg", "default_pg"}), 0, "wait", json::array(), json::array(), 0, 1, 0});
  json types = json::array(
      {"Int", "Tuple[String,String]", "Int", "String", "GenericList[]", "GenericList[]", "Int", "Int", "Int"});
  return et_node(id, "record_param_comms", std::move(values), std::move(types), json::array(), json::array());
}

}  // namespace

json write_pytorch(const Trace& t, int rank) {
  json nodes = json::array();
  nodes.push_back(et_node(1, "[pytorch|profiler|execution_trace|process]", json::array(), json::array(), json::array(),
                          json::array()));
  nodes.back()["ctrl_deps"] = 0;
  nodes.push_back(et_node(2, "## process_group:init ##", json::array({pg_config(t).dump()}), json::array({"String"}),
                          json::array(), json::array()));
  uint64_t id = 3;
  int64_t req = 0;
  std::vector<int64_t> pending;
  for (const Op& op : t.ranks[static_cast<size_t>(rank)]) {
    if (op.tokens)
      throw UsageError("a routed all_to_all_v cannot be written as a PyTorch ET: write railbench's own format");
    if (op.type == OpType::wait) {
      for (int64_t r : pending) nodes.push_back(wait_node(id++, r));
      pending.clear();
    } else if (op.type == OpType::compute) {
      nodes.push_back(et_node(id++, op.label.empty() ? "railbench::compute" : op.label, json::array(), json::array(),
                              json::array(), json::array()));
      nodes.back()["dur"] = op.us;
    } else if (op.group >= 0) {
      const uint64_t n = t.groups[static_cast<size_t>(op.group)].ranks.size();
      uint64_t bytes = op.bytes;
      for (uint64_t b : op.split_bytes) bytes += b;
      const uint64_t in = op.type == OpType::all_gather ? bytes / n : bytes;
      const uint64_t out = op.type == OpType::reduce_scatter ? bytes / n : bytes;
      nodes.push_back(comm_node(t, id++, req, op.type, op.group, in, out, 0, op.split_bytes));
      if (op.async) pending.push_back(req);
      ++req;
    } else {
      if (op.type != OpType::recv)
        nodes.push_back(comm_node(t, id++, req++, OpType::send, -1, op.bytes, op.bytes, op.peer, {}));
      if (op.type != OpType::send)
        nodes.push_back(comm_node(t, id++, req++, OpType::recv, -1, op.recv_bytes, op.recv_bytes, op.from, {}));
    }
  }
  return json{{"schema", "1.1.0-chakra.0.0.4"}, {"pid", rank}, {"time", ""}, {"start_ts", 0}, {"finish_ts", 0},
              {"nodes", std::move(nodes)}};
}

}  // namespace railbench::workload::formats
