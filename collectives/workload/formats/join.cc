// to_trace: the ranks' files joined into one Trace, refused before any traffic when they
// disagree (process groups, a group's collectives, a send without its receive).
#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "collectives/workload/formats/import.h"
#include "lib/core/errors.h"

namespace railbench::workload::formats {

namespace {

std::string nth(size_t i) {
  const size_t n = i + 1;
  const char* s = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                  : n % 10 == 1                    ? "st"
                  : n % 10 == 2                    ? "nd"
                  : n % 10 == 3                    ? "rd"
                                                   : "th";
  return fmt::format("{}{}", n, s);
}

// "an all_gather of 64 bytes", "a reduce_scatter of 64 bytes".
std::string what(const Item& it) {
  const char* name = to_string(it.op);
  return fmt::format("{} {} of {} bytes", name[0] == 'a' ? "an" : "a", name, it.bytes);
}

using Groups = std::map<std::string, ProcessGroup>;

// Process groups merged over the files: one name, one set of ranks.
Groups merge_groups(const std::vector<RankTrace>& ranks) {
  const int world = static_cast<int>(ranks.size());
  Groups out;
  std::map<std::string, std::string> from;
  for (const RankTrace& r : ranks)
    for (ProcessGroup pg : r.pgs) {
      if (pg.ranks.empty()) {
        pg.ranks.resize(static_cast<size_t>(world));
        std::iota(pg.ranks.begin(), pg.ranks.end(), 0);
      }
      for (int x : pg.ranks)
        if (x < 0 || x >= world)
          throw UsageError(
              fmt::format("{}: process group '{}' names rank {}, but the trace has files for {} ranks "
                          "(0..{}): give every rank's file, or launch as many ranks as the job had",
                          r.file, pg.name, x, world, world - 1));
      const auto [it, fresh] = out.emplace(pg.name, pg);
      if (fresh) {
        from[pg.name] = r.file;
      } else if (it->second.ranks != pg.ranks) {
        throw UsageError(
            fmt::format("{}: process group '{}' has ranks [{}] but {} says [{}]: the files come from "
                        "different jobs; record every rank of one step",
                        r.file, pg.name, fmt::join(pg.ranks, ","), from[pg.name], fmt::join(it->second.ranks, ",")));
      }
    }
  return out;
}

// Per process group and member: the member's collectives on it, in issue order.
using Sequences = std::map<std::string, std::map<int, std::vector<const Item*>>>;

Sequences collect(const std::vector<RankTrace>& ranks, const Groups& groups) {
  Sequences seq;
  for (size_t r = 0; r < ranks.size(); ++r)
    for (const Item& it : ranks[r].items) {
      if (it.kind != ItemKind::collective) continue;
      const auto g = groups.find(it.pg);
      if (g == groups.end())
        throw UsageError(
            fmt::format("{}: node {}: \"{}\" '{}' names no process group the trace defines: record the "
                        "trace with its process groups (PyTorch's process_group:init)",
                        ranks[r].file, it.node, ranks[r].fields.pg, it.pg));
      const auto& members = g->second.ranks;
      if (std::find(members.begin(), members.end(), static_cast<int>(r)) == members.end())
        throw UsageError(
            fmt::format("{}: node {}: \"{}\" '{}' is a process group of ranks [{}], which rank {} is "
                        "not one of: the file is not rank {}'s, or the groups are from another job",
                        ranks[r].file, it.node, ranks[r].fields.pg, it.pg, fmt::join(members, ","), r, r));
      seq[it.pg][static_cast<int>(r)].push_back(&it);
    }
  return seq;
}

// Every member issues the same collectives on a group, in the same order, of the same
// type and size (all-to-all-v: the same type, and a split per member).
void check_sequences(const std::vector<RankTrace>& ranks, const Groups& groups, Sequences& seq) {
  for (auto& [name, per] : seq) {
    const auto& members = groups.at(name).ranks;
    if (members.size() < 2) continue;
    const int m0 = per.begin()->first;
    const auto& ref = per.begin()->second;
    for (int m : members) {
      const auto& mine = per[m];
      const auto& f = ranks[static_cast<size_t>(m)].file;
      for (size_t i = 0; i < std::min(ref.size(), mine.size()); ++i) {
        const Item& a = *ref[i];
        const Item& b = *mine[i];
        if (a.op == b.op && (a.op == OpType::all_to_all_v || a.bytes == b.bytes)) continue;
        throw UsageError(
            fmt::format("{}: node {}: rank {}'s {} collective on pg {} is {}, rank {}'s ({} node {}) "
                        "{}: every member of a process group must issue the same collectives in the "
                        "same order (\"{}\")",
                        f, b.node, m, nth(i), name, what(b), m0, ranks[static_cast<size_t>(m0)].file, a.node, what(a),
                        ranks[static_cast<size_t>(m)].fields.bytes));
      }
      if (mine.size() != ref.size())
        throw UsageError(
            fmt::format("{}: rank {} issues {} collectives on pg {}, rank {} ({}) issues {}: every member "
                        "of a process group must issue the same collectives",
                        f, m, mine.size(), name, m0, ranks[static_cast<size_t>(m0)].file, ref.size()));
    }
  }
}

// Every send has its receive, of the same size, on the peer, in the same order.
void check_p2p(const std::vector<RankTrace>& ranks) {
  const int world = static_cast<int>(ranks.size());
  std::map<std::pair<int, int>, std::pair<std::vector<const Item*>, std::vector<const Item*>>> chan;
  for (int r = 0; r < world; ++r)
    for (const Item& it : ranks[static_cast<size_t>(r)].items) {
      if (it.kind != ItemKind::send && it.kind != ItemKind::recv) continue;
      const bool send = it.kind == ItemKind::send;
      const auto& fields = ranks[static_cast<size_t>(r)].fields;
      if (it.peer < 0 || it.peer >= world || it.peer == r)
        throw UsageError(fmt::format("{}: node {}: \"{}\" is rank {}, which is {} (the trace has {} ranks, 0..{})",
                                     ranks[static_cast<size_t>(r)].file, it.node, send ? fields.dst : fields.src,
                                     it.peer, it.peer == r ? "this rank itself" : "no rank of the trace", world,
                                     world - 1));
      auto& c = send ? chan[{r, it.peer}] : chan[{it.peer, r}];
      (send ? c.first : c.second).push_back(&it);
    }
  for (const auto& [pair, c] : chan) {
    const auto [a, b] = pair;
    const auto& fa = ranks[static_cast<size_t>(a)];
    const auto& fb = ranks[static_cast<size_t>(b)];
    for (size_t k = 0; k < std::max(c.first.size(), c.second.size()); ++k) {
      if (k >= c.second.size())
        throw UsageError(
            fmt::format("{}: node {}: rank {}'s {} send to rank {} ({} bytes) has no receive on rank {} "
                        "({} receives {} from rank {}): every send needs its receive on the peer",
                        fa.file, c.first[k]->node, a, nth(k), b, c.first[k]->bytes, b, fb.file, c.second.size(), a));
      if (k >= c.first.size())
        throw UsageError(
            fmt::format("{}: node {}: rank {}'s {} receive from rank {} has no send on rank {} ({} sends "
                        "{} to rank {}): every receive needs its send on the peer",
                        fb.file, c.second[k]->node, b, nth(k), a, a, fa.file, c.first.size(), b));
      if (c.first[k]->bytes != c.second[k]->bytes)
        throw UsageError(
            fmt::format("{}: node {}: \"{}\": rank {}'s {} send to rank {} is {} bytes but its receive "
                        "({} node {}) is {} bytes: a message's two ends must agree",
                        fa.file, c.first[k]->node, fa.fields.bytes, a, nth(k), b, c.first[k]->bytes, fb.file,
                        c.second[k]->node, c.second[k]->bytes));
    }
  }
}

}  // namespace

namespace {

struct Build {
  const std::map<std::string, int>& index;
  const Trace& t;
  const ImportOptions& o;
  std::map<std::string, uint64_t>& skipped;
};

Op collective_op(const Item& it, const Build& b) {
  Op op;
  op.type = it.op;
  op.group = b.index.at(it.pg);
  const GroupDef& g = b.t.groups[static_cast<size_t>(op.group)];
  op.kind = g.kind;
  op.bytes = it.bytes;
  op.async = it.async;
  if (it.op == OpType::all_to_all_v) {
    op.split_bytes = it.split_bytes;
    if (op.split_bytes.empty()) op.split_bytes.assign(g.ranks.size(), it.bytes / g.ranks.size());
    op.bytes = 0;
  }
  return op;
}

// One rank's items as ops: compute scaled, a send and a receive posted together fused
// into one exchange, waits only where an async op is outstanding.
std::vector<Op> rank_ops(const RankTrace& r, const Build& b) {
  std::vector<Op> ops;
  bool pending = false;
  const auto& items = r.items;
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    Op op;
    op.label = it.label.empty() ? fmt::format("node {}", it.node) : it.label;
    if (it.kind == ItemKind::compute) {
      op.us = it.us * b.o.compute_scale;
      if (b.o.no_compute || op.us <= 0) continue;
    } else if (it.kind == ItemKind::wait) {
      if (!pending) continue;
      op.type = OpType::wait;
      pending = false;
    } else if (it.kind == ItemKind::collective) {
      if (!b.index.count(it.pg)) {
        ++b.skipped["collectives on a one-rank process group"];
        continue;
      }
      const std::string label = op.label;
      op = collective_op(it, b);
      op.label = label;
      pending = pending || op.async;
    } else {
      const bool send = it.kind == ItemKind::send;
      op.type = send ? OpType::send : OpType::recv;
      op.kind = GroupKind::pp;
      (send ? op.peer : op.from) = it.peer;
      (send ? op.bytes : op.recv_bytes) = it.bytes;
      const bool fuse = i + 1 < items.size() && !items[i + 1].after_prev && it.pairable && items[i + 1].pairable &&
                        items[i + 1].kind == (send ? ItemKind::recv : ItemKind::send);
      if (fuse) {
        const Item& next = items[++i];
        op.type = OpType::sendrecv;
        (send ? op.from : op.peer) = next.peer;
        (send ? op.recv_bytes : op.bytes) = next.bytes;
      }
    }
    ops.push_back(std::move(op));
  }
  if (pending) ops.push_back(Op{OpType::wait});
  return ops;
}

}  // namespace

