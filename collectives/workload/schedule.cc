#include "collectives/workload/schedule.h"

#include <algorithm>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::workload {

namespace {

struct LayerGroup {
  int first = 0, count = 0, moe = 0;  // global first layer, layers, MoE layers among them
};

// Everything one rank's schedule needs, resolved once.
class RankSchedule {
 public:
  RankSchedule(const TrainModel& m, const StepSpec& s, const RankMap& map, int rank, int layers)
      : m_(m), s_(s), map_(map), rank_(rank), c_(map.coords[static_cast<size_t>(rank)]) {
    const int per_stage = layers / s.shape.pp;
    for (int first = c_.pp * per_stage; first < (c_.pp + 1) * per_stage; first += s.layers_per_op) {
      LayerGroup g{first, std::min(s.layers_per_op, (c_.pp + 1) * per_stage - first), 0};
      for (int l = g.first; l < g.first + g.count; ++l) g.moe += m.moe_layer(l) ? 1 : 0;
      groups_.push_back(g);
    }
    act_ = static_cast<uint64_t>(s.micro_batch) * static_cast<uint64_t>(s.seq) * static_cast<uint64_t>(m.hidden) *
           static_cast<uint64_t>(s.dtype_bytes);
    tokens_ = static_cast<uint64_t>(s.micro_batch) * static_cast<uint64_t>(s.seq) / static_cast<uint64_t>(s.shape.tp);
    tp_ = map.group_of(GroupKind::tp, rank);
    dp_ = map.group_of(GroupKind::dp, rank);
    ep_ = map.group_of(GroupKind::ep, rank);
    edp_ = map.group_of(GroupKind::edp, rank);
    if (c_.pp > 0) prev_ = map.rank_of({c_.tp, c_.pp - 1, c_.dp});
    if (c_.pp + 1 < s.shape.pp) next_ = map.rank_of({c_.tp, c_.pp + 1, c_.dp});
  }

  std::vector<Op> build() {
    const int m = s_.micro_batches, pp = s_.shape.pp;
    const int warmup = std::min(pp - c_.pp - 1, m), steady = m - warmup;
    int f = 0, b = 0;
    for (int i = 0; i < warmup; ++i) {
      recv_fwd(f);
      forward(f);
      send_fwd(f++);
    }
    if (steady > 0) recv_fwd(f);
    for (int i = 0; i < steady; ++i) {
      forward(f);
      // send_forward_recv_backward: one exchange with the next stage.
      if (next_ >= 0) p2p(OpType::sendrecv, next_, pp_bytes(), next_, pp_bytes(), fmt::format("F{}>B{}", f, b));
      ++f;
      backward(b);
      if (i == steady - 1) {
        send_bwd(b++);
      } else if (prev_ >= 0) {  // send_backward_recv_forward: one exchange with the previous stage
        p2p(OpType::sendrecv, prev_, pp_bytes(), prev_, pp_bytes(), fmt::format("B{}>F{}", b, f));
        ++b;
      } else {
        ++b;
      }
    }
    for (int i = 0; i < warmup; ++i) {
      recv_bwd(b);
      backward(b);
      send_bwd(b++);
    }
    flush_buckets();
    ops_.push_back(Op{OpType::wait});
    if (s_.zero == 1) gather_params();
    return std::move(ops_);
  }

 private:
  uint64_t pp_bytes() const { return act_ / static_cast<uint64_t>(s_.shape.tp); }
  uint64_t dense_params(const LayerGroup& g) const {
    const uint64_t mlp = static_cast<uint64_t>(g.count - g.moe) * m_.dense_mlp_params() +
                         static_cast<uint64_t>(g.moe) * static_cast<uint64_t>(m_.shared_experts) * m_.expert_params();
    return (static_cast<uint64_t>(g.count) * m_.attention_params() + mlp) / static_cast<uint64_t>(s_.shape.tp);
  }
  uint64_t expert_params(const LayerGroup& g) const {
    const uint64_t per_rank = static_cast<uint64_t>(s_.routing.experts / s_.shape.ep);
    return static_cast<uint64_t>(g.moe) * per_rank * m_.expert_params() / static_cast<uint64_t>(s_.shape.tp);
  }

