// check_trace: the trace run symbolically before any transport opens, so that a trace
// that would hang (a send without its receive, ranks issuing a group's collectives in a
// different order) is refused with the ranks and ops named instead of timing out.
#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "collectives/moe_routing.h"
#include "collectives/workload/trace.h"
#include "lib/core/errors.h"

namespace railbench::workload {

namespace {

bool is_collective(OpType t) {
  return t == OpType::all_reduce || t == OpType::reduce_scatter || t == OpType::all_gather || t == OpType::all_to_all_v;
}

std::string op_name(const Trace& t, int rank, size_t pc) {
  const Op& op = t.ranks[static_cast<size_t>(rank)][pc];
  std::string s = fmt::format("rank {} op {} ({}", rank, pc, to_string(op.type));
  if (op.group >= 0) s += " on " + t.groups[static_cast<size_t>(op.group)].name;
  if (op.type == OpType::send || op.type == OpType::sendrecv) s += fmt::format(" to {}", op.peer);
  if (op.type == OpType::recv || op.type == OpType::sendrecv) s += fmt::format(" from {}", op.from);
  if (!op.label.empty()) s += " " + op.label;
  return s + ")";
}

// Messages per directed pair: sizes as sent, and how many receives were posted.
struct Channel {
  std::vector<uint64_t> sent;
  std::vector<uint64_t> posted_recvs;
};

class Simulation {
 public:
  explicit Simulation(const Trace& t) : t_(t), pc_(static_cast<size_t>(t.world), 0), posted_(pc_.size(), false) {
    for (const auto& g : t.groups) {
      members_.emplace_back(g.ranks.size(), -1);
      first_.emplace_back();
    }
    done_.assign(t.groups.size(), 0);
    seq_.assign(static_cast<size_t>(t.world), std::vector<long>(t.groups.size(), 0));
  }

  void run() {
    for (bool progress = true; progress;) {
      progress = false;
      for (int r = 0; r < t_.world; ++r)
        while (pc_[static_cast<size_t>(r)] < t_.ranks[static_cast<size_t>(r)].size() && step(r)) progress = true;
    }
    std::vector<std::string> stuck;
    for (int r = 0; r < t_.world; ++r)
      if (pc_[static_cast<size_t>(r)] < t_.ranks[static_cast<size_t>(r)].size())
        stuck.push_back(op_name(t_, r, pc_[static_cast<size_t>(r)]));
    if (stuck.empty()) return;
    std::string list;
    for (size_t i = 0; i < std::min<size_t>(stuck.size(), 4); ++i) list += (i ? "; " : "") + stuck[i];
    if (stuck.size() > 4) list += fmt::format("; and {} more", stuck.size() - 4);
    throw UsageError(
        fmt::format("the trace deadlocks: {} rank(s) wait forever: {}: every send needs its receive on "
                    "the peer, and a group's members must issue its collectives in the same order",
                    stuck.size(), list));
  }

 private:
  // Posts rank r's current op once, then says whether it completed.
  bool step(int r) {
    const size_t pc = pc_[static_cast<size_t>(r)];
    const Op& op = t_.ranks[static_cast<size_t>(r)][pc];
    if (!posted_[static_cast<size_t>(r)]) post(r, op, pc);
    posted_[static_cast<size_t>(r)] = true;
    if (!complete(r, op)) return false;
    posted_[static_cast<size_t>(r)] = false;
    ++pc_[static_cast<size_t>(r)];
    return true;
  }

  void post(int r, const Op& op, size_t pc) {
    if (op.type == OpType::send || op.type == OpType::sendrecv) {
      Channel& c = channels_[{r, op.peer}];
      my_send_[r] = c.sent.size();
      c.sent.push_back(op.bytes);
      match(r, op.peer);
    }
    if (op.type == OpType::recv || op.type == OpType::sendrecv) {
      Channel& c = channels_[{op.from, r}];
      my_recv_[r] = c.posted_recvs.size();
      c.posted_recvs.push_back(op.recv_bytes);
      match(op.from, r);
    }
    if (is_collective(op.type)) arrive(r, op, pc);
  }

  // Sizes of matched messages must agree.
  void match(int from, int to) {
    const Channel& c = channels_[{from, to}];
    const size_t k = std::min(c.sent.size(), c.posted_recvs.size());
    if (k == 0 || c.sent[k - 1] == c.posted_recvs[k - 1]) return;
    throw UsageError(
        fmt::format("the trace's message {} from rank {} to rank {} is sent with {} bytes but received "
                    "with {}: make the send's \"bytes\" and the receive's \"recv_bytes\" agree",
                    k - 1, from, to, c.sent[k - 1], c.posted_recvs[k - 1]));
  }

