// Chakra execution traces (MLCommons Chakra, et_def.proto): a stream of varint32-length-
// prefixed protobuf messages, one GlobalMetadata and then Node messages, read and written
// from the schema's field numbers with the wire reader (proto_wire.h), no generated code.
#include <bit>
#include <cmath>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "collectives/workload/formats/formats.h"
#include "collectives/workload/formats/proto_wire.h"
#include "lib/core/errors.h"

namespace railbench::workload::formats {

namespace {

// et_def.proto's numbers.
enum NodeType : uint64_t { kMetadata = 1, kComp = 4, kSend = 5, kRecv = 6, kColl = 7 };
constexpr const char* kCollNames[] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};
constexpr const char* kNodeNames[] = {"INVALID_NODE", "METADATA_NODE",  "MEM_LOAD_NODE",  "MEM_STORE_NODE",
                                      "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
                                      "STORAGE_NODE", "BATCH_NODE",     "CHECKPOINT_NODE"};
// The attributes railbench reads; any other is counted as skipped.
const std::set<std::string> kRead = {"comm_type", "comm_size", "pg_name",  "comm_src",
                                     "comm_dst",  "comm_tag",  "is_cpu_op"};

struct Attr {
  bool is_int = false, is_string = false;
  int64_t i = 0;
  std::string s;
};

struct Node {
  uint64_t id = 0, type = 0, duration = 0;
  std::string name, input_values;
  std::vector<uint64_t> deps, ctrl;  // data_deps, ctrl_deps
  std::map<std::string, Attr> attrs;
};

int64_t zigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// AttributeProto: the name and, of the oneof, the integer, bool, real and string values
// (lists are not read).
std::pair<std::string, Attr> read_attr(std::string_view bytes, const std::string& where) {
  wire::Reader r(bytes, where);
  wire::Field f;
  std::string name;
  Attr a;
  while (r.next(f)) {
    const uint32_t n = f.number;
    if (n == 1) {
      name = std::string(f.bytes);
    } else if (n == 3 || n == 5) {  // double, float
      const double d = n == 3 ? std::bit_cast<double>(f.value) : std::bit_cast<float>(static_cast<uint32_t>(f.value));
      a.is_int = std::isfinite(d), a.i = static_cast<int64_t>(std::llround(d));
    } else if (n == 15 || n == 17) {  // sint32, sint64
      a.is_int = true, a.i = zigzag(f.value);
    } else if (n >= 7 && n <= 27 && n % 2 == 1) {  // int32 ... sfixed64, bool
      a.is_int = true, a.i = static_cast<int64_t>(f.value);
    } else if (n == 29 || n == 31) {
      a.is_string = true, a.s = std::string(f.bytes);
    }
  }
  return {name, a};
}

Node read_node(std::string_view bytes, const std::string& where, std::map<std::string, uint64_t>& skipped) {
  wire::Reader r(bytes, where);
  wire::Field f;
  Node n;
  while (r.next(f)) {
    switch (f.number) {
      case 1: n.id = f.value; break;
      case 2: n.name = std::string(f.bytes); break;
      case 3: n.type = f.value; break;
      case 4: wire::repeated_varints(f, n.ctrl, where); break;
      case 5: wire::repeated_varints(f, n.deps, where); break;
      case 7: n.duration = f.value; break;
      case 8: {  // IOInfo: values
        wire::Reader io(f.bytes, where);
        wire::Field v;
        while (io.next(v))
          if (v.number == 1) n.input_values = std::string(v.bytes);
        break;
      }
      case 10: {
        auto [name, a] = read_attr(f.bytes, where);
        if (!kRead.count(name)) ++skipped[fmt::format("attribute '{}' (not read)", name)];
        n.attrs[name] = std::move(a);
        break;
      }
      case 6:
      case 9: break;  // start time, outputs: not needed
      default: ++skipped[fmt::format("node field {} (a newer schema's)", f.number)];
    }
  }
  return n;
}

std::string node_type_name(uint64_t t) {
  return t < std::size(kNodeNames) ? kNodeNames[t] : fmt::format("node type {}", t);
}

// The integer attribute `name` of a node that needs it.
int64_t need_int(const Node& n, const char* name, const std::string& file) {
  const auto it = n.attrs.find(name);
  if (it == n.attrs.end() || !it->second.is_int)
    throw UsageError(fmt::format("{}: node {}: {} without \"{}\": railbench needs it to replay the node", file, n.id,
                                 node_type_name(n.type), name));
  if (it->second.i < 0)
    throw UsageError(fmt::format("{}: node {}: \"{}\" is {}, below 0", file, n.id, name, it->second.i));
  return it->second.i;
}

// A communication node as an item; false when it is a collective the executor has no
// algorithm for (counted, kept in the graph as an empty step so the order holds).
bool comm_item(const Node& n, Item& it, RankTrace& out) {
  it.bytes = static_cast<uint64_t>(need_int(n, "comm_size", out.file));
  if (n.type == kSend || n.type == kRecv) {
    it.kind = n.type == kSend ? ItemKind::send : ItemKind::recv;
    it.peer = static_cast<int>(need_int(n, n.type == kSend ? "comm_dst" : "comm_src", out.file));
    return true;
  }
  const int64_t ct = need_int(n, "comm_type", out.file);
  static const std::map<int64_t, OpType> ops = {{0, OpType::all_reduce},
                                                {2, OpType::all_gather},
                                                {6, OpType::all_to_all_v},
                                                {7, OpType::reduce_scatter},
                                                {8, OpType::reduce_scatter}};
  const auto op = ops.find(ct);
  if (op == ops.end()) {
    ++out.skipped[fmt::format(
        "COMM_COLL_NODE {} (no such algorithm in the executor)",
        ct < static_cast<int64_t>(std::size(kCollNames)) ? kCollNames[ct] : fmt::format("comm_type {}", ct))];
    return false;
  }
  it.kind = ItemKind::collective;
  it.op = op->second;
  const auto pg = n.attrs.find("pg_name");
  it.pg = pg != n.attrs.end() && pg->second.is_string ? pg->second.s : "world";
  return true;
}

// A node as a graph node (an empty compute step for what is not replayed), or nothing for
// metadata.
std::optional<GraphNode> graph_node(const Node& n, RankTrace& out) {
  GraphNode g;
  g.deps = n.deps;
  g.ctrl = n.ctrl;
  g.item.node = n.id;
  g.item.label = n.name;
  if (n.type == kMetadata) {
    if (n.name.find("process_group:init") != std::string::npos) {
      std::string text = n.input_values;
      for (const auto& [name, a] : n.attrs)
        if (a.is_string && a.s.find("pg_name") != std::string::npos) text = a.s;
      out.pgs = parse_pg_config(text, fmt::format("{}: node {}", out.file, n.id));
    } else {
      ++out.skipped["METADATA_NODE (not process_group:init)"];
    }
    return std::nullopt;
  }
  if (n.type == kComp) {
    const auto cpu = n.attrs.find("is_cpu_op");
    if (cpu != n.attrs.end() && cpu->second.i)
      ++out.skipped["COMP_NODE on the CPU (is_cpu_op): not timed"];
    else
      g.item.us = static_cast<double>(n.duration);
    return g;
  }
  if (n.type == kSend || n.type == kRecv || n.type == kColl) {
    // PyTorch's CPU-side record of a collective (c10d::broadcast_ and the like, is_cpu_op)
    // carries no comm_size: the node of its GPU kernel (ncclKernel_..., is_cpu_op 0) holds
    // the type and size, and that one is replayed. Kept as an empty step for the order.
    const auto cpu = n.attrs.find("is_cpu_op");
    if (cpu != n.attrs.end() && cpu->second.i && n.attrs.find("comm_size") == n.attrs.end()) {
      ++out.skipped[node_type_name(n.type) +
                    " on the CPU (is_cpu_op) without comm_size: its GPU kernel's node is replayed"];
      return g;
    }
    if (!comm_item(n, g.item, out)) {
      g.item = Item{};  // an empty step
      g.item.node = n.id;
    }
    return g;
  }
  ++out.skipped[node_type_name(n.type) + " (not replayed)"];
  return g;  // kept as an empty step: its dependents still wait for what it waited for
}

}  // namespace

