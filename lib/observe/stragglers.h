// Straggler attribution: who made each slow op slow. From every rank's op records
// (op_recorder.h), gathered to one place, and the ranks' clock offsets
// (clock_offsets.h), it names per op
//   the late arriver: the rank whose arrival gated the op, costing last arrival minus
//     the second-latest (what the op would have saved had that one rank been on time),
//     or the rank that stopped polling longest inside the op (a stopped or descheduled
//     host), costing its longest gap minus the second-longest;
//   the slow link: the (source node, destination node, rail) whose bytes / transfer time
//     is lowest against the op's median link rate, costing its transfer time minus what
//     its bytes take at the median rate. A message's transfer time runs from when both
//     sides had posted (max of send post and receive post, rank-0 time) to the receive's
//     completion, less any part of it when the sender or receiver was not polling (that
//     time is the host's, not the link's).
// Sends and receives are matched as the transport contract orders them: FIFO per
// (peer, rail), the k-th send a->b on rail r with b's k-th receive from a on r, within
// the same op. A blame no larger than the uncertainty of the clocks it compares is never
// made. Per run, ranks and links are ranked by total cost, with the share of iterations
// each was blamed in, and the verdict names the costliest one beyond the threshold.
// Pure: no I/O, no transport; it knows ops, ranks, nodes and rails, not commands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/observe/clock_offsets.h"
#include "lib/observe/op_recorder.h"

namespace railbench {

// Beyond it: the candidate cost more than `time_fraction` of an iteration's time in more
// than `iteration_fraction` of the iterations.
struct StragglerThreshold {
  double time_fraction = 0.10;
  double iteration_fraction = 0.25;
};
// "10%,25%" (or "0.1,0.25"; either part may be given alone: "20%" keeps 25%). UsageError
// naming the syntax otherwise.
StragglerThreshold parse_straggler_threshold(const std::string& text);
std::string to_string(const StragglerThreshold& t);  // "10%,25%"

struct StragglerInput {
  std::vector<RankOps> ranks;             // per rank, as recorded (its own clock)
  std::vector<ClockOffset> clocks;        // per rank; empty: all clocks are rank 0's
  std::vector<std::string> node_of_rank;  // per rank: its node's name ("node03")
  std::vector<std::string> rail_names;    // per rail ("eth1"); may be empty
  StragglerThreshold threshold;
};

// One op's verdicts. late_rank / slow_link are -1 when nobody was blamed.
struct OpBlame {
  OpKey key;
  int ranks = 0;      // ranks that recorded the op
  int64_t op_ns = 0;  // first arrival to last return, rank-0 time
  int late_rank = -1;
  int64_t late_ns = 0;
  std::string late_cause;  // "arrival" or "stall"
  int slow_link = -1;      // >= 0: a link was blamed (numbered in the order first blamed)
  std::string link_name;   // its name, as in StragglerReport::links
  int64_t link_ns = 0;
  double link_rate_ratio = 1;  // the link's rate / the op's median link rate
};

// A rank or a link, over the run.
struct Blamed {
  std::string name;                // "rank 3 (node02)", "node03 -> node04 rail 1 (eth1)"
  int rank = -1;                   // a rank's
  std::string src_node, dst_node;  // a link's
  int rail = -1;
  int64_t cost_ns = 0;          // summed over the ops it was blamed for
  int ops = 0;                  // ops blamed
  int iterations = 0;           // iterations in which it was blamed at least once
  int iterations_over = 0;      // ... and cost more than time_fraction of the iteration
  double worst_rate_ratio = 1;  // a link's lowest rate against its op's median
  bool beyond_threshold = false;
};

struct StragglerReport {
  StragglerThreshold threshold;
  int iterations = 0;
  int ops = 0;                  // ops recorded by two ranks or more
  uint64_t dropped_ops = 0;     // over the recorders' caps, summed over ranks
  uint64_t unmatched_msgs = 0;  // a send without its receive, or unseen completions
  int64_t max_uncertainty_ns = 0;
  int64_t iteration_ns_total = 0;
  std::vector<Blamed> ranks;       // ranked by cost, blamed ones only
  std::vector<Blamed> links;       // ranked by cost, blamed ones only
  std::vector<OpBlame> op_blames;  // ops with a blame, in op order
  std::string verdict_kind;        // "late_arriver", "slow_link" or "none"
  std::string verdict;             // one line naming the top one, or why none
};

StragglerReport analyse_stragglers(const StragglerInput& in);

// Moves `more` (one rank's records of a later stretch, its own clock) onto rank-0 time
// and appends it to `into` (already rank-0 time), so stretches measured with different
// offsets can be analysed together with all-zero offsets.
void append_in_rank0_time(RankOps& into, RankOps more, const ClockOffset& clock);

// The results' "stragglers" section (lib/results/README.md) and the printed table: the
// top `top` ranks and links and the verdict.
nlohmann::json to_json(const StragglerReport& r, size_t max_ops = 100);
std::vector<std::string> straggler_table(const StragglerReport& r, size_t top = 3);

}  // namespace railbench