  void arrive(int r, const Op& op, size_t pc) {
    const size_t g = static_cast<size_t>(op.group);
    const auto& ranks = t_.groups[g].ranks;
    const auto it = std::find(ranks.begin(), ranks.end(), r);
    if (it == ranks.end())
      throw UsageError(
          fmt::format("{} names group {}, which rank {} is not a member of: add it to the group's "
                      "\"ranks\" or drop the op",
                      op_name(t_, r, pc), t_.groups[g].name, r));
    const long seq = seq_[static_cast<size_t>(r)][g]++;
    members_[g][static_cast<size_t>(it - ranks.begin())] = seq;
    // The first member to reach instance `seq` sets what the others must issue.
    if (first_[g].size() <= static_cast<size_t>(seq)) first_[g].resize(static_cast<size_t>(seq) + 1, {-1, 0});
    auto& first = first_[g][static_cast<size_t>(seq)];
    if (first.first < 0) {
      first = {r, pc};
      return;
    }
    const Op& ref = t_.ranks[static_cast<size_t>(first.first)][first.second];
    if (ref.type != op.type || (op.type != OpType::all_to_all_v && ref.bytes != op.bytes))
      throw UsageError(
          fmt::format("{} and {} are the same collective call of group {} but differ in type or bytes: "
                      "a group's members must issue the same collectives in the same order",
                      op_name(t_, first.first, first.second), op_name(t_, r, pc), t_.groups[g].name));
    if (std::all_of(members_[g].begin(), members_[g].end(), [&](long s) { return s == seq; })) done_[g] = seq + 1;
  }

  bool complete(int r, const Op& op) {
    if (op.type == OpType::send || op.type == OpType::sendrecv) {
      if (channels_[{r, op.peer}].posted_recvs.size() <= my_send_[r]) return false;
    }
    if (op.type == OpType::recv || op.type == OpType::sendrecv) {
      if (channels_[{op.from, r}].sent.size() <= my_recv_[r]) return false;
    }
    if (is_collective(op.type)) {
      const size_t g = static_cast<size_t>(op.group);
      return done_[g] >= seq_[static_cast<size_t>(r)][g];
    }
    return true;
  }

  const Trace& t_;
  std::vector<size_t> pc_;
  std::vector<bool> posted_;
  std::map<std::pair<int, int>, Channel> channels_;
  std::map<int, size_t> my_send_, my_recv_;                 // index of rank's pending send / receive in its channel
  std::vector<std::vector<long>> members_;                  // per group, per member: the instance it waits in
  std::vector<std::vector<std::pair<int, size_t>>> first_;  // per group, per instance: first arriver's op
  std::vector<long> done_;                                  // per group: instances completed
  std::vector<std::vector<long>> seq_;                      // per rank, per group: instances issued
};

// Routed all-to-all-v ops: the distribution parses (a weights file is read) and fits
// every EP group they run on.
void check_routing(const Trace& t) {
  std::vector<bool> checked(t.groups.size(), false);
  bool parsed = false;
  MoeRoutingOptions o;
  for (const auto& ops : t.ranks)
    for (const Op& op : ops) {
      if (op.type != OpType::all_to_all_v || op.tokens == 0 || checked[static_cast<size_t>(op.group)]) continue;
      if (!parsed) {
        o.routing = parse_routing(t.routing.distribution);
        o.experts = t.routing.experts;
        o.topk = t.routing.topk;
        parsed = true;
      }
      checked[static_cast<size_t>(op.group)] = true;
      validate_routing(o, static_cast<int>(t.groups[static_cast<size_t>(op.group)].ranks.size()));
    }
}

}  // namespace

void check_trace(const Trace& t) {
  if (static_cast<int>(t.ranks.size()) != t.world)
    throw UsageError(fmt::format("the trace has op lists for {} ranks but a world of {}", t.ranks.size(), t.world));
  for (int r = 0; r < t.world; ++r)
    for (size_t pc = 0; pc < t.ranks[static_cast<size_t>(r)].size(); ++pc) {
      const Op& op = t.ranks[static_cast<size_t>(r)][pc];
      if ((op.type == OpType::send || op.type == OpType::sendrecv) && op.peer == r)
        throw UsageError(fmt::format("{} sends to itself: name another rank as \"peer\"", op_name(t, r, pc)));
      if ((op.type == OpType::recv || op.type == OpType::sendrecv) && op.from == r)
        throw UsageError(fmt::format("{} receives from itself: name another rank as \"from\"", op_name(t, r, pc)));
    }
  check_routing(t);
  Simulation(t).run();
}

}  // namespace railbench::workload
