#include "collectives/workload/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "collectives/alltoallv.h"
#include "collectives/check.h"
#include "collectives/group.h"
#include "collectives/group_ops.h"
#include "collectives/moe_routing.h"
#include "lib/core/errors.h"

namespace railbench::workload {

namespace {

using Clock = std::chrono::steady_clock;

double since_us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

Group group_for(const GroupDef& g, int rank) {
  Group out;
  out.ranks = g.ranks;
  out.me = static_cast<int>(std::find(g.ranks.begin(), g.ranks.end(), rank) - g.ranks.begin());
  return out;
}

// nccl-tests' bus factor per op over n members.
double bus_factor(OpType t, int n) {
  const double f = n > 1 ? static_cast<double>(n - 1) / n : 1.0;
  return t == OpType::all_reduce ? 2 * f : t == OpType::compute || t == OpType::wait ? 0 : f;
}

bool communicates(OpType t) {
  return t != OpType::compute && t != OpType::wait;
}

}  // namespace

Executor::Executor(Progress& progress, const Trace& trace, int rank, const ExecOptions& options)
    : p_(progress), t_(trace), rank_(rank), opt_(options) {
  prepare();
}

Executor::~Executor() = default;

// Buffers for the largest op (capped at chunk_bytes: larger ops run in chunks), the
// receive splits of explicit all-to-all-v ops, and the bytes per kind.
void Executor::prepare() {
  const auto& ops = t_.ranks[static_cast<size_t>(rank_)];
  const size_t esz = size_of(opt_.type);
  uint64_t largest = esz;
  // Instance index of a group's collectives, to find the peers' splits: built only for
  // the groups of this rank's explicit-split all-to-all-v ops (a trace file's form), as
  // it walks every member's whole op list.
  std::map<int, std::vector<std::vector<size_t>>> instances;  // group -> member -> op indices
  for (const Op& op : ops) {
    if (op.type != OpType::all_to_all_v || op.split_bytes.empty() || instances.count(op.group)) continue;
    auto& per_member = instances[op.group];
    for (int r : t_.groups[static_cast<size_t>(op.group)].ranks) {
      per_member.emplace_back();
      const auto& rops = t_.ranks[static_cast<size_t>(r)];
      for (size_t i = 0; i < rops.size(); ++i)
        if (rops[i].group == op.group) per_member.back().push_back(i);
    }
  }
  std::vector<size_t> seen(t_.groups.size(), 0);
  recv_splits_.resize(ops.size());
  for (size_t pc = 0; pc < ops.size(); ++pc) {
    const Op& op = ops[pc];
    if (!communicates(op.type)) continue;
    const int n = op.group >= 0 ? static_cast<int>(t_.groups[static_cast<size_t>(op.group)].ranks.size()) : 2;
    uint64_t link = op.bytes;
    if (op.type == OpType::reduce_scatter || op.type == OpType::all_gather) link = op.bytes * (n - 1) / n;
    if (op.type == OpType::all_reduce) link = 2 * op.bytes * (n - 1) / n;
    if (op.type == OpType::all_to_all_v && !op.split_bytes.empty()) {
      const Group g = group_for(t_.groups[static_cast<size_t>(op.group)], rank_);
      const size_t inst = seen[static_cast<size_t>(op.group)]++;
      auto& splits = recv_splits_[pc];
      link = 0;
      for (int j = 0; j < g.size(); ++j) {
        const size_t their_pc = instances[op.group][static_cast<size_t>(j)][inst];
        splits.push_back(t_.ranks[static_cast<size_t>(g.global(j))][their_pc].split_bytes[static_cast<size_t>(g.me)]);
        if (j != g.me) link += op.split_bytes[static_cast<size_t>(j)];
      }
      largest = std::max<uint64_t>(largest, std::max<uint64_t>(link, 1));
    } else if (op.group >= 0) {
      ++seen[static_cast<size_t>(op.group)];
    }
    if (op.type == OpType::all_to_all_v && op.tokens)
      link = op.tokens * op.token_bytes * static_cast<uint64_t>(t_.routing.topk) * (n - 1) / n;
    (op.async ? async_link_bytes_ : sync_link_bytes_) += static_cast<double>(link);
    largest = std::max({largest, op.bytes, op.recv_bytes,
                        op.tokens * op.token_bytes * static_cast<uint64_t>(std::max(t_.routing.topk, 1))});
  }
  if (t_.routing.experts > 0) routing_spec_ = parse_routing(t_.routing.distribution);
  capacity_ = (std::min(largest, opt_.chunk_bytes) + 4095) / 4096 * 4096;
  Transport& t = p_.transport();
  buf_ = std::make_unique<gpu::Buffer>(opt_.memory, 2 * capacity_);
  mr_ = t.register_memory(buf_->data(), buf_->size(), opt_.memory);
  // The ring's two scratch halves of a block, which with uneven blocks are a few
  // elements (each rounded to a cache line) more than half of capacity_.
  scratch_ = std::make_unique<gpu::Buffer>(opt_.memory, capacity_ + 256);
  scratch_mr_ = t.register_memory(scratch_->data(), scratch_->size(), opt_.memory);
}

StepTimes Executor::run_step(int iter, const OpHooks& hooks) {
  const auto& ops = t_.ranks[static_cast<size_t>(rank_)];
  StepTimes st;
  st.op_us.assign(ops.size(), 0.f);
  st.op_start_us.assign(ops.size(), 0.f);
  st.op_end_us.assign(ops.size(), 0.f);
  credit_us_ = 0;
  const auto t0 = Clock::now();
  for (size_t pc = 0; pc < ops.size(); ++pc) {
    const Op& op = ops[pc];
    st.op_start_us[pc] = static_cast<float>(since_us(t0));
    run_one(pc, op, iter, hooks, st);
    st.op_end_us[pc] = static_cast<float>(since_us(t0));
  }
  st.step_us = since_us(t0);
  return st;
}

void Executor::run_one(size_t pc, const Op& op, int iter, const OpHooks& hooks, StepTimes& st) {
  if (op.type == OpType::compute) {
    st.compute_us += op.us;
    // Async time already spent covers this much of the compute.
    const double covered = std::min(credit_us_, op.us);
    credit_us_ -= covered;
    const double wait_us = op.us - covered;
    st.slept_us += wait_us;
    if (wait_us > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(wait_us));
    return;
  }
  if (op.type == OpType::wait) {
    credit_us_ = 0;  // overlap ends where the step waits for its buckets
    return;
  }
  if (hooks.begin) hooks.begin(pc, op);
  const auto o0 = Clock::now();
  run_op(pc, op, iter);
  const double us = since_us(o0);
  if (hooks.end) hooks.end(pc, op);
  st.op_us[pc] = static_cast<float>(us);
  const size_t k = static_cast<size_t>(op.kind);
  st.kind_us[k] += us;
  if (op.type == OpType::all_to_all_v) {
    st.kind_bytes[k] += static_cast<double>(a2av_sent_);
    st.kind_bus_bytes[k] += static_cast<double>(a2av_sent_);
  } else {
    const int n = op.group >= 0 ? static_cast<int>(t_.groups[static_cast<size_t>(op.group)].ranks.size()) : 2;
    st.kind_bytes[k] += static_cast<double>(std::max(op.bytes, op.recv_bytes));
    st.kind_bus_bytes[k] += static_cast<double>(std::max(op.bytes, op.recv_bytes)) * bus_factor(op.type, n);
  }
  if (op.async) {
    st.async_us += us;
    credit_us_ += us;
  }
}

void Executor::run_op(size_t pc, const Op& op, int iter) {
  if (op.type == OpType::send || op.type == OpType::recv || op.type == OpType::sendrecv) return p2p(op);
  if (op.type == OpType::all_to_all_v) return alltoallv(pc, op, iter);
  collective(op, iter);
}

// Ring reduce-scatter / all-gather over the group in chunks of at most the buffer;
// all-reduce is the two in turn (the ring all-reduce, nccl-tests' busbw 2(n-1)/n).
void Executor::collective(const Op& op, int iter) {
  const Group g = group_for(t_.groups[static_cast<size_t>(op.group)], rank_);
  const size_t esz = size_of(opt_.type);
  const uint64_t unit = static_cast<uint64_t>(g.size()) * esz;
  const uint64_t chunk = std::max<uint64_t>(capacity_ / unit * unit, unit);
  const uint32_t seed = opt_.seed + static_cast<uint32_t>(iter) * 7919u;
  for (uint64_t off = 0; off < op.bytes; off += chunk) {
    const size_t count = static_cast<size_t>(std::min(chunk, op.bytes - off) / esz);
    if (count == 0) break;
    const Vec v{mr_.get(), 0, count};
    void* data = buf_->data();
    const bool host = opt_.memory == MemoryKind::host;
    if (opt_.check) {
      host_.resize(count * esz);
      void* fill = host ? data : host_.data();
      if (op.type == OpType::all_gather) {
        const size_t first = block_first(count, g.size(), g.me), len = block_len(count, g.size(), g.me);
        fill_block(opt_.type, g.me, 0, seed, static_cast<std::byte*>(fill) + first * esz, len);
      } else {
        fill_input(opt_.type, ReduceOp::sum, g.me, seed, fill, count);
      }
      if (!host) gpu::copy(data, host_.data(), count * esz);
    }
    if (op.type != OpType::all_gather)
      ring_reduce_scatter_blocks(p_, g, opt_.rails, v, opt_.type, ReduceOp::sum, scratch_mr_.get(), opt_.slice_bytes);
    if (op.type != OpType::reduce_scatter) ring_all_gather_blocks(p_, g, opt_.rails, v, opt_.type, opt_.slice_bytes);
    if (!opt_.check) continue;
    const void* out = data;
    if (!host) {
      gpu::copy(host_.data(), data, count * esz);
      out = host_.data();
    }
    const auto* bytes = static_cast<const std::byte*>(out);
    if (op.type == OpType::all_reduce)
      wrong_ += count_wrong_allreduce(opt_.type, ReduceOp::sum, g.size(), seed, out, count);
    if (op.type == OpType::reduce_scatter) {
      const size_t first = block_first(count, g.size(), g.me), len = block_len(count, g.size(), g.me);
      wrong_ += count_wrong_allreduce(opt_.type, ReduceOp::sum, g.size(), seed, bytes + first * esz, len, first);
    }
    if (op.type == OpType::all_gather)
      for (int j = 0; j < g.size(); ++j)
        wrong_ += count_wrong_block(opt_.type, j, 0, seed, bytes + block_first(count, g.size(), j) * esz,
                                    block_len(count, g.size(), j));
  }
}

// Send/recv with a stage neighbour: both directions posted, then waited, chunk by chunk.
void Executor::p2p(const Op& op) {
  const uint64_t total = std::max(op.bytes, op.recv_bytes);
  const bool host = opt_.memory == MemoryKind::host;
  for (uint64_t off = 0; off < total; off += capacity_) {
    const size_t sl = static_cast<size_t>(op.bytes > off ? std::min(capacity_, op.bytes - off) : 0);
    const size_t rl = static_cast<size_t>(op.recv_bytes > off ? std::min(capacity_, op.recv_bytes - off) : 0);
    std::byte* send = buf_->data();
    std::byte* recv = buf_->data() + capacity_;
    if (opt_.check && sl) {
      host_.resize(sl);
      fill_bytes(rank_, opt_.seed, host ? static_cast<void*>(send) : host_.data(), sl);
      if (!host) gpu::copy(send, host_.data(), sl);
    }
    std::vector<uint64_t> ids;
    if (rl) post_exchange(p_, op.from, opt_.rails, LocalSpan{}, LocalSpan{mr_.get(), capacity_, rl}, ids);
    if (sl) post_exchange(p_, op.peer, opt_.rails, LocalSpan{mr_.get(), 0, sl}, LocalSpan{}, ids);
    for (uint64_t id : ids) p_.wait(id, "workload send/recv");
    if (opt_.check && rl) {
      host_.resize(rl);
      if (!host) gpu::copy(host_.data(), recv, rl);
      wrong_ += count_wrong_bytes(op.from, opt_.seed, host ? static_cast<const void*>(recv) : host_.data(), rl);
    }
  }
}

Executor::Imbalance Executor::expert_imbalance() const {
  if (!expert_draws_) return {};
  const auto n = static_cast<double>(expert_draws_);
  return {expert_sum_ / n, expert_max_, rank_sum_ / n};
}

}  // namespace railbench::workload

