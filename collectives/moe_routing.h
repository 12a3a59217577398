// Mixture-of-experts token routing for expert-parallel (EP) dispatch and combine: which
// member of an EP group each token copy goes to, computed without communication. Every
// rank that calls route_tokens with the same options gets the same matrix, so the
// all-to-all-v counts agree on both sides of every link.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/alltoallv.h"

namespace railbench {

// How popular each expert is. uniform: all alike. zipf:S: the expert of popularity rank
// i (1-based) has weight 1/i^S, ranks assigned by a permutation drawn from the seed, so
// the hot expert is not always expert 0. file:PATH: weights read from a file (a JSON
// array of numbers, or a CSV of one weight per line or `expert,weight` lines, header
// allowed), one per expert, non-negative.
struct RoutingSpec {
  enum class Kind { uniform, zipf, file };
  Kind kind = Kind::uniform;
  double zipf_s = 0;            // zipf's exponent, > 0
  std::string path;             // file: the file it came from
  std::vector<double> weights;  // file: one per expert, as read
  std::string text;             // the spec as given, for headers and results
};

// Parses "uniform", "zipf:S" or "file:PATH" (the file is read here, so a bad file fails
// before any traffic). Throws UsageError naming the field and the fix, IoError when the
// file cannot be read.
RoutingSpec parse_routing(const std::string& spec);

struct MoeRoutingOptions {
  RoutingSpec routing;
  int experts = 8;             // E, placed evenly: expert e lives on member e / (E / size)
  int topk = 2;                // K distinct experts per token
  size_t tokens_per_rank = 0;  // tokens each member routes in one micro-batch
  uint64_t seed = 0;           // same seed, same popularity order (zipf) and same draws
  uint64_t step = 0;           // training step: the draws change per step, the popularity does not
};

// The routed counts of one step over a group of `members`.
struct MoeRouting {
  int members = 0;
  std::vector<size_t> tokens;       // members x members: tokens[src * members + dst], token copies src sends dst
  std::vector<size_t> expert_load;  // token copies each expert receives, summed over sources

  size_t at(int src, int dst) const { return tokens[static_cast<size_t>(src * members + dst)]; }
  size_t sent_by(int src) const;      // row sum: always tokens_per_rank x K
  size_t received_by(int dst) const;  // column sum
  // max / mean token copies per expert (1 is perfectly even; 0 when nothing is routed).
  double expert_imbalance() const;
  // max / mean token copies per ordered pair of members (src -> dst, self included).
  double pair_imbalance() const;
};

// Throws UsageError when `o` cannot be routed over `members`: E or K below 1, K > E,
// E not divisible by the group size, a weights file with other than E entries, fewer
// than K experts with positive weight. More experts than tokens x K is allowed (some
// experts then get nothing, which is what a small micro-batch does).
void validate_routing(const MoeRoutingOptions& o, int members);

// Routes every member's tokens: each token picks K distinct experts, drawn by weight
// without replacement, from a stream seeded by (seed, step, source member), and one token
// copy goes to each chosen expert's member. Deterministic and the same on every rank.
MoeRouting route_tokens(const MoeRoutingOptions& o, int members);

// Member `member`'s all-to-all-v layout for dispatch (token copies out to the experts'
// members) and for combine (the results back: dispatch with send and receive swapped),
// `elems_per_token` elements per copy, blocks packed in member order.
AllToAllVLayout dispatch_layout(const MoeRouting& r, int member, size_t elems_per_token);
AllToAllVLayout combine_layout(const MoeRouting& r, int member, size_t elems_per_token);

// The member expert `e` lives on.
inline int expert_member(int e, int experts, int members) {
  return e / (experts / members);
}

}  // namespace railbench
