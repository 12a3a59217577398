#include "bench/offline/report/validate_grid.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "bench/offline/report/html.h"
#include "bench/offline/report/validate_data.h"

namespace railbench::report {

namespace {

RailMatrix read_matrix(const nlohmann::json& rail, const char* key, int n, const MatrixStore* store, size_t index) {
  RailMatrix m{n, std::vector<float>(static_cast<size_t>(n) * n, NAN)};
  if (const RailMatrix* kept = store ? store->find(index, key) : nullptr) {
    for (int a = 0; a < n && a < kept->n; ++a)
      std::copy_n(&kept->cells[static_cast<size_t>(a) * kept->n], std::min(n, kept->n),
                  &m.cells[static_cast<size_t>(a) * n]);
    return m;
  }
  const auto& rows = member(rail, key);
  if (!rows.is_array()) return m;
  for (int a = 0; a < n && a < static_cast<int>(rows.size()); ++a) {
    const auto& row = rows[a];
    if (!row.is_array()) continue;
    float* out = &m.cells[static_cast<size_t>(a) * n];
    const int cols = std::min(n, static_cast<int>(row.size()));
    for (int b = 0; b < cols; ++b) out[b] = static_cast<float>(number_or_nan(row[b]));
  }
  return m;
}

// The leaf groups the results name for this rail; empty when they name none per node.
std::vector<LeafGroup> named_leaves(const nlohmann::json& rail, const std::unordered_map<std::string, int>& index,
                                    std::string& source) {
  std::vector<LeafGroup> out;
  const auto& leaves = member(rail, "leaves");
  if (leaves.is_array() && !leaves.empty()) {
    for (const auto& l : leaves) {
      LeafGroup g{text_at(l, "leaf", fmt::format("leaf {}", out.size() + 1)), {}};
      for (const auto& name : member(l, "nodes"))
        if (const auto it = index.find(name.is_string() ? name.get<std::string>() : ""); it != index.end())
          g.nodes.push_back(it->second);
      out.push_back(std::move(g));
    }
    source = "the leaves each rail lists with its nodes (rails[].leaves)";
    return out;
  }
  const auto& per_node = member(rail, "node_leaves");
  if (per_node.is_array() && !per_node.empty()) {
    std::unordered_map<std::string, size_t> at;
    for (size_t x = 0; x < per_node.size() && x < index.size(); ++x) {
      const std::string leaf = per_node[x].is_string() ? per_node[x].get<std::string>() : "no leaf";
      const auto [it, added] = at.try_emplace(leaf, out.size());
      if (added) out.push_back({leaf, {}});
      out[it->second].nodes.push_back(static_cast<int>(x));
    }
    source = "the leaf of each node on each rail (rails[].node_leaves)";
  }
  return out;
}

// Every node in exactly one group: the named leaves, the nodes they leave out in one
// more, or fixed blocks in node order.
void group_by_leaf(RailGrid& g, const nlohmann::json& rail, const ValidateRun& v,
                   const std::unordered_map<std::string, int>& index) {
  const int n = static_cast<int>(v.nodes.size());
  g.leaves = named_leaves(rail, index, g.leaf_source);
  g.leaves_from_results = !g.leaves.empty();
  g.leaf_of.assign(n, -1);
  for (size_t i = 0; i < g.leaves.size(); ++i)
    for (int x : g.leaves[i].nodes) g.leaf_of[x] = static_cast<int>(i);
  if (g.leaves_from_results) {
    LeafGroup rest{"no leaf", {}};
    for (int x = 0; x < n; ++x)
      if (g.leaf_of[x] < 0) g.leaf_of[x] = static_cast<int>(g.leaves.size()), rest.nodes.push_back(x);
    if (!rest.nodes.empty()) g.leaves.push_back(std::move(rest));
    std::erase_if(g.leaves, [](const LeafGroup& l) { return l.nodes.empty(); });
    for (size_t i = 0; i < g.leaves.size(); ++i)
      for (int x : g.leaves[i].nodes) g.leaf_of[x] = static_cast<int>(i);
    return;
  }
  if (n <= kNodesPerBlock) {
    g.leaves.push_back({g.leaf.empty() ? "nodes" : g.leaf, {}});
    for (int x = 0; x < n; ++x) g.leaves[0].nodes.push_back(x), g.leaf_of[x] = 0;
    g.leaf_source = "one leaf per rail (rails[].leaf)";
    return;
  }
  for (int x = 0; x < n; ++x) {
    if (x % kNodesPerBlock == 0)
      g.leaves.push_back({fmt::format("nodes {}-{}", x + 1, std::min(n, x + kNodesPerBlock)), {}});
    g.leaves.back().nodes.push_back(x);
    g.leaf_of[x] = static_cast<int>(g.leaves.size()) - 1;
  }
  g.leaf_source =
      fmt::format("blocks of {} nodes in node order: the results name {} leaf per node, so a block is not a switch",
                  kNodesPerBlock, g.leaf.empty() ? "no" : "one leaf per rail (" + g.leaf + ") and no");
}

}  // namespace

double RailGrid::pair_fraction(int a, int b) const {
  const float x = bw.at(a, b), y = bw.at(b, a);
  const float slower = std::isnan(x) ? y : std::isnan(y) ? x : std::min(x, y);
  return static_cast<double>(slower) / line_rate;
}

std::vector<RailGrid> read_rail_grids(const ValidateRun& v, const MatrixStore* store) {
  const int n = static_cast<int>(v.nodes.size());
  std::unordered_map<std::string, int> index;
  for (int x = 0; x < n; ++x) index.emplace(v.nodes[x], x);
  std::vector<RailGrid> out;
  for (size_t i = 0; i < v.rails().size(); ++i) {
    const auto& rail = v.rails()[i];
    RailGrid g;
    g.rail = rail.value("rail", 0);
    g.nic = text_at(rail, "nic");
    g.leaf = text_at(rail, "leaf");
    g.line_rate = number_at(rail, "line_rate_gbps") / 8;
    g.bw = read_matrix(rail, "bw_gbs", n, store, i);
    g.bidir = read_matrix(rail, "bidir_gbs", n, store, i);
    g.p50 = read_matrix(rail, "lat_p50_us", n, store, i);
    g.p99 = read_matrix(rail, "lat_p99_us", n, store, i);
    for (const auto& e : member(rail, "errors")) {
      const auto a = index.find(text_at(e, "a")), b = index.find(text_at(e, "b"));
      if (a == index.end() || b == index.end()) continue;
      g.failed[{a->second, b->second}] = g.failed[{b->second, a->second}] = text_at(e, "error");
    }
    group_by_leaf(g, rail, v, index);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<WorstLink> worst_links(const std::vector<RailGrid>& grids, int k) {
  // A max-heap of the k best-so-far worst: its top is the first to give way.
  const auto key = [](const WorstLink& w) { return std::make_tuple(w.fraction, w.rail, w.a, w.b); };
  const auto less = [&](const WorstLink& x, const WorstLink& y) { return key(x) < key(y); };
  std::vector<WorstLink> heap;
  if (k <= 0) return heap;
  for (const auto& g : grids) {
    if (!(g.line_rate > 0)) continue;
    for (int a = 0; a < g.bw.n; ++a) {
      for (int b = a + 1; b < g.bw.n; ++b) {
        const double f = g.pair_fraction(a, b);
        if (std::isnan(f)) continue;
        if (static_cast<int>(heap.size()) == k && !(f < heap.front().fraction)) continue;
        const bool ab = !(g.bw.at(b, a) < g.bw.at(a, b));  // a -> b is the slower (or as slow)
        WorstLink w{g.rail, ab ? a : b, ab ? b : a, f * g.line_rate, f};
        if (static_cast<int>(heap.size()) == k) {
          std::pop_heap(heap.begin(), heap.end(), less);
          heap.pop_back();
        }
        heap.push_back(w);
        std::push_heap(heap.begin(), heap.end(), less);
      }
    }
  }
  std::sort_heap(heap.begin(), heap.end(), less);
  return heap;
}

}  // namespace railbench::report
