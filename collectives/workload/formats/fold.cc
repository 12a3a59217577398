// --fold K: a trace recorded on K x N ranks replayed on N. Job rank j plays trace rank
// j*K; what the other trace ranks did is not replayed (their traffic is not on the wire).
#include <fmt/format.h>

#include "collectives/workload/formats/import.h"
#include "lib/core/errors.h"

namespace railbench::workload::formats {

namespace {

struct Folded {
  std::vector<int> group;                 // old group -> new group (-1: fewer than two replayed members)
  std::vector<std::vector<size_t>> kept;  // old group -> member positions kept
  uint64_t collectives = 0, p2p = 0;      // dropped ops
};

// An op of a replayed trace rank, remapped; false when it is dropped.
bool fold_op(Op& op, int k, Folded& f) {
  if (op.group >= 0) {
    const int g = f.group[static_cast<size_t>(op.group)];
    if (g < 0) return ++f.collectives, false;
    if (!op.split_bytes.empty()) {
      std::vector<uint64_t> split;
      for (size_t m : f.kept[static_cast<size_t>(op.group)]) split.push_back(op.split_bytes[m]);
      op.split_bytes = std::move(split);
    }
    op.group = g;
    return true;
  }
  const bool sends = op.type == OpType::send || op.type == OpType::sendrecv;
  const bool recvs = op.type == OpType::recv || op.type == OpType::sendrecv;
  const bool send_kept = sends && op.peer % k == 0, recv_kept = recvs && op.from % k == 0;
  if (!sends && !recvs) return true;
  f.p2p += (sends && !send_kept) + (recvs && !recv_kept);
  if (!send_kept && !recv_kept) return false;
  if (send_kept) op.peer /= k;
  if (recv_kept) op.from /= k;
  op.type = send_kept && recv_kept ? OpType::sendrecv : send_kept ? OpType::send : OpType::recv;
  if (!send_kept) op.peer = -1, op.bytes = 0;
  if (!recv_kept) op.from = -1, op.recv_bytes = 0;
  return true;
}

}  // namespace

Trace fold_trace(const Trace& t, int k) {
  if (k < 1)
    throw UsageError(fmt::format("--fold {}: give how many trace ranks one job rank stands for (1 or more)", k));
  if (k == 1) return t;
  if (t.world % k)
    throw UsageError(fmt::format("--fold {}: the trace's {} ranks are not a multiple of {}: fold by a divisor of {}", k,
                                 t.world, k, t.world));
  Trace out;
  out.world = t.world / k;
  out.dtype = t.dtype;
  out.routing = t.routing;
  out.meta = t.meta;
  Folded f;
  for (const GroupDef& g : t.groups) {
    GroupDef n{g.name, g.kind, {}};
    std::vector<size_t> kept;
    for (size_t m = 0; m < g.ranks.size(); ++m)
      if (g.ranks[m] % k == 0) n.ranks.push_back(g.ranks[m] / k), kept.push_back(m);
    f.group.push_back(n.ranks.size() >= 2 ? static_cast<int>(out.groups.size()) : -1);
    f.kept.push_back(std::move(kept));
    if (n.ranks.size() >= 2) out.groups.push_back(std::move(n));
  }
  for (int j = 0; j < out.world; ++j) {
    std::vector<Op> ops;
    for (Op op : t.ranks[static_cast<size_t>(j * k)])
      if (fold_op(op, k, f)) ops.push_back(std::move(op));
    out.ranks.push_back(std::move(ops));
  }
  out.meta["fold"] = {
      {"k", k}, {"trace_world", t.world}, {"dropped_collectives", f.collectives}, {"dropped_p2p", f.p2p}};
  return out;
}

}  // namespace railbench::workload::formats
