#include "lib/observe/stragglers.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "lib/core/stats.h"

namespace railbench {

namespace {

// One op as every rank that recorded it saw it, on rank 0's clock.
struct OpView {
  OpKey key;
  std::vector<int> ranks;             // participants
  std::vector<const OpRecord*> recs;  // per participant
  std::vector<int64_t> arrive, end;   // rank-0 time
  std::vector<int64_t> stall_from, stall_to;
};

// A link is slow in an op only below this share of the op's median link rate: links of a
// healthy TCP fabric on a busy host vary by 2x from op to op (the simulated SU's
// healthy ops reach 0.5 of the median often, 0.2 rarely), and a blame on every op's
// slowest link would be noise. Less than half is what a degraded link shows.
constexpr double kSlowLinkRatio = 0.5;

// A link's rate is judged only when its messages average this much: a few-byte notice
// or credit (kvcache's, a tiny collective's) takes a latency whatever the link's rate,
// and would otherwise always look like the slowest link.
constexpr uint64_t kMinJudgedMsgBytes = 4096;

using KeyTuple = std::tuple<uint32_t, uint32_t, std::string>;

struct LinkAcc {
  uint64_t bytes = 0;
  uint64_t msgs = 0;
  int64_t ns = 0;
  int64_t uncertainty_ns = 0;
  std::vector<std::pair<int64_t, int64_t>> spans;   // its messages' transfers
  std::vector<std::pair<int64_t, int64_t>> stalls;  // the sender's and receiver's longest polling gaps
};
using LinkKey = std::tuple<std::string, std::string, int>;  // src node, dst node, rail

int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  return std::max<int64_t>(0, std::min(a1, b1) - std::max(a0, b0));
}

// The time a link was carrying something: the union of its messages' transfers (queued
// messages overlap, and must not count twice), less the time its sender or receiver was
// not polling: software providers move data only inside poll, so a stopped host would
// otherwise look like a slow wire.
std::vector<std::pair<int64_t, int64_t>> merge(std::vector<std::pair<int64_t, int64_t>> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& s : v) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second)
      out.back().second = std::max(out.back().second, s.second);
    else
      out.push_back(s);
  }
  return out;
}

bool judged(const LinkAcc& a) {
  return a.ns > 0 && a.msgs > 0 && a.bytes / a.msgs >= kMinJudgedMsgBytes;
}

int64_t busy_ns(const LinkAcc& a) {
  const auto spans = merge(a.spans), stalls = merge(a.stalls);
  int64_t busy = 0;
  for (const auto& m : spans) {
    busy += m.second - m.first;
    for (const auto& st : stalls) busy -= overlap(m.first, m.second, st.first, st.second);
  }
  return std::max<int64_t>(0, busy);
}

class Analysis {
 public:
  explicit Analysis(const StragglerInput& in) : in_(in) {
    report_.threshold = in.threshold;
    for (const auto& c : in.clocks) report_.max_uncertainty_ns = std::max(report_.max_uncertainty_ns, c.uncertainty_ns);
  }
  StragglerReport run();

 private:
  ClockOffset clock(int r) const { return static_cast<size_t>(r) < in_.clocks.size() ? in_.clocks[r] : ClockOffset{}; }
  std::string node(int r) const {
    return static_cast<size_t>(r) < in_.node_of_rank.size() ? in_.node_of_rank[r] : fmt::format("rank{}", r);
  }
  std::vector<OpView> views();
  void blame_host(const OpView& v, OpBlame& b) const;
  void blame_link(const OpView& v, OpBlame& b);
  std::map<LinkKey, LinkAcc> link_times(const OpView& v);
  void add_write(const OpView& v, size_t i, const MsgRecord& w, std::map<LinkKey, LinkAcc>& links);
  void rank_and_judge(const std::map<uint32_t, int64_t>& iteration_ns);

  const StragglerInput& in_;
  StragglerReport report_;
  std::map<int, Blamed> ranks_;
  std::map<LinkKey, Blamed> links_;
  std::vector<LinkKey> link_index_;
  // Per (iteration, candidate) cost: the threshold is judged per iteration.
  std::map<std::pair<uint32_t, int>, int64_t> rank_iter_;
  std::map<std::pair<uint32_t, int>, int64_t> link_iter_;
};