RankTrace read_chakra(std::string_view bytes, const std::string& file) {
  RankTrace out;
  out.file = file;
  out.format = "chakra";
  out.fields = FieldNames{"comm_size", "pg_name", "comm_dst", "comm_src"};
  wire::Reader stream(bytes, file);
  std::vector<GraphNode> nodes;
  for (bool first = true; !stream.done(); first = false) {
    const size_t at = stream.offset();
    const std::string_view msg = stream.take(stream.varint());
    if (first) continue;  // GlobalMetadata: the schema's version, nothing railbench needs
    const Node n = read_node(msg, fmt::format("{}: node at byte {}", file, at), out.skipped);
    if (auto g = graph_node(n, out)) nodes.push_back(std::move(*g));
  }
  size_t dropped = 0;
  out.items = issue_order(nodes, file, &dropped);
  if (dropped > 0) out.skipped["ctrl_deps edges that closed a cycle with data_deps (dropped)"] += dropped;
  add_default_group(out, "world", "world");  // collectives without "pg_name"
  return out;
}

}  // namespace railbench::workload::formats

namespace railbench::workload::formats {

namespace {

struct NodeOut {
  uint64_t id = 0, type = 0, duration = 0;
  std::string name, input_values;
  std::vector<uint64_t> deps;
  std::vector<std::string> attrs;
};

std::string attr_int(const char* name, int64_t v) {
  std::string a;
  wire::put_bytes_field(a, 1, name);
  wire::put_varint_field(a, 9, static_cast<uint64_t>(v));  // int64_val
  return a;
}

std::string attr_bool(const char* name, bool v) {
  std::string a;
  wire::put_bytes_field(a, 1, name);
  wire::put_varint_field(a, 27, v);  // bool_val
  return a;
}

std::string attr_string(const char* name, const std::string& v) {
  std::string a;
  wire::put_bytes_field(a, 1, name);
  wire::put_bytes_field(a, 29, v);  // string_val
  return a;
}

std::string encode(const NodeOut& n) {
  std::string m;
  wire::put_varint_field(m, 1, n.id);
  wire::put_bytes_field(m, 2, n.name);
  wire::put_varint_field(m, 3, n.type);
  if (!n.deps.empty()) {
    std::string packed;
    for (uint64_t d : n.deps) wire::put_varint(packed, d);
    wire::put_bytes_field(m, 5, packed);  // data_deps
  }
  if (n.duration) wire::put_varint_field(m, 7, n.duration);
  if (!n.input_values.empty()) {
    std::string io;
    wire::put_bytes_field(io, 1, n.input_values);
    wire::put_bytes_field(m, 8, io);
  }
  for (const auto& a : n.attrs) wire::put_bytes_field(m, 10, a);
  return m;
}

// The nodes of one op (a send/recv exchange is two).
std::vector<NodeOut> op_nodes(const Trace& t, int rank, size_t pc, uint64_t& id) {
  const Op& op = t.ranks[static_cast<size_t>(rank)][pc];
  if (op.tokens)
    throw UsageError(
        fmt::format("rank {} op {} is a routed all_to_all_v: a Chakra trace holds sizes, not routing: "
                    "write railbench's own format for it",
                    rank, pc));
  std::vector<NodeOut> out;
  const std::string label = op.label.empty() ? to_string(op.type) : op.label;
  auto comm = [&](uint64_t type, uint64_t bytes) {
    NodeOut n{id++,
              type,
              0,
              label,
              "",
              {},
              {attr_bool("is_cpu_op", false), attr_int("comm_size", static_cast<int64_t>(bytes))}};
    out.push_back(std::move(n));
    return &out.back();
  };
  if (op.type == OpType::compute) {
    out.push_back(NodeOut{
        id++, kComp, static_cast<uint64_t>(std::llround(op.us)), label, "", {}, {attr_bool("is_cpu_op", false)}});
  } else if (op.group >= 0) {
    uint64_t bytes = op.bytes;
    for (uint64_t b : op.split_bytes) bytes += b;
    const int64_t ct = op.type == OpType::all_reduce       ? 0
                       : op.type == OpType::all_gather     ? 2
                       : op.type == OpType::reduce_scatter ? 7
                                                           : 6;
    NodeOut* n = comm(kColl, bytes);
    n->attrs.push_back(attr_int("comm_type", ct));
    n->attrs.push_back(attr_string("pg_name", std::to_string(op.group)));
  }
  if (op.type == OpType::send || op.type == OpType::sendrecv)
    comm(kSend, op.bytes)->attrs.push_back(attr_int("comm_dst", op.peer));
  if (op.type == OpType::recv || op.type == OpType::sendrecv)
    comm(kRecv, op.recv_bytes)->attrs.push_back(attr_int("comm_src", op.from));
  return out;
}

}  // namespace

// Every node depends on the last synchronous ones before it; an async collective's
// dependents are the nodes after the next wait, so that the reader issues it async and
// waits for it where railbench's trace waited.
std::string write_chakra(const Trace& t, int rank) {
  std::string out, meta;
  wire::put_bytes_field(meta, 1, "0.0.4");
  wire::put_delimited(out, meta);
  NodeOut pg{0, kMetadata, 0, "process_group:init", "['" + pg_config(t).dump() + "']", {}, {}};
  wire::put_delimited(out, encode(pg));
  uint64_t id = 1;
  std::vector<uint64_t> last, pending;
  const auto& ops = t.ranks[static_cast<size_t>(rank)];
  for (size_t pc = 0; pc < ops.size(); ++pc) {
    if (ops[pc].type == OpType::wait) {
      last.insert(last.end(), pending.begin(), pending.end());
      pending.clear();
      continue;
    }
    std::vector<NodeOut> made = op_nodes(t, rank, pc, id);
    std::vector<uint64_t> ids;
    for (NodeOut& n : made) {
      n.deps = last;
      ids.push_back(n.id);
      wire::put_delimited(out, encode(n));
    }
    if (ops[pc].async)
      pending.insert(pending.end(), ids.begin(), ids.end());
    else
      last = ids;
  }
  return out;
}

}  // namespace railbench::workload::formats
