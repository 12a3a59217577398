#include "collectives/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/config_path.h"
#include "lib/core/errors.h"

namespace railbench {

namespace {

// splitmix64: a small generator whose output is fixed by its seed on every platform
// and compiler (std::*_distribution are not), so every rank draws the same numbers.
struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

uint64_t mix(uint64_t a, uint64_t b) {
  return SplitMix{a ^ (b * 0x9e3779b97f4a7c15ULL)}.next();
}

bool parse_number(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(out);
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// A CSV of one weight per line, or `expert,weight` lines; a first line that is not a
// number is a header.
std::vector<double> csv_weights(std::istream& in, const std::string& path) {
  std::vector<double> w;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const auto comma = line.rfind(',');
    const std::string cell = trim(comma == std::string::npos ? line : line.substr(comma + 1));
    double v = 0;
    if (!parse_number(cell, v)) {
      if (w.empty() && n == 1) continue;  // header
      throw UsageError(
          fmt::format("--routing file:{} line {}: '{}' is not a weight: write one non-negative number "
                      "per line, or expert,weight",
                      path, n, cut_for_error(line)));
    }
    w.push_back(v);
  }
  return w;
}

std::vector<double> json_weights(std::istream& in, const std::string& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("--routing file:{} is not valid JSON ({}): write an array of weights, one per expert",
                                 path, e.what()));
  }
  if (doc.is_object() && doc.contains("weights")) doc = doc["weights"];
  if (!doc.is_array())
    throw UsageError(fmt::format("--routing file:{}: expected an array of weights (or {{\"weights\": [...]}})", path));
  std::vector<double> w;
  for (const auto& v : doc) {
    if (!v.is_number())
      throw UsageError(fmt::format("--routing file:{}: weight {} is {}, not a number", path, w.size(), v.dump()));
    w.push_back(v.get<double>());
  }
  return w;
}

std::vector<double> read_weights(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(fmt::format("--routing file:{}: cannot open it: give a readable JSON or CSV file", path));
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  std::vector<double> w = json ? json_weights(in, path) : csv_weights(in, path);
  for (size_t e = 0; e < w.size(); ++e)
    if (!(w[e] >= 0))
      throw UsageError(
          fmt::format("--routing file:{}: expert {} has weight {}: weights must be 0 or more", path, e, w[e]));
  if (w.empty()) throw UsageError(fmt::format("--routing file:{} holds no weights: give one per expert", path));
  return w;
}

// Per-expert weights for `o` (not normalized).
std::vector<double> expert_weights(const MoeRoutingOptions& o) {
  const auto e_count = static_cast<size_t>(o.experts);
  switch (o.routing.kind) {
    case RoutingSpec::Kind::uniform: return std::vector<double>(e_count, 1.0);
    case RoutingSpec::Kind::file: return o.routing.weights;
    case RoutingSpec::Kind::zipf: break;
  }
  // Popularity rank i -> expert perm[i], a Fisher-Yates shuffle from the seed alone, so
  // the hot expert stays the same from step to step, as a trained router's does.
  std::vector<size_t> perm(e_count);
  std::iota(perm.begin(), perm.end(), 0);
  SplitMix rng{mix(o.seed, 0x5a17)};
  for (size_t i = e_count; i > 1; --i) std::swap(perm[i - 1], perm[rng.next() % i]);
  std::vector<double> w(e_count);
  for (size_t i = 0; i < e_count; ++i) w[perm[i]] = 1.0 / std::pow(static_cast<double>(i + 1), o.routing.zipf_s);
  return w;
}

}  // namespace

RoutingSpec parse_routing(const std::string& spec) {
  RoutingSpec r;
  r.text = spec;
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon), arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "uniform" && colon == std::string::npos) return r;
  if (kind == "zipf") {
    r.kind = RoutingSpec::Kind::zipf;
    if (!parse_number(arg, r.zipf_s) || r.zipf_s <= 0)
      throw UsageError(
          fmt::format("--routing {}: zipf's exponent S must be a number above 0, e.g. zipf:1.2", cut_for_error(spec)));
    return r;
  }
  if (kind == "file") {
    if (arg.empty()) throw UsageError("--routing file: needs a path: file:weights.json or file:weights.csv");
    r.kind = RoutingSpec::Kind::file;
    r.path = arg;
    r.weights = read_weights(arg);
    return r;
  }
  throw UsageError(fmt::format("--routing '{}' is not a distribution: use uniform, zipf:S (e.g. zipf:1.2) or file:PATH",
                               cut_for_error(spec)));
}