Trace to_trace(const std::vector<RankTrace>& ranks, const ImportOptions& o) {
  if (ranks.empty()) throw UsageError("the trace has no rank's file");
  const Groups groups = merge_groups(ranks);
  Sequences seq = collect(ranks, groups);
  check_sequences(ranks, groups, seq);
  check_p2p(ranks);
  Trace t;
  t.world = static_cast<int>(ranks.size());
  t.dtype = "bf16";
  for (const RankTrace& r : ranks)
    if (!r.dtype.empty()) {
      t.dtype = r.dtype;
      break;
    }
  std::map<std::string, int> index;
  for (const auto& [name, pg] : groups) {
    if (pg.ranks.size() < 2) continue;  // nothing to exchange: its collectives are dropped, counted
    index[name] = static_cast<int>(t.groups.size());
    // "pg3:dp1": the trace's name, and its description where it has one.
    const std::string shown = pg.desc.empty() || pg.desc == "undefined" ? "pg" + name : "pg" + name + ":" + pg.desc;
    t.groups.push_back(GroupDef{shown, guess_kind(pg, t.world), pg.ranks});
  }
  std::map<std::string, uint64_t> skipped;
  for (const RankTrace& r : ranks)
    for (const auto& [why, n] : r.skipped) skipped[why] += n;
  const Build b{index, t, o, skipped};
  for (const RankTrace& r : ranks) t.ranks.push_back(rank_ops(r, b));
  t.meta = {{"source", ranks[0].format}, {"trace_world", t.world}, {"skipped", skipped}};
  if (o.compute_scale != 1) t.meta["compute_scale"] = o.compute_scale;
  if (o.no_compute) t.meta["no_compute"] = true;
  return t;
}

}  // namespace railbench::workload::formats