  void compute(double us) {
    if (us > 0) ops_.push_back(Op{OpType::compute, us});
  }
  void coll(OpType type, int group, uint64_t bytes, GroupKind kind, std::string label, bool async = false) {
    if (group < 0 || bytes == 0) return;
    Op op{type};
    op.group = group;
    op.bytes = bytes;
    op.kind = kind;
    op.label = std::move(label);
    op.async = async;
    ops_.push_back(std::move(op));
  }
  void p2p(OpType type, int peer, uint64_t bytes, int from, uint64_t recv_bytes, std::string label) {
    Op op{type};
    op.peer = peer;
    op.bytes = bytes;
    op.from = from;
    op.recv_bytes = recv_bytes;
    op.kind = GroupKind::pp;
    op.label = std::move(label);
    ops_.push_back(std::move(op));
  }
  void recv_fwd(int mb) {
    if (prev_ >= 0) p2p(OpType::recv, -1, 0, prev_, pp_bytes(), fmt::format("F{} recv", mb));
  }
  void send_fwd(int mb) {
    if (next_ >= 0) p2p(OpType::send, next_, pp_bytes(), -1, 0, fmt::format("F{} send", mb));
  }
  void recv_bwd(int mb) {
    if (next_ >= 0) p2p(OpType::recv, -1, 0, next_, pp_bytes(), fmt::format("B{} recv", mb));
  }
  void send_bwd(int mb) {
    if (prev_ >= 0) p2p(OpType::send, prev_, pp_bytes(), -1, 0, fmt::format("B{} send", mb));
  }
  void moe(const LayerGroup& g, int mb, int pass, const std::string& where, const char* what) {
    if (ep_ < 0 || g.moe == 0) return;
    Op op{OpType::all_to_all_v};
    op.group = ep_;
    op.tokens = tokens_ * static_cast<uint64_t>(g.moe);
    op.token_bytes = static_cast<uint64_t>(m_.hidden) * static_cast<uint64_t>(s_.dtype_bytes);
    // The same draw for dispatch and combine of one layer group, micro-batch and pass
    // (combine sends the tokens back where they came from).
    op.route_key = static_cast<uint32_t>((g.first * 4096 + mb) * 2 + pass);
    op.kind = GroupKind::ep;
    op.label = fmt::format("{} {}", where, what);
    ops_.push_back(std::move(op));
  }
  std::string where(char pass, int mb, const LayerGroup& g) const {
    return g.count == 1 ? fmt::format("{}{} L{}", pass, mb, g.first)
                        : fmt::format("{}{} L{}-{}", pass, mb, g.first, g.first + g.count - 1);
  }

  void forward(int mb) {
    for (const LayerGroup& g : groups_) {
      const std::string at = where('F', mb, g);
      if (s_.zero == 3) coll(OpType::all_gather, dp_, dense_params(g) * s_.dtype_bytes, GroupKind::dp, at + " params");
      const uint64_t a = act_ * static_cast<uint64_t>(g.count);
      compute(s_.compute_us * g.count / 2);
      coll(OpType::all_gather, tp_, a, GroupKind::tp, at + " attn-ag");
      coll(OpType::reduce_scatter, tp_, a, GroupKind::tp, at + " attn-rs");
      coll(OpType::all_gather, tp_, a, GroupKind::tp, at + " mlp-ag");
      moe(g, mb, 0, at, "dispatch");
      compute(s_.compute_us * g.count / 2);
      moe(g, mb, 0, at, "combine");
      coll(OpType::reduce_scatter, tp_, a, GroupKind::tp, at + " mlp-rs");
    }
  }

  void backward(int mb) {
    const bool last = mb == s_.micro_batches - 1;
    for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
      const LayerGroup& g = *it;
      const std::string at = where('B', mb, g);
      if (s_.zero == 3) coll(OpType::all_gather, dp_, dense_params(g) * s_.dtype_bytes, GroupKind::dp, at + " params");
      const uint64_t a = act_ * static_cast<uint64_t>(g.count);
      // The gradient of a reduce-scatter is an all-gather and the other way round.
      coll(OpType::all_gather, tp_, a, GroupKind::tp, at + " mlp-ag");
      moe(g, mb, 1, at, "combine");
      compute(s_.compute_us * g.count);
      moe(g, mb, 1, at, "dispatch");
      coll(OpType::reduce_scatter, tp_, a, GroupKind::tp, at + " mlp-rs");
      coll(OpType::all_gather, tp_, a, GroupKind::tp, at + " attn-ag");
      compute(s_.compute_us * g.count);
      coll(OpType::reduce_scatter, tp_, a, GroupKind::tp, at + " attn-rs");
      if (last) add_gradients(g);
    }
  }

  // Gradients of the last micro-batch's backward fill buckets; a full bucket is reduced
  // while the backward goes on.
  void add_gradients(const LayerGroup& g) {
    dense_ += dense_params(g) * static_cast<uint64_t>(s_.dtype_bytes);
    experts_ += expert_params(g) * static_cast<uint64_t>(s_.dtype_bytes);
    if (edp_ < 0 && ep_ < 0) dense_ += experts_, experts_ = 0;  // experts replicated: reduced with the rest
    if (ep_ >= 0 && edp_ < 0) experts_ = 0;                     // ep == dp: no replica to reduce with
    if (s_.zero == 3) {
      flush_buckets();
      return;
    }
    while (dense_ >= s_.bucket_bytes) emit_bucket(dp_, GroupKind::dp, s_.bucket_bytes, dense_);
    while (experts_ >= s_.bucket_bytes) emit_bucket(edp_, GroupKind::edp, s_.bucket_bytes, experts_);
  }
  void emit_bucket(int group, GroupKind kind, uint64_t bytes, uint64_t& pending) {
    // Reduce-scatter needs a size the group divides; round the bucket up to it.
    const auto n = static_cast<uint64_t>(group >= 0 ? map_.groups[static_cast<size_t>(group)].ranks.size() : 1);
    const uint64_t unit = n * static_cast<uint64_t>(s_.dtype_bytes);
    coll(s_.zero ? OpType::reduce_scatter : OpType::all_reduce, group, (bytes + unit - 1) / unit * unit, kind,
         fmt::format("grad bucket {}", buckets_++), true);
    if (s_.zero) zero_buckets_.push_back({group, (bytes + unit - 1) / unit * unit, kind});
    pending -= std::min(pending, bytes);
  }
  void flush_buckets() {
    if (dense_) emit_bucket(dp_, GroupKind::dp, dense_, dense_);
    if (experts_) emit_bucket(edp_, GroupKind::edp, experts_, experts_);
  }
  // ZeRO-1: the updated parameter shards all-gathered after the optimizer, bucket by bucket.
  void gather_params() {
    int i = 0;
    for (const auto& zb : zero_buckets_)
      coll(OpType::all_gather, zb.group, zb.bytes, zb.kind, fmt::format("param bucket {}", i++));
  }

