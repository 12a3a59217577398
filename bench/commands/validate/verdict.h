// The judgement half of `validate`, kept free of transports and ranks so it is tested
// on numbers alone: from the pair measurements, which links are suspect, and after the
// re-tests, which are confirmed bad. A link is one NIC port of one node on one rail
// (its cable to the leaf); its figures are medians over all the partners it was
// measured against, so one bad link does not smear onto the nodes it was paired with.
// A link that went down and came back (its carrier counters), whose pair tests were
// cut off in one round but not another, or whose timed windows vary far more than its
// rail's, is intermittent: a suspect like a slow one, re-tested the same way.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/validate/reason_codes.h"
#include "bench/commands/validate/su_config.h"

namespace railbench {

// The words of the results file and the findings table, typed so a misspelt kind is a
// compile error instead of a finding that no filter or sort recognises. to_string gives
// the word the JSON and the table have always carried; parse_* reads it back and throws
// IoError naming `field` for any other word (a results file from another tool or version).
enum class Severity { fail, warn };
enum class FindingKind {
  inventory,
  unreachable,
  bandwidth,
  bidirectional,
  latency,
  cross_rail,
  collective,
  intermittent,
  baseline,      // well below the link's own accepted figure (validate --baseline)
  counters,      // its NIC's error counters moved, or far more drops/retransmits than its rail's
  cabling,       // a NIC reaches another rail's leaf: cables swapped or on the wrong leaf (cabling.h)
  isolation,     // tenants: one tenant reached another's node, or a port holds the wrong P_Key
  interference,  // tenants: a tenant's all-reduce slows while the others run theirs
  bisection,     // every pair of a cut between two halves of the nodes at once fell short (bisection.h)
  fabric,        // a leaf-spine link inside the fabric (fabric_phase.h): a switch port to fix, no host
  history        // well below its own history or the fleet's in the run store (validate --db, fleet_history.h)
};
enum class PairPhase { rail, cross, retest };  // rail checks, cross-rail spot checks, re-tests

const char* to_string(Severity s);  // "FAIL", "WARN"
const char* to_string(
    FindingKind k);  // "inventory", ..., "cabling", "isolation", "interference", "bisection", "fabric", "history"
const char* to_string(PairPhase p);  // "rail", "cross", "retest"
Severity parse_severity(const std::string& word, const std::string& field);
FindingKind parse_finding_kind(const std::string& word, const std::string& field);
PairPhase parse_pair_phase(const std::string& word, const std::string& field);

// nlohmann writes an enum without its own to_json as a number; these keep it a word.
void to_json(nlohmann::json& j, Severity s);
void to_json(nlohmann::json& j, FindingKind k);
void to_json(nlohmann::json& j, PairPhase p);

// One measured pair: node_a's slot rail_a against node_b's slot rail_b (equal on the
// rail checks, different on cross-rail spot checks). Bandwidths are GB/s medians over
// the timed windows, latencies microseconds (RTT/2) percentiles. bw_spread says how
// steady the windows were: 1 - slowest / median window GB/s, the worst of the pair's
// streams (0: every window alike; 0.9: one window at a tenth of the others).
struct PairResult {
  PairPhase phase = PairPhase::rail;
  int node_a = 0, node_b = 0;
  int rail_a = 0, rail_b = 0;
  bool ok = true;
  std::string error;  // why it did not finish (deadline, transport error)
  double bw_ab = 0, bw_ba = 0, bidir = 0;
  double lat_p50 = 0, lat_p99 = 0, lat_p999 = 0;
  double bw_spread = 0;
  // What each side's NIC counted during the test (bench/runner/fabric_counters.h: {"rail",
  // "rail_name", "kinds", "deltas"}; {} when nothing moved); null: not read (--no-counters).
  nlohmann::json counters_a, counters_b;
  // Seconds its bandwidth streams took (warm-ups included) plus its longest latency round
  // trip, the slower side's: a burn-in window's figure is the bytes the streams moved over
  // this. A stall in a stream or a round trip shows; the scheduler's noise over a
  // ping-pong of a thousand round trips (a shared host) does not.
  double test_s = 0;
};

// 1 - min / median of a stream's per-window GB/s (0 for fewer than two windows).
double window_spread(const std::vector<double>& gbps);

void to_json(nlohmann::json& j, const PairResult& p);
void from_json(const nlohmann::json& j, PairResult& p);

struct LinkId {
  int node = 0;
  int rail = 0;
  bool operator==(const LinkId&) const = default;
};

// A link's figures over its partners on its rail, and how often it went down (from
// its NIC's counters, set by the caller: link_stats leaves them 0).
struct LinkStats {
  LinkId link;
  int pairs = 0, failed = 0;
  double tx = 0, rx = 0, bidir = 0;             // GB/s medians: sending, receiving, both at once
  double lat_p50 = 0, lat_p99 = 0;              // us medians
  double spread = 0;                            // median of its pairs' bw_spread
  std::vector<int> failed_with;                 // the partners of its pair tests that did not finish
  std::vector<std::pair<int, double>> spreads;  // (partner, bw_spread) of its finished pair tests
  int downs = 0;                                // link downs during the pair tests (before the re-tests)
  int retest_downs = 0;                         // ... during the re-tests
  int late_downs = 0;                           // ... after them (collectives)
  long long carrier_changes = -1;               // counter deltas over the whole run; -1: not kept by the NIC
  long long link_downed = -1;
  int total_downs() const { return downs + retest_downs + late_downs; }
};

struct Suspect {
  LinkId link;
  FindingKind kind = FindingKind::bandwidth;  // unreachable, bandwidth, bidirectional, latency, intermittent
  std::string reason;                         // measured vs expected, in words
  double measured = 0, expected = 0;
  std::string unit;
  std::string code;  // its reason code (reason_codes.h); empty: the kind's
};

struct Finding {
  Severity severity = Severity::fail;
  FindingKind kind = FindingKind::inventory;
  std::string subject;  // "node03 rail1 (leaf1)", "node01 slot0 -> node02 slot1", "allreduce"
  std::string reason;
  double measured = 0, expected = 0;
  std::string unit;
  int node = -1, rail = -1;  // the link blamed, when one is
  // The nodes the fault may lie with when it cannot be pinned on one: a link with no
  // good partner left to re-test against (its node and its partners on the rail), a
  // cross-rail path (both ends; node is -1). Empty: a finding that names a node is
  // that node's, which is what the drain list goes by (drain_list.h).
  std::vector<int> ends;
  // Its stable reason code (reason_codes.h), set by the producer that knows which fault
  // of its kind it is; empty: the kind's own code (code_of).
  std::string code;
  // A fabric finding's leaf-spine link as the SU config names it ("su1-leaf0-spine2"),
  // for readers that key on the link (the run store) rather than parse the subject;
  // empty for any other finding.
  std::string fabric_link;
};

// The finding's reason code: its own, or its kind's when none was set.
std::string code_of(const Finding& f);

// `f` with reason code `code`: for producers that make a Finding in one expression.
inline Finding coded(Finding f, const char* code) {
  f.code = code;
  return f;
}

// "code" is written always; reading back, a results file written before codes existed
// (no "code") gets the kind's code.
void to_json(nlohmann::json& j, const Finding& f);
void from_json(const nlohmann::json& j, Finding& f);

// Per rail, every node's link figures (index: rail, then node; nodes without a
// measurement have pairs == 0).
std::vector<std::vector<LinkStats>> link_stats(const SuConfig& config, int nodes, const std::vector<PairResult>& rail);

// Links whose figures break an absolute threshold or sit far from their rail's median,
// and intermittent ones: went down (downs > 0), pair tests cut off with some partners
// that their partners' own troubles do not explain, or windows far less steady than
// the rail's.
std::vector<Suspect> find_suspects(const SuConfig& config, const std::vector<std::vector<LinkStats>>& stats);

// For each suspect, a partner on the same rail that is not itself suspect (the best by
// bandwidth), scheduled as rounds of disjoint pairs; a suspect with no possible partner
// is left out (two-node SUs). Returns pairs (suspect node, partner node, rail).
struct Retest {
  LinkId suspect;
  int partner = 0;
};
// `tenant_of` (per node; empty: one tenant): a partner is in the suspect's tenant, the
// only nodes it may reach. `su_of` (per node, the fabric's SU; empty or -1: none): a
// partner in the suspect's SU comes first, so that the re-test stays on its leaf.
std::vector<std::vector<Retest>> plan_retests(const std::vector<Suspect>& suspects,
                                              const std::vector<std::vector<LinkStats>>& stats,
                                              const std::vector<int>& tenant_of = {},
                                              const std::vector<int>& su_of = {});

// The findings of the traffic phases: suspects confirmed by their re-test are FAIL,
// those that passed it WARN, those without a possible partner FAIL naming both ends;
// a re-test also fails when the link went down during it (retest_downs). Cross-rail
// pairs below threshold and not explained by a bad or intermittent link are FAIL.
// `fabric_at_fault`: the leaf-spine links the fabric phase found bad (indices into
// config.fabric.links); a re-test or cross-rail pair whose way crossed one of them is
// WARN naming it, not a host's FAIL.
std::vector<Finding> judge_links(const SuConfig& config, const std::vector<std::string>& node_names,
                                 const std::vector<std::vector<LinkStats>>& stats, const std::vector<Suspect>& suspects,
                                 const std::vector<PairResult>& retests, const std::vector<PairResult>& cross,
                                 const std::vector<int>& fabric_at_fault = {});

// The link-down counters over the whole run, once it is over: a link that went down
// at least thresholds.link_downs_fail times is FAIL (flapping) whatever its re-test
// showed; one that went down only after its pair tests (re-tests, collectives) and was
// not found otherwise is named WARN intermittent, as nothing is left to re-test it.
void judge_link_downs(const SuConfig& config, const std::vector<std::string>& node_names,
                      const std::vector<std::vector<LinkStats>>& stats, std::vector<Finding>& findings);

// "node03 rail1 (leaf1)"
std::string link_name(const SuConfig& config, const std::vector<std::string>& node_names, LinkId link);

// Worst first: FAIL before WARN, then by measured/expected (furthest from expected first).
void sort_findings(std::vector<Finding>& findings);

// GB/s a rail's line rate allows (1 Gb/s = 0.125 GB/s).
inline double line_gbytes(const SuRail& rail) {
  return rail.line_rate_gbps / 8.0;
}

// What a cross-rail spot check must carry each way: bw_min_fraction of the slower rail's
// line rate (the verdict's judge, and phase 3's re-measure of the slow ones).
inline double cross_rail_need(const SuConfig& c, const PairResult& p) {
  return c.thresholds.bw_min_fraction * std::min(line_gbytes(c.rails[p.rail_a]), line_gbytes(c.rails[p.rail_b]));
}

}  // namespace railbench