std::vector<OpView> Analysis::views() {
  std::map<KeyTuple, OpView> by_key;
  for (size_t r = 0; r < in_.ranks.size(); ++r) {
    report_.dropped_ops += in_.ranks[r].dropped_ops;
    const ClockOffset c = clock(static_cast<int>(r));
    for (const OpRecord& op : in_.ranks[r].ops) {
      OpView& v = by_key[KeyTuple{op.key.iteration, op.key.index, std::string(op.key.name())}];
      v.key = op.key;
      v.ranks.push_back(static_cast<int>(r));
      v.recs.push_back(&op);
      v.arrive.push_back(to_rank0_ns(op.arrive_ns, c));
      v.end.push_back(to_rank0_ns(op.end_ns, c));
      v.stall_from.push_back(to_rank0_ns(op.stall_from_ns, c));
      v.stall_to.push_back(to_rank0_ns(op.stall_from_ns + op.stall_ns, c));
    }
  }
  std::vector<OpView> out;
  for (auto& [k, v] : by_key)
    if (v.ranks.size() >= 2) out.push_back(std::move(v));
  return out;
}

// The op's uncertainty: the two least certain clocks it compares.
int64_t pair_uncertainty(std::vector<int64_t> u) {
  std::sort(u.rbegin(), u.rend());
  return u.size() >= 2 ? u[0] + u[1] : (u.empty() ? 0 : u[0]);
}

// Last arrival against the second-latest, and the longest polling gap against the
// second-longest: the time the op would have saved had that one rank been like the rest.
void Analysis::blame_host(const OpView& v, OpBlame& b) const {
  const size_t n = v.ranks.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::vector<int64_t> unc;
  for (int r : v.ranks) unc.push_back(clock(r).uncertainty_ns);
  const int64_t u = pair_uncertainty(unc);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t c) { return v.arrive[a] > v.arrive[c]; });
  const int64_t late = v.key.flags & kOpArrivalsScheduled ? 0 : v.arrive[order[0]] - v.arrive[order[1]];
  std::sort(order.begin(), order.end(), [&](size_t a, size_t c) { return v.recs[a]->stall_ns > v.recs[c]->stall_ns; });
  const int64_t stall = v.recs[order[0]]->stall_ns - v.recs[order[1]]->stall_ns;
  const bool by_stall = stall > late;
  const int64_t cost = std::min(by_stall ? stall : late, b.op_ns);
  if (cost <= u || cost <= 0) return;
  size_t who = order[0];
  if (!by_stall) who = static_cast<size_t>(std::max_element(v.arrive.begin(), v.arrive.end()) - v.arrive.begin());
  b.late_rank = v.ranks[who];
  b.late_ns = cost;
  b.late_cause = by_stall ? "stall" : "arrival";
}

// Per link of the op: bytes and transfer time of its matched messages and its writes.
std::map<LinkKey, LinkAcc> Analysis::link_times(const OpView& v) {
  std::map<int, size_t> at;  // rank -> index in the view
  for (size_t i = 0; i < v.ranks.size(); ++i) at[v.ranks[i]] = i;
  // (src, dst, rail) -> the sender's messages in post order.
  std::map<std::tuple<int, int, int>, std::vector<const MsgRecord*>> sends, recvs;
  std::map<LinkKey, LinkAcc> links;
  for (size_t i = 0; i < v.ranks.size(); ++i) {
    const RankOps& ro = in_.ranks[static_cast<size_t>(v.ranks[i])];
    for (uint32_t m = v.recs[i]->first_msg; m < v.recs[i]->first_msg + v.recs[i]->msgs && m < ro.msgs.size(); ++m) {
      const MsgRecord& msg = ro.msgs[m];
      if (msg.dir == MsgDir::write)
        add_write(v, i, msg, links);
      else if (msg.dir == MsgDir::send)
        sends[{v.ranks[i], msg.peer, msg.rail}].push_back(&msg);
      else
        recvs[{msg.peer, v.ranks[i], msg.rail}].push_back(&msg);
    }
  }
  for (const auto& [k, sv] : sends) {
    const auto [src, dst, rail] = k;
    const auto rit = recvs.find(k);
    const size_t matched = rit == recvs.end() || !at.count(dst) ? 0 : std::min(sv.size(), rit->second.size());
    report_.unmatched_msgs += sv.size() - matched;
    if (matched == 0) continue;
    const ClockOffset cs = clock(src), cd = clock(dst);
    const size_t is = at[src], id = at[dst];
    LinkAcc& acc = links[LinkKey{node(src), node(dst), rail}];
    acc.uncertainty_ns = std::max(acc.uncertainty_ns, cs.uncertainty_ns + cd.uncertainty_ns);
    for (size_t j = 0; j < matched; ++j) {
      const MsgRecord& s = *sv[j];
      const MsgRecord& r = *rit->second[j];
      if (r.done_ns == 0) {
        ++report_.unmatched_msgs;
        continue;
      }
      const int64_t start = std::max(to_rank0_ns(s.post_ns, cs), to_rank0_ns(r.post_ns, cd));
      const int64_t end = to_rank0_ns(r.done_ns, cd);
      acc.bytes += s.bytes;
      ++acc.msgs;
      if (end > start) acc.spans.emplace_back(start, end);
    }
    acc.stalls.emplace_back(v.stall_from[is], v.stall_to[is]);
    acc.stalls.emplace_back(v.stall_from[id], v.stall_to[id]);
  }
  for (auto& [k, acc] : links) acc.ns = busy_ns(acc);
  for (const auto& [k, rv] : recvs) {
    if (!sends.count(k)) report_.unmatched_msgs += rv.size();
  }
  return links;
}

