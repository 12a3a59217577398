// The step every outside format shares: one rank's dependency graph to an issue order,
// the ranks' items joined into a Trace, the refusals that name file, node and field, and
// --fold.
#include "collectives/workload/formats/import.h"

#include <algorithm>
#include <cctype>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::workload::formats {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

}  // namespace

GroupKind guess_kind(const ProcessGroup& pg, int world) {
  for (const std::string& s : {lower(pg.desc), lower(pg.name)}) {
    if (has(s, "edp") || has(s, "expert_data")) return GroupKind::edp;
    if (has(s, "tp") || has(s, "tensor")) return GroupKind::tp;
    if (has(s, "pp") || has(s, "pipe")) return GroupKind::pp;
    if (has(s, "ep") || has(s, "expert")) return GroupKind::ep;
    if (has(s, "dp") || has(s, "data")) return GroupKind::dp;
  }
  bool consecutive = pg.ranks.size() > 1;
  for (size_t i = 1; i < pg.ranks.size(); ++i) consecutive = consecutive && pg.ranks[i] == pg.ranks[i - 1] + 1;
  return consecutive && static_cast<int>(pg.ranks.size()) < world ? GroupKind::tp : GroupKind::dp;
}

size_t dtype_bytes(const std::string& dtype) {
  std::string s = lower(dtype);
  if (const auto c = s.rfind("::"); c != std::string::npos) s = s.substr(c + 2);
  if (s == "bfloat16" || s == "bf16" || s == "half" || s == "float16" || s == "f16" || s == "short") return 2;
  if (s == "float" || s == "float32" || s == "f32" || s == "int" || s == "int32") return 4;
  if (s == "double" || s == "float64" || s == "long" || s == "long int" || s == "int64") return 8;
  if (s == "byte" || s == "char" || s == "bool" || s == "unsigned char" || s == "signed char" || s == "uint8") return 1;
  return 0;
}

std::string executor_dtype(const std::string& dtype) {
  std::string s = lower(dtype);
  if (const auto c = s.rfind("::"); c != std::string::npos) s = s.substr(c + 2);
  if (s == "bfloat16" || s == "bf16") return "bf16";
  if (s == "half" || s == "float16" || s == "f16") return "f16";
  if (s == "float" || s == "float32" || s == "f32") return "f32";
  return "";
}

std::optional<CommName> comm_name(const std::string& name) {
  std::string s = lower(name);
  for (const char* cut : {"_coalesced", "_into_tensor", "_tensor", "_single", "_base"})
    if (const auto p = s.find(cut); p != std::string::npos) s.erase(p, std::string(cut).size());
  std::string bare;
  for (char c : s)
    if (c != '_') bare.push_back(c);
  if (bare == "allreduce") return CommName{ItemKind::collective, OpType::all_reduce};
  if (bare == "allgather") return CommName{ItemKind::collective, OpType::all_gather};
  if (bare == "reducescatter") return CommName{ItemKind::collective, OpType::reduce_scatter};
  if (bare == "alltoall" || bare == "alltoallv") return CommName{ItemKind::collective, OpType::all_to_all_v};
  if (bare == "send" || bare == "isend") return CommName{ItemKind::send, OpType::send};
  if (bare == "recv" || bare == "irecv") return CommName{ItemKind::recv, OpType::recv};
  if (bare == "wait") return CommName{ItemKind::wait, OpType::wait};
  if (bare == "init") return CommName{ItemKind::compute, OpType::compute};
  return std::nullopt;
}

// ---- a dependency graph to an issue order ----

