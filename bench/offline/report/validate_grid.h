// validate's per-rail matrices read once into flat arrays of floats, with each rail's
// nodes grouped by leaf, so a 1,024-node x 8-rail SU (8 M cells a matrix) is summed up
// per leaf pair, per node and as the worst links in one pass each, with no JSON look-up
// per cell. Used by the aggregated view (validate_summary.cc) and the worst-links table.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/offline/report/matrix_store.h"

namespace railbench::report {

struct ValidateRun;  // validate_data.h

// A group of a rail's nodes that hang off one leaf switch (or a fixed-size block of nodes
// in node order, when the results do not say which leaf a node is on).
struct LeafGroup {
  std::string name;        // "r5-leaf17", or "nodes 1-32" for a block
  std::vector<int> nodes;  // node indices, in node order
};

struct RailGrid {
  int rail = 0;
  std::string nic, leaf;
  double line_rate = NAN;  // GB/s (the results' Gb/s / 8)
  RailMatrix bw, bidir, p50, p99;
  std::map<std::pair<int, int>, std::string> failed;  // failed pair tests, both directions
  std::vector<LeafGroup> leaves;
  std::vector<int> leaf_of;  // node -> index into leaves
  // Where the leaves came from, for the page: "the results' rails[].leaves", or why the
  // nodes are in fixed blocks instead.
  std::string leaf_source;
  bool leaves_from_results = false;

  // The slower direction of a pair as a fraction of line rate; NaN when neither was measured.
  double pair_fraction(int a, int b) const;
};

// Nodes per block when the results name no leaf per node.
inline constexpr int kNodesPerBlock = 32;

// Reads every rail of `v` (validate_data.h): matrices, failed pairs and the leaf groups,
// from the rail's "leaves" ([{"leaf", "nodes": [names]}]) or "node_leaves" (a leaf name
// per node, parallel to "nodes"); without either, one group named by "leaf" when the rail
// has at most kNodesPerBlock nodes, else blocks of kNodesPerBlock nodes. Matrices come
// from `store` where the loader kept them there (load.cc), else from the document.
std::vector<RailGrid> read_rail_grids(const ValidateRun& v, const MatrixStore* store);

// One link of the worst-links table: a pair on a rail, its slower direction a -> b.
struct WorstLink {
  int rail = 0, a = 0, b = 0;
  double gbs = NAN, fraction = NAN;
};

// The k pairs with the lowest bandwidth against line rate over every rail (each pair
// once, its slower direction), worst first; ties in rail and node order. Pairs never
// measured or whose test failed are not ranked (the findings and hatches name them).
// O(cells log k).
std::vector<WorstLink> worst_links(const std::vector<RailGrid>& grids, int k);

}  // namespace railbench::report