namespace railbench::workload {

// Bytes this rank sends to each member and receives from each, for this op and iteration.
void Executor::splits(size_t pc, const Op& op, int iter, std::vector<uint64_t>& send, std::vector<uint64_t>& recv) {
  const Group g = group_for(t_.groups[static_cast<size_t>(op.group)], rank_);
  if (!op.split_bytes.empty()) {
    send = op.split_bytes;
    recv = recv_splits_[pc];
    return;
  }
  // Dispatch and combine of one layer group share their draw: route once per key and step.
  if (!routed_ || routed_key_ != op.route_key || routed_iter_ != iter) {
    MoeRoutingOptions o;
    o.routing = routing_spec_;
    o.experts = t_.routing.experts;
    o.topk = t_.routing.topk;
    o.tokens_per_rank = static_cast<size_t>(op.tokens);
    o.seed = t_.routing.seed;
    // The step changes the draws; the route key keeps layers and micro-batches apart.
    o.step = static_cast<uint64_t>(static_cast<uint32_t>(iter)) << 32 | op.route_key;
    routed_ = std::make_unique<MoeRouting>(route_tokens(o, g.size()));
    routed_key_ = op.route_key;
    routed_iter_ = iter;
    const double imbalance = routed_->expert_imbalance();
    expert_max_ = std::max(expert_max_, imbalance);
    expert_sum_ += imbalance;
    size_t most = 0, all = 0;
    for (int j = 0; j < g.size(); ++j) {
      most = std::max(most, routed_->received_by(j));
      all += routed_->received_by(j);
    }
    rank_sum_ += all ? static_cast<double>(most) * g.size() / static_cast<double>(all) : 1.0;
    ++expert_draws_;
  }
  send.assign(static_cast<size_t>(g.size()), 0);
  recv.assign(static_cast<size_t>(g.size()), 0);
  for (int j = 0; j < g.size(); ++j) {
    send[static_cast<size_t>(j)] = routed_->at(g.me, j) * op.token_bytes;
    recv[static_cast<size_t>(j)] = routed_->at(j, g.me) * op.token_bytes;
  }
}

// All-to-all-v (collectives/alltoallv.h) out of place: send blocks packed from offset 0,
// receive blocks from the buffer's second half. A block larger than its share of the
// buffer goes in several rounds; the block to this rank itself is a local copy.
void Executor::alltoallv(size_t pc, const Op& op, int iter) {
  const Group g = group_for(t_.groups[static_cast<size_t>(op.group)], rank_);
  std::vector<uint64_t> send, recv;
  splits(pc, op, iter, send, recv);
  a2av_sent_ = 0;
  for (int j = 0; j < g.size(); ++j)
    if (j != g.me) a2av_sent_ += send[static_cast<size_t>(j)];
  auto& a2a = alltoallv_[op.group];
  if (!a2a) a2a = std::make_unique<AllToAllV>(p_, g, AllToAllVOptions{capacity_, opt_.rails, 4, opt_.memory});
  const size_t esz = size_of(opt_.type);
  const uint64_t share = std::max<uint64_t>(capacity_ / static_cast<uint64_t>(g.size()) / esz * esz, esz);
  const bool host = opt_.memory == MemoryKind::host;
  const uint32_t seed = opt_.seed + static_cast<uint32_t>(iter);
  auto piece = [&](const std::vector<uint64_t>& bytes, int j, uint64_t off) -> size_t {
    const uint64_t b = bytes[static_cast<size_t>(j)];
    return j == g.me || b <= off ? 0 : static_cast<size_t>(std::min(share, b - off) / esz);
  };
  for (uint64_t off = 0;; off += share) {
    std::vector<size_t> to(static_cast<size_t>(g.size())), from(to.size());
    bool any = false;
    for (int j = 0; j < g.size(); ++j) {
      to[static_cast<size_t>(j)] = piece(send, j, off);
      from[static_cast<size_t>(j)] = piece(recv, j, off);
      any = any || to[static_cast<size_t>(j)] || from[static_cast<size_t>(j)];
    }
    if (!any) break;
    const AllToAllVLayout layout = AllToAllVLayout::packed(to, from);
    if (opt_.check) {
      for (int j = 0; j < g.size(); ++j) {
        const size_t len = to[static_cast<size_t>(j)] * esz;
        if (!len) continue;
        std::byte* dst = buf_->data() + layout.send_offsets[static_cast<size_t>(j)] * esz;
        host_.resize(len);
        fill_bytes(rank_ * 65536 + g.global(j), seed, host ? static_cast<void*>(dst) : host_.data(), len);
        if (!host) gpu::copy(dst, host_.data(), len);
      }
    }
    a2a->run(CollectiveBuffers{mr_.get(), 0, mr_.get(), capacity_}, layout, opt_.type);
    if (!opt_.check) continue;
    for (int j = 0; j < g.size(); ++j) {
      const size_t len = from[static_cast<size_t>(j)] * esz;
      if (!len) continue;
      const std::byte* src = buf_->data() + capacity_ + layout.recv_offsets[static_cast<size_t>(j)] * esz;
      host_.resize(len);
      if (!host) gpu::copy(host_.data(), src, len);
      wrong_ += count_wrong_bytes(g.global(j) * 65536 + rank_, seed,
                                  host ? static_cast<const void*>(src) : host_.data(), len);
    }
  }
}

}  // namespace railbench::workload