namespace {

// A node of a cycle among the nodes Kahn's walk could not place: walk dependencies
// inside them until one repeats.
std::string cycle_text(const std::vector<GraphNode>& nodes, const std::map<uint64_t, size_t>& at,
                       const std::vector<int>& left) {
  size_t cur = 0;
  while (left[cur] <= 0) ++cur;
  std::vector<size_t> path;
  std::set<size_t> seen;
  while (seen.insert(cur).second) {
    path.push_back(cur);
    for (uint64_t d : nodes[cur].deps) {
      const auto it = at.find(d);
      if (it != at.end() && left[it->second] > 0) {
        cur = it->second;
        break;
      }
    }
  }
  std::string text;
  const auto first = std::find(path.begin(), path.end(), cur);
  for (auto p = first; p != path.end(); ++p) text += fmt::format("{} -> ", nodes[*p].item.node);
  return text + fmt::format("{}", nodes[cur].item.node);
}

// Async collectives: issued now when the next item does not depend on them, a wait
// before the first item that does.
std::vector<Item> place_waits(std::vector<Item> order, const std::vector<std::set<uint64_t>>& deps) {
  std::vector<size_t> wait_before(order.size() + 1, 0);
  for (size_t i = 0; i < order.size(); ++i) {
    Item& it = order[i];
    if (it.kind != ItemKind::collective) continue;
    if (i + 1 < order.size() && deps[i + 1].count(it.node)) continue;
    size_t j = i + 1;
    while (j < order.size() && !deps[j].count(it.node)) ++j;
    it.async = true;
    wait_before[j] = 1;
  }
  std::vector<Item> out;
  for (size_t i = 0; i <= order.size(); ++i) {
    if (wait_before[i]) {
      Item w;
      w.kind = ItemKind::wait;
      w.op = OpType::wait;
      w.node = i < order.size() ? order[i].node : 0;
      out.push_back(w);
    }
    if (i < order.size()) out.push_back(std::move(order[i]));
  }
  return out;
}

}  // namespace

std::vector<Item> issue_order(const std::vector<GraphNode>& nodes, const std::string& file, size_t* dropped_ctrl) {
  std::map<uint64_t, size_t> at;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!at.emplace(nodes[i].item.node, i).second)
      throw UsageError(
          fmt::format("{}: node {}: \"id\" appears twice: every node needs its own id", file, nodes[i].item.node));
  // Edges (dependency -> user), each once; a control edge that also is a data edge is a
  // data edge.
  struct Edge {
    size_t user;
    bool ctrl;
  };
  std::vector<int> left(nodes.size(), 0);
  std::vector<std::vector<Edge>> users(nodes.size());
  std::vector<std::set<size_t>> ctrl_of(nodes.size());  // the control dependencies still kept, by index
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::set<uint64_t> data(nodes[i].deps.begin(), nodes[i].deps.end());
    auto add = [&](uint64_t d, bool ctrl) {
      const auto it = at.find(d);
      if (it == at.end()) return;  // a node the reader skipped, or one outside the file: done
      ++left[i];
      users[it->second].push_back({i, ctrl});
      if (ctrl) ctrl_of[i].insert(it->second);
    };
    for (uint64_t d : data) add(d, false);
    for (uint64_t d : std::set<uint64_t>(nodes[i].ctrl.begin(), nodes[i].ctrl.end()))
      if (!data.count(d)) add(d, true);
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (left[i] == 0) ready.push(i);
  std::vector<Item> order;
  std::vector<std::set<uint64_t>> deps;
  size_t dropped = 0;
  for (;;) {
    while (!ready.empty()) {
      const size_t i = ready.top();
      ready.pop();
      Item it = nodes[i].item;
      deps.emplace_back(nodes[i].deps.begin(), nodes[i].deps.end());
      for (size_t c : ctrl_of[i]) deps.back().insert(nodes[c].item.node);
      it.after_prev = !order.empty() && deps.back().count(order.back().node);
      order.push_back(std::move(it));
      for (const Edge& e : users[i])
        if ((!e.ctrl || ctrl_of[e.user].count(i)) && --left[e.user] == 0) ready.push(e.user);
      left[i] = -1;
    }
    if (order.size() == nodes.size()) break;
    // Stuck: a cycle. The nodes still waiting give up their control edges to nodes not
    // yet issued; if that frees none, the data edges alone make the cycle.
    size_t freed = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (left[i] <= 0) continue;
      for (auto c = ctrl_of[i].begin(); c != ctrl_of[i].end();) {
        if (left[*c] == -1) {
          ++c;
          continue;
        }
        c = ctrl_of[i].erase(c);
        ++dropped;
        ++freed;
        if (--left[i] == 0) ready.push(i);
      }
    }
    if (freed == 0) {
      const std::string cycle = cycle_text(nodes, at, left);
      throw UsageError(
          fmt::format("{}: node {}: its \"data_deps\" form a cycle ({}): a trace's dependencies must be acyclic; "
                      "record the step again or drop one of the edges",
                      file, cycle.substr(0, cycle.find(' ')), cycle));
    }
  }
  if (dropped_ctrl) *dropped_ctrl = dropped;
  return place_waits(std::move(order), deps);
}

}  // namespace railbench::workload::formats
