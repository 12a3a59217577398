// PARAM's comms trace, its "basic" format (facebookresearch/param, commsTraceParser): one
// JSON list per rank of records with "comms" (or "compute"), sizes in elements of
// "dtype", the process group by "pg_id" and "global_ranks", an async op's "req" named
// again by a later "wait".
#include <set>

#include <fmt/format.h>

#include "collectives/workload/formats/formats.h"
#include "lib/core/errors.h"

namespace railbench::workload::formats {

namespace {

using nlohmann::json;

uint64_t count(const json& rec, const char* key, const std::string& where) {
  if (!rec.contains(key) || !rec.at(key).is_number_integer() || rec.at(key).get<int64_t>() < 0)
    throw UsageError(fmt::format("{}: \"{}\" must be a count of elements (0 or more)", where, key));
  return rec.at(key).get<uint64_t>();
}

// The record's bytes per railbench's op: all-reduce and reduce-scatter their input,
// all-gather its output, a receive what arrives.
void sizes(const json& rec, Item& it, const std::string& where) {
  const std::string dtype = rec.value("dtype", "");
  const size_t esz = dtype_bytes(dtype);
  if (!esz)
    throw UsageError(
        fmt::format("{}: \"dtype\" '{}' is none railbench knows: use float, half, bfloat16, double, "
                    "int, long, byte, char or bool",
                    where, dtype));
  const bool out = it.op == OpType::all_gather || it.kind == ItemKind::recv;
  it.bytes = count(rec, out ? "out_msg_size" : "in_msg_size", where) * esz;
  if (it.op == OpType::all_to_all_v && rec.contains("in_split") && rec.at("in_split").is_array())
    for (const auto& s : rec.at("in_split")) it.split_bytes.push_back(s.get<uint64_t>() * esz);
}

int rank_of(const json& rec, const char* key, const std::string& where) {
  if (!rec.contains(key) || !rec.at(key).is_number_integer())
    throw UsageError(fmt::format("{}: \"{}\" is missing: a send or receive needs its peer's global rank", where, key));
  return rec.at(key).get<int>();
}

std::string label_of(const json& rec, const std::string& comms) {
  if (rec.contains("markers") && rec.at("markers").is_array() && !rec.at("markers").empty() &&
      rec.at("markers")[0].is_string())
    return rec.at("markers")[0].get<std::string>();
  return comms;
}

// One record as an item; false when it is skipped (counted).
bool record_item(const json& rec, size_t i, RankTrace& out, const std::set<int64_t>& waited) {
  const std::string where = fmt::format("{}: record {}", out.file, i);
  if (!rec.is_object()) throw UsageError(fmt::format("{}: expected an object with \"comms\"", where));
  if (rec.contains("compute")) return ++out.skipped["compute records (PARAM kernels carry no time)"], false;
  if (!rec.contains("comms") || !rec.at("comms").is_string())
    throw UsageError(fmt::format("{}: neither \"comms\" nor \"compute\": not a PARAM basic trace record", where));
  const std::string comms = rec.at("comms").get<std::string>();
  const auto name = comm_name(comms);
  if (!name) return ++out.skipped[fmt::format("'{}' (no such algorithm in the executor)", comms)], false;
  const std::string pg = std::to_string(rec.value("pg_id", 0));
  if ((rec.contains("global_ranks") && rec.at("global_ranks").is_array()) || name->op == OpType::compute)
    out.pgs.push_back(ProcessGroup{pg, rec.value("pg_desc", ""), rec.value("global_ranks", std::vector<int>{})});
  if (name->op == OpType::compute) return false;  // init: the group above
  Item it;
  it.kind = name->kind;
  it.op = name->op;
  it.node = i;
  it.label = label_of(rec, comms);
  if (it.kind == ItemKind::wait) return out.items.push_back(it), true;
  sizes(rec, it, where);
  if (out.dtype.empty()) out.dtype = executor_dtype(rec.value("dtype", ""));
  const bool batch = rec.contains("use_batch") && rec.at("use_batch").is_boolean() && rec.at("use_batch").get<bool>();
  it.pairable = batch || comms.rfind("i", 0) == 0;
  if (it.kind == ItemKind::send) it.peer = rank_of(rec, "dst_rank", where);
  if (it.kind == ItemKind::recv) it.peer = rank_of(rec, "src_rank", where);
  if (it.kind == ItemKind::collective) {
    it.pg = pg;
    it.async = rec.contains("req") && rec.at("req").is_number_integer() && waited.count(rec.at("req").get<int64_t>());
  }
  out.items.push_back(std::move(it));
  return true;
}

}  // namespace

RankTrace read_param(const json& j, const std::string& file, int rank) {
  RankTrace out;
  out.file = file;
  out.format = "param";
  out.fields = FieldNames{"in_msg_size", "pg_id", "dst_rank", "src_rank"};
  if (!j.is_array()) throw UsageError(fmt::format("{}: a PARAM basic trace is a JSON list of records", file));
  std::set<int64_t> waited;
  for (const auto& rec : j)
    if (rec.is_object() && rec.value("comms", "") == "wait" && rec.contains("req") && rec.at("req").is_number_integer())
      waited.insert(rec.at("req").get<int64_t>());
  for (size_t i = 0; i < j.size(); ++i) record_item(j[i], i, out, waited);
  add_default_group(out, "0", "default_pg");  // records without "pg_id" or its init
  (void)rank;                                 // PARAM names peers by their global rank: nothing is relative to this one
  return out;
}

namespace {

const char* param_dtype(const std::string& dtype) {
  return dtype == "f32" ? "float" : dtype == "f16" ? "half" : "bfloat16";
}

// Sizes in elements of the trace's dtype, or in bytes where a size is not whole elements.
struct Units {
  uint64_t esz;
  const char* dtype;
};

Units units(const Trace& t, uint64_t bytes) {
  const char* name = param_dtype(t.dtype);
  const uint64_t esz = dtype_bytes(name);
  return bytes % esz ? Units{1, "byte"} : Units{esz, name};
}

json sized(const char* comms, uint64_t in_bytes, uint64_t out_bytes, Units u) {
  return json{
      {"comms", comms}, {"in_msg_size", in_bytes / u.esz}, {"out_msg_size", out_bytes / u.esz}, {"dtype", u.dtype}};
}

json collective_record(const Trace& t, const Op& op) {
  const GroupDef& g = t.groups[static_cast<size_t>(op.group)];
  const uint64_t n = g.ranks.size();
  uint64_t bytes = op.bytes;
  for (uint64_t b : op.split_bytes) bytes += b;
  const Units u = units(t, bytes);
  json r = op.type == OpType::all_reduce       ? sized("all_reduce", bytes, bytes, u)
           : op.type == OpType::all_gather     ? sized("all_gather", bytes / n, bytes, u)
           : op.type == OpType::reduce_scatter ? sized("reduce_scatter", bytes, bytes / n, u)
                                               : sized("all_to_allv", bytes, bytes, u);
  if (op.type == OpType::all_to_all_v) {
    json split = json::array();
    for (uint64_t b : op.split_bytes) split.push_back(b / u.esz);
    r["in_split"] = split;
    r["out_split"] = split;
  }
  r["pg_id"] = op.group;
  r["global_ranks"] = g.ranks;
  r["world_size"] = n;
  return r;
}

}  // namespace

json write_param(const Trace& t, int rank) {
  json out = json::array();
  for (size_t g = 0; g < t.groups.size(); ++g)
    out.push_back({{"comms", "init"},
                   {"pg_id", g},
                   {"pg_desc", t.groups[g].name},
                   {"global_ranks", t.groups[g].ranks},
                   {"world_size", t.groups[g].ranks.size()},
                   {"req", -1}});
  int64_t req = 0;
  std::vector<int64_t> pending;
  for (const Op& op : t.ranks[static_cast<size_t>(rank)]) {
    if (op.tokens) throw UsageError("a routed all_to_all_v cannot be written as PARAM: write railbench's own format");
    if (op.type == OpType::wait) {
      for (int64_t r : pending) out.push_back({{"comms", "wait"}, {"req", r}});
      pending.clear();
      continue;
    }
    std::vector<json> recs;
    if (op.group >= 0) recs.push_back(collective_record(t, op));
    if (op.type == OpType::send || op.type == OpType::sendrecv) {
      recs.push_back(sized("send", op.bytes, op.bytes, units(t, op.bytes)));
      recs.back().update({{"src_rank", rank}, {"dst_rank", op.peer}, {"use_batch", op.type == OpType::sendrecv}});
    }
    if (op.type == OpType::recv || op.type == OpType::sendrecv) {
      recs.push_back(sized("recv", op.recv_bytes, op.recv_bytes, units(t, op.recv_bytes)));
      recs.back().update({{"src_rank", op.from}, {"dst_rank", rank}, {"use_batch", op.type == OpType::sendrecv}});
    }
    for (json& r : recs) {
      r["req"] = req;
      if (!op.label.empty()) r["markers"] = json::array({op.label});
      if (op.async) pending.push_back(req);
      ++req;
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace railbench::workload::formats
