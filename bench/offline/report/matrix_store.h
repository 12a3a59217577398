// The per-rail matrices of a large validate results file, kept as floats while the file
// is parsed instead of as JSON values: a 1,024-node x 8-rail file holds 40 M figures,
// which as a JSON DOM take GBs and most of the time spent reading it.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace railbench::report {

// An n x n matrix of one rail, row-major (row sends to column); NaN: not measured.
struct RailMatrix {
  int n = 0;
  std::vector<float> cells;
  float at(int a, int b) const { return cells[static_cast<size_t>(a) * n + b]; }
};

// rails[i][key] -> its matrix, for the keys a validate rail carries (bw_gbs, bidir_gbs,
// lat_p50_us, lat_p99_us, lat_p999_us). In the document the same members are null.
struct MatrixStore {
  std::map<std::pair<size_t, std::string>, RailMatrix> matrices;
  const RailMatrix* find(size_t rail, const std::string& key) const {
    const auto it = matrices.find({rail, key});
    return it == matrices.end() ? nullptr : &it->second;
  }
};

// Parses results text into `doc`, the rails' matrices into `store`, and leaves out
// "rail_pairs" (the pair records the matrices repeat; the report reads none of them).
// Throws nlohmann::json::parse_error as json::parse does.
void parse_with_matrices(std::string_view text, nlohmann::json& doc, MatrixStore& store);

}  // namespace railbench::report
