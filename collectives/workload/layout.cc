#include "collectives/workload/layout.h"

#include <array>
#include <map>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::workload {

const char* to_string(GroupKind k) {
  switch (k) {
    case GroupKind::tp: return "tp";
    case GroupKind::pp: return "pp";
    case GroupKind::dp: return "dp";
    case GroupKind::ep: return "ep";
    case GroupKind::edp: return "edp";
  }
  return "?";
}

namespace {

// Order as three dimension indices (0 tp, 1 pp, 2 dp), innermost first.
std::array<int, 3> parse_order(const std::string& order) {
  std::array<int, 3> dims{};
  bool seen[3] = {false, false, false};
  int n = 0;
  size_t at = 0;
  bool ok = true;
  while (ok) {
    const size_t dash = order.find('-', at);
    const std::string part = order.substr(at, dash == std::string::npos ? std::string::npos : dash - at);
    const int d = part == "tp" ? 0 : part == "pp" ? 1 : part == "dp" ? 2 : -1;
    ok = d >= 0 && !seen[d] && n < 3;
    if (ok) {
      seen[d] = true;
      dims[static_cast<size_t>(n++)] = d;
    }
    if (dash == std::string::npos) break;
    at = dash + 1;
  }
  if (!ok || n != 3)
    throw UsageError(fmt::format("--order '{}': name tp, pp and dp once each, innermost first, e.g. tp-pp-dp", order));
  return dims;
}

int dim(const Coords& c, int d) {
  return d == 0 ? c.tp : d == 1 ? c.pp : c.dp;
}
int extent(const ParallelShape& s, int d) {
  return d == 0 ? s.tp : d == 1 ? s.pp : s.dp;
}

void check_shape(const ParallelShape& s, int world, int ranks_per_node) {
  if (s.tp < 1 || s.pp < 1 || s.dp < 1 || s.ep < 1) throw UsageError("--tp, --pp, --dp and --ep must be at least 1");
  if (static_cast<long>(s.tp) * s.pp * s.dp != world) {
    throw UsageError(fmt::format(
        "--tp {} x --pp {} x --dp {} = {} ranks, but the job has {}: make the product the world size (e.g. --dp {})",
        s.tp, s.pp, s.dp, static_cast<long>(s.tp) * s.pp * s.dp, world,
        world % (s.tp * s.pp) == 0 ? world / (s.tp * s.pp) : 1));
  }
  if (s.dp % s.ep != 0)
    throw UsageError(
        fmt::format("--ep {} does not divide --dp {}: expert-parallel groups are carved out of the "
                    "data-parallel replicas, so choose an --ep that divides --dp",
                    s.ep, s.dp));
  if (ranks_per_node > 0 && parse_order(s.order)[0] == 0 && ranks_per_node % s.tp != 0 && s.tp <= ranks_per_node)
    throw UsageError(
        fmt::format("--tp {} does not divide the {} ranks of a node: a TP group would straddle two "
                    "nodes; choose a --tp that divides {}",
                    s.tp, ranks_per_node, ranks_per_node));
  if (ranks_per_node > 0 && parse_order(s.order)[0] == 0 && s.tp > ranks_per_node)
    throw UsageError(
        fmt::format("--tp {} is more than the {} ranks of a node: tensor parallelism stays inside a node "
                    "(NVLink); use --tp {} or fewer",
                    s.tp, ranks_per_node, ranks_per_node));
}

}  // namespace

int RankMap::rank_of(const Coords& c) const {
  const auto dims = parse_order(shape.order);
  int rank = 0, stride = 1;
  for (int d : dims) {
    rank += dim(c, d) * stride;
    stride *= extent(shape, d);
  }
  return rank;
}

int RankMap::group_of(GroupKind kind, int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= member_of.size()) return -1;
  return member_of[static_cast<size_t>(rank)][static_cast<size_t>(kind)];
}

RankMap map_ranks(const ParallelShape& shape, int world, int ranks_per_node) {
  check_shape(shape, world, ranks_per_node);
  RankMap m;
  m.shape = shape;
  m.coords.resize(static_cast<size_t>(world));
  for (int dp = 0; dp < shape.dp; ++dp)
    for (int pp = 0; pp < shape.pp; ++pp)
      for (int tp = 0; tp < shape.tp; ++tp) {
        const Coords c{tp, pp, dp};
        m.coords[static_cast<size_t>(m.rank_of(c))] = c;
      }
  auto add = [&](GroupKind kind, std::string name, std::vector<int> ranks) {
    if (ranks.size() > 1) m.groups.push_back(GroupDef{std::move(name), kind, std::move(ranks)});
  };
  int id = 0;
  // TP: ranks with the same (pp, dp); PP: same (tp, dp); DP: same (tp, pp).
  for (int dp = 0; dp < shape.dp; ++dp)
    for (int pp = 0; pp < shape.pp; ++pp, ++id) {
      std::vector<int> r;
      for (int tp = 0; tp < shape.tp; ++tp) r.push_back(m.rank_of({tp, pp, dp}));
      add(GroupKind::tp, fmt::format("tp{}", id), r);
    }
  id = 0;
  for (int dp = 0; dp < shape.dp; ++dp)
    for (int tp = 0; tp < shape.tp; ++tp, ++id) {
      std::vector<int> r;
      for (int pp = 0; pp < shape.pp; ++pp) r.push_back(m.rank_of({tp, pp, dp}));
      add(GroupKind::pp, fmt::format("pp{}", id), r);
    }
  id = 0;
  for (int pp = 0; pp < shape.pp; ++pp)
    for (int tp = 0; tp < shape.tp; ++tp, ++id) {
      std::vector<int> r;
      for (int dp = 0; dp < shape.dp; ++dp) r.push_back(m.rank_of({tp, pp, dp}));
      add(GroupKind::dp, fmt::format("dp{}", id), r);
      if (shape.ep > 1) {
        // EP: consecutive blocks of ep replicas; EDP: replicas holding the same experts.
        for (int e = 0; e < shape.dp / shape.ep; ++e)
          add(GroupKind::ep, fmt::format("ep{}_{}", id, e),
              std::vector<int>(r.begin() + e * shape.ep, r.begin() + (e + 1) * shape.ep));
        for (int j = 0; j < shape.ep; ++j) {
          std::vector<int> edp;
          for (int e = j; e < shape.dp; e += shape.ep) edp.push_back(r[static_cast<size_t>(e)]);
          add(GroupKind::edp, fmt::format("edp{}_{}", id, j), edp);
        }
      }
    }
  std::array<int, kGroupKinds> none;
  none.fill(-1);
  m.member_of.assign(static_cast<size_t>(world), none);
  for (size_t g = 0; g < m.groups.size(); ++g)
    for (int r : m.groups[g].ranks)
      m.member_of[static_cast<size_t>(r)][static_cast<size_t>(m.groups[g].kind)] = static_cast<int>(g);
  return m;
}

}  // namespace railbench::workload