// A one-sided write is timed by its writer alone, post to completion (it completes once
// the data landed): one clock, so no offset uncertainty; the writer's polling gap is
// left out as for a send. The target posts nothing, so nothing is matched.
void Analysis::add_write(const OpView& v, size_t i, const MsgRecord& w, std::map<LinkKey, LinkAcc>& links) {
  if (w.done_ns == 0) {
    ++report_.unmatched_msgs;
    return;
  }
  const int src = v.ranks[i];
  const ClockOffset c = clock(src);
  LinkAcc& acc = links[LinkKey{node(src), node(w.peer), w.rail}];
  acc.bytes += w.bytes;
  ++acc.msgs;
  const int64_t start = to_rank0_ns(w.post_ns, c), end = to_rank0_ns(w.done_ns, c);
  if (end > start) acc.spans.emplace_back(start, end);
  if (acc.stalls.empty() || acc.stalls.back() != std::make_pair(v.stall_from[i], v.stall_to[i]))
    acc.stalls.emplace_back(v.stall_from[i], v.stall_to[i]);
}

void Analysis::blame_link(const OpView& v, OpBlame& b) {
  const auto links = link_times(v);
  std::vector<double> rates;
  for (const auto& [k, a] : links)
    if (judged(a)) rates.push_back(static_cast<double>(a.bytes) / static_cast<double>(a.ns));
  if (rates.size() < 2) return;  // nothing to compare with
  const double median_rate = median(rates);
  const LinkKey* worst = nullptr;
  double worst_ratio = 1;
  int64_t worst_cost = 0;
  for (const auto& [k, a] : links) {
    if (!judged(a)) continue;
    const double ratio = static_cast<double>(a.bytes) / static_cast<double>(a.ns) / median_rate;
    const auto cost =
        std::min<int64_t>(b.op_ns, a.ns - static_cast<int64_t>(static_cast<double>(a.bytes) / median_rate));
    if (ratio < worst_ratio && ratio < kSlowLinkRatio && cost > a.uncertainty_ns && cost > 0) {
      worst = &k;
      worst_ratio = ratio;
      worst_cost = cost;
    }
  }
  if (!worst) return;
  auto it = std::find(link_index_.begin(), link_index_.end(), *worst);
  if (it == link_index_.end()) it = link_index_.insert(link_index_.end(), *worst);
  b.slow_link = static_cast<int>(it - link_index_.begin());
  b.link_ns = worst_cost;
  b.link_rate_ratio = worst_ratio;
}

std::string rail_label(const StragglerInput& in, int rail) {
  return static_cast<size_t>(rail) < in.rail_names.size() && !in.rail_names[rail].empty()
             ? fmt::format("rail {} ({})", rail, in.rail_names[rail])
             : fmt::format("rail {}", rail);
}

void count(Blamed& b, std::map<std::pair<uint32_t, int>, int64_t>& per_iter, uint32_t iteration, int id, int64_t cost) {
  b.cost_ns += cost;
  ++b.ops;
  per_iter[{iteration, id}] += cost;
}