void validate_routing(const MoeRoutingOptions& o, int members) {
  if (o.experts < 1) throw UsageError(fmt::format("--experts {} must be 1 or more", o.experts));
  if (o.topk < 1) throw UsageError(fmt::format("--topk {} must be 1 or more", o.topk));
  if (o.topk > o.experts)
    throw UsageError(
        fmt::format("--topk {} exceeds --experts {}: a token picks K distinct experts, so K <= E", o.topk, o.experts));
  if (members < 1 || o.experts % members != 0)
    throw UsageError(fmt::format("--experts {} does not divide over the {} ranks of the EP group: use a multiple of {}",
                                 o.experts, members, members));
  if (o.routing.kind != RoutingSpec::Kind::file) return;
  const auto& w = o.routing.weights;
  if (w.size() != static_cast<size_t>(o.experts))
    throw UsageError(fmt::format("--routing file:{} has {} weights for --experts {}: give exactly one per expert",
                                 o.routing.path, w.size(), o.experts));
  const auto positive = std::count_if(w.begin(), w.end(), [](double x) { return x > 0; });
  if (positive < o.topk)
    throw UsageError(fmt::format("--routing file:{} gives only {} experts a weight above 0, fewer than --topk {}",
                                 o.routing.path, positive, o.topk));
}

MoeRouting route_tokens(const MoeRoutingOptions& o, int members) {
  validate_routing(o, members);
  const auto m = static_cast<size_t>(members);
  const std::vector<double> w = expert_weights(o);
  std::vector<double> cum(w.size());
  std::partial_sum(w.begin(), w.end(), cum.begin());
  const double total = cum.back();
  MoeRouting out;
  out.members = members;
  out.tokens.assign(m * m, 0);
  out.expert_load.assign(w.size(), 0);
  std::vector<int> picked;
  for (size_t src = 0; src < m; ++src) {
    SplitMix rng{mix(mix(o.seed, o.step), src)};
    for (size_t t = 0; t < o.tokens_per_rank; ++t) {
      picked.clear();
      // Drawing by weight and redrawing a repeat is sampling without replacement (the
      // redraw renormalizes over the experts left). After many repeats (one expert
      // holding nearly all the weight) the next pick goes over the rest directly.
      while (picked.size() < static_cast<size_t>(o.topk)) {
        int e = -1;
        for (int tries = 0; tries < 64 && e < 0; ++tries) {
          const auto it = std::upper_bound(cum.begin(), cum.end(), rng.uniform() * total);
          const int c = static_cast<int>(std::min<size_t>(static_cast<size_t>(it - cum.begin()), w.size() - 1));
          if (w[static_cast<size_t>(c)] > 0 && std::find(picked.begin(), picked.end(), c) == picked.end()) e = c;
        }
        if (e < 0) {
          double left = 0;
          for (size_t c = 0; c < w.size(); ++c)
            if (std::find(picked.begin(), picked.end(), static_cast<int>(c)) == picked.end()) left += w[c];
          double u = rng.uniform() * left;
          for (size_t c = 0; c < w.size() && e < 0; ++c) {
            if (w[c] <= 0 || std::find(picked.begin(), picked.end(), static_cast<int>(c)) != picked.end()) continue;
            if (u < w[c]) e = static_cast<int>(c);
            u -= w[c];
          }
          // Rounding can leave u just above the last weight: take the last expert left.
          for (size_t c = w.size(); e < 0 && c-- > 0;)
            if (w[c] > 0 && std::find(picked.begin(), picked.end(), static_cast<int>(c)) == picked.end())
              e = static_cast<int>(c);
        }
        picked.push_back(e);
        ++out.expert_load[static_cast<size_t>(e)];
        ++out.tokens[src * m + static_cast<size_t>(expert_member(e, o.experts, members))];
      }
    }
  }
  return out;
}

size_t MoeRouting::sent_by(int src) const {
  size_t s = 0;
  for (int d = 0; d < members; ++d) s += at(src, d);
  return s;
}

size_t MoeRouting::received_by(int dst) const {
  size_t s = 0;
  for (int q = 0; q < members; ++q) s += at(q, dst);
  return s;
}

namespace {
double max_over_mean(const std::vector<size_t>& v) {
  if (v.empty()) return 0;
  const double sum = static_cast<double>(std::accumulate(v.begin(), v.end(), size_t{0}));
  if (sum == 0) return 0;
  return static_cast<double>(*std::max_element(v.begin(), v.end())) / (sum / static_cast<double>(v.size()));
}
}  // namespace

AllToAllVLayout dispatch_layout(const MoeRouting& r, int member, size_t elems_per_token) {
  std::vector<size_t> to(static_cast<size_t>(r.members)), from(to.size());
  for (int q = 0; q < r.members; ++q) {
    to[static_cast<size_t>(q)] = r.at(member, q) * elems_per_token;
    from[static_cast<size_t>(q)] = r.at(q, member) * elems_per_token;
  }
  return AllToAllVLayout::packed(to, from);
}

AllToAllVLayout combine_layout(const MoeRouting& r, int member, size_t elems_per_token) {
  AllToAllVLayout d = dispatch_layout(r, member, elems_per_token);
  return AllToAllVLayout{d.recv_counts, d.recv_offsets, d.send_counts, d.send_offsets};
}

double MoeRouting::expert_imbalance() const {
  return max_over_mean(expert_load);
}
double MoeRouting::pair_imbalance() const {
  return max_over_mean(tokens);
}

}  // namespace railbench