  struct ZeroBucket {
    int group;
    uint64_t bytes;
    GroupKind kind;
  };
  const TrainModel& m_;
  const StepSpec& s_;
  const RankMap& map_;
  int rank_;
  Coords c_;
  std::vector<LayerGroup> groups_;
  uint64_t act_ = 0, tokens_ = 0;
  int tp_ = -1, dp_ = -1, ep_ = -1, edp_ = -1, prev_ = -1, next_ = -1;
  uint64_t dense_ = 0, experts_ = 0;
  int buckets_ = 0;
  std::vector<ZeroBucket> zero_buckets_;
  std::vector<Op> ops_;
};

void check_spec(const TrainModel& m, const StepSpec& s, int layers) {
  if (layers % s.shape.pp != 0)
    throw UsageError(
        fmt::format("{} layers do not split over --pp {} stages: choose a --pp that divides {} (or set "
                    "--layers)",
                    layers, s.shape.pp, layers));
  if (s.micro_batches < 1 || s.micro_batch < 1 || s.seq < 1 || s.layers_per_op < 1)
    throw UsageError("--micro-batches, --micro-batch, --seq and --layers-per-op must be at least 1");
  if (s.zero != 0 && s.zero != 1 && s.zero != 3) throw UsageError("--zero takes 0, 1 or 3");
  if (s.seq * s.micro_batch < s.shape.tp)
    throw UsageError(
        fmt::format("--seq {} x --micro-batch {} is fewer tokens than --tp {}: sequence parallelism "
                    "gives every TP rank at least one token",
                    s.seq, s.micro_batch, s.shape.tp));
  if (s.shape.ep > 1 && !m.moe())
    throw UsageError(
        fmt::format("--ep {}: {} is a dense model with no experts: drop --ep or pick an MoE model "
                    "(mixtral-8x7b, deepseek-v3)",
                    s.shape.ep, m.name));
  if (s.shape.ep > 1 && s.routing.experts % s.shape.ep != 0)
    throw UsageError(
        fmt::format("--ep {} does not divide the {} experts: every EP rank holds the same number of "
                    "experts",
                    s.shape.ep, s.routing.experts));
  const long tokens = static_cast<long>(s.seq) * s.micro_batch / s.shape.tp * s.shape.ep;
  if (s.shape.ep > 1 && tokens < s.routing.experts)
    throw UsageError(
        fmt::format("{} experts but a micro-batch brings only {} tokens to an EP group (--seq {} x "
                    "--micro-batch {} / --tp {} x --ep {}): raise --seq or --micro-batch, or lower "
                    "--experts",
                    s.routing.experts, tokens, s.seq, s.micro_batch, s.shape.tp, s.shape.ep));
  if (s.shape.ep > 1 && s.routing.topk > s.routing.experts)
    throw UsageError(fmt::format("--topk {} is more than the {} experts", s.routing.topk, s.routing.experts));
}

}  // namespace

Trace make_step_trace(const TrainModel& model, const StepSpec& spec_in, const RankMap& map, int only_rank) {
  StepSpec spec = spec_in;
  if (spec.routing.experts == 0) spec.routing.experts = model.experts;
  if (spec.routing.topk == 0) spec.routing.topk = model.topk;
  TrainModel m = model;
  if (spec.routing.experts > 0) m.experts = spec.routing.experts;
  const int layers = spec.layers > 0 ? spec.layers : model.layers;
  if (m.moe() && m.dense_layers >= layers) m.dense_layers = 0;  // a cut-down model keeps its MoE layers
  check_spec(m, spec, layers);
  Trace t;
  t.world = map.world();
  t.dtype = spec.dtype;
  t.groups = map.groups;
  if (spec.shape.ep > 1) t.routing = spec.routing;
  t.ranks.resize(static_cast<size_t>(t.world));
  for (int r = 0; r < t.world; ++r)
    if (only_rank < 0 || r == only_rank)
      t.ranks[static_cast<size_t>(r)] = RankSchedule(m, spec, map, r, layers).build();
  return t;
}

}  // namespace railbench::workload
