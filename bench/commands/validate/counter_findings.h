// What the NICs counted during validate's pair tests, per link, and the findings it
// makes: error counters that moved (FAIL even when the bandwidth passed), drops or
// retransmits far above the link's rail (WARN), and for every finding on a link, what
// its counters showed against its partners' ("4,180 retransmit ...; partners: none").
// Numbers only, no transport, so it is tested on PairResults alone.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"

namespace railbench {

struct LinkCounterDeltas {
  bool read = false;                              // some pair test carried this link's counters
  int tests = 0;                                  // pair tests that did
  std::map<std::string, uint64_t> kinds;          // "drop" -> sum over its tests
  std::map<std::string, uint64_t> deltas;         // "qdisc/drops" -> sum over its tests
  std::map<std::string, uint64_t> partner_kinds;  // the other ends, in the same tests
  std::map<std::string, uint64_t> partner_deltas;
};

// Per rail, per node (index: rail, then node), from every pair test (rail checks,
// cross-rail spot checks, re-tests): each side's counters go to its own link.
std::vector<std::vector<LinkCounterDeltas>> link_counters(int rails, int nodes, const std::vector<PairResult>& pairs);

// "4,180 retransmit (hw/out_of_sequence 4,180), 12 drop (qdisc/drops 12)", "none".
std::string describe_counters(const std::map<std::string, uint64_t>& kinds,
                              const std::map<std::string, uint64_t>& deltas);

// Adds the counter findings and appends, to every finding that blames one link whose
// counters were read, "; counters during its tests: ...; partners: ...".
void judge_counters(const SuConfig& config, const std::vector<std::string>& node_names,
                    const std::vector<std::vector<LinkCounterDeltas>>& counters, std::vector<Finding>& findings);

}  // namespace railbench