void Analysis::rank_and_judge(const std::map<uint32_t, int64_t>& iteration_ns) {
  const StragglerThreshold& t = in_.threshold;
  auto judge = [&](Blamed& b, const std::map<std::pair<uint32_t, int>, int64_t>& per_iter, int id) {
    for (const auto& [k, cost] : per_iter) {
      if (k.second != id) continue;
      ++b.iterations;
      const auto it = iteration_ns.find(k.first);
      if (it != iteration_ns.end() && static_cast<double>(cost) > t.time_fraction * static_cast<double>(it->second))
        ++b.iterations_over;
    }
    b.beyond_threshold = static_cast<double>(b.iterations_over) > t.iteration_fraction * report_.iterations;
  };
  for (auto& [r, b] : ranks_) {
    judge(b, rank_iter_, r);
    report_.ranks.push_back(b);
  }
  for (size_t i = 0; i < link_index_.size(); ++i) {
    Blamed& b = links_[link_index_[i]];
    judge(b, link_iter_, static_cast<int>(i));
    report_.links.push_back(b);
  }
  auto by_cost = [](const Blamed& a, const Blamed& b) { return a.cost_ns > b.cost_ns; };
  std::sort(report_.ranks.begin(), report_.ranks.end(), by_cost);
  std::sort(report_.links.begin(), report_.links.end(), by_cost);
  const Blamed* top = nullptr;
  bool top_is_rank = false;
  for (const auto& b : report_.ranks)
    if (b.beyond_threshold && (!top || b.cost_ns > top->cost_ns)) top = &b, top_is_rank = true;
  for (const auto& b : report_.links)
    if (b.beyond_threshold && (!top || b.cost_ns > top->cost_ns)) top = &b, top_is_rank = false;
  if (!top) {
    report_.verdict_kind = "none";
    report_.verdict = fmt::format(
        "no straggler: no rank or link cost more than {:.0f}% of an iteration in more than {:.0f}% of {} iterations",
        t.time_fraction * 100, t.iteration_fraction * 100, report_.iterations);
    return;
  }
  report_.verdict_kind = top_is_rank ? "late_arriver" : "slow_link";
  report_.verdict = fmt::format(
      "{} {}: cost {:.3f} ms in {} ops; more than {:.0f}% of the iteration in {} of {} iterations ({:.0f}%)",
      top_is_rank ? "late arriver" : "slow link", top->name, static_cast<double>(top->cost_ns) / 1e6, top->ops,
      t.time_fraction * 100, top->iterations_over, report_.iterations,
      100.0 * top->iterations_over / std::max(report_.iterations, 1));
}

StragglerReport Analysis::run() {
  std::map<uint32_t, std::pair<int64_t, int64_t>> iter_span;  // iteration -> first arrival, last return
  for (const OpView& v : views()) {
    ++report_.ops;
    OpBlame b;
    b.key = v.key;
    b.ranks = static_cast<int>(v.ranks.size());
    const int64_t first = *std::min_element(v.arrive.begin(), v.arrive.end());
    const int64_t last = *std::max_element(v.end.begin(), v.end.end());
    b.op_ns = std::max<int64_t>(0, last - first);
    auto [span, fresh] = iter_span.try_emplace(v.key.iteration, first, last);
    if (!fresh) span->second = {std::min(span->second.first, first), std::max(span->second.second, last)};
    blame_host(v, b);
    blame_link(v, b);
    if (b.late_rank >= 0) {
      Blamed& r = ranks_[b.late_rank];
      r.rank = b.late_rank;
      r.name = fmt::format("rank {} ({})", b.late_rank, node(b.late_rank));
      count(r, rank_iter_, v.key.iteration, b.late_rank, b.late_ns);
    }
    if (b.slow_link >= 0) {
      const LinkKey& k = link_index_[static_cast<size_t>(b.slow_link)];
      Blamed& l = links_[k];
      std::tie(l.src_node, l.dst_node, l.rail) = k;
      l.name = fmt::format("{} -> {} {}", l.src_node, l.dst_node, rail_label(in_, l.rail));
      l.worst_rate_ratio = l.ops == 0 ? b.link_rate_ratio : std::min(l.worst_rate_ratio, b.link_rate_ratio);
      b.link_name = l.name;
      count(l, link_iter_, v.key.iteration, b.slow_link, b.link_ns);
    }
    if (b.late_rank >= 0 || b.slow_link >= 0) report_.op_blames.push_back(b);
  }
  std::map<uint32_t, int64_t> iteration_ns;
  for (const auto& [it, s] : iter_span) {
    iteration_ns[it] = s.second - s.first;
    report_.iteration_ns_total += s.second - s.first;
  }
  report_.iterations = static_cast<int>(iteration_ns.size());
  rank_and_judge(iteration_ns);
  return report_;
}

}  // namespace

StragglerReport analyse_stragglers(const StragglerInput& in) {
  return Analysis(in).run();
}

void append_in_rank0_time(RankOps& into, RankOps more, const ClockOffset& clock) {
  const auto base = static_cast<uint32_t>(into.msgs.size());
  for (OpRecord& op : more.ops) {
    op.arrive_ns = to_rank0_ns(op.arrive_ns, clock);
    op.end_ns = to_rank0_ns(op.end_ns, clock);
    op.stall_from_ns = to_rank0_ns(op.stall_from_ns, clock);
    op.first_msg += base;
    into.ops.push_back(op);
  }
  for (MsgRecord& m : more.msgs) {
    m.post_ns = to_rank0_ns(m.post_ns, clock);
    if (m.done_ns != 0) m.done_ns = to_rank0_ns(m.done_ns, clock);
    into.msgs.push_back(m);
  }
  into.dropped_ops += more.dropped_ops;
}

}  // namespace railbench
