#include "tests/support/loopback_fabric.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace railbench::testing {

using loopback::Decision;
using loopback::Op;
using loopback::PostedRecv;
using loopback::Region;

const char* to_string(PostKind kind) {
  switch (kind) {
    case PostKind::send: return "send";
    case PostKind::recv: return "recv";
    case PostKind::write: return "write";
    case PostKind::write_imm: return "write-with-imm";
    case PostKind::read: return "read";
  }
  return "unknown";
}

namespace {

bool matches(int want, int got) {
  return want < 0 || want == got;
}

std::string describe(const Op& op) {
  if (op.kind == PostKind::recv) return fmt::format("recv at rank {} from rank {} on rail {}", op.src, op.dst, op.rail);
  return fmt::format("{} from rank {} to rank {} on rail {}", to_string(op.kind), op.src, op.dst, op.rail);
}

}  // namespace

LoopbackFabric::Impl::Impl(int world_size, const LoopbackOptions& o) : n(world_size), options(o) {
  const auto links = static_cast<size_t>(n) * static_cast<size_t>(n) * static_cast<size_t>(o.rails);
  wires.resize(links);
  recvs.resize(links);
  unexpected.resize(links);
  connected.assign(links, 0);
  cqs.resize(static_cast<size_t>(n));
  last_error.resize(static_cast<size_t>(n));
  imms_seen.assign(static_cast<size_t>(n) * static_cast<size_t>(o.rails), 0);
  open.assign(static_cast<size_t>(n), 1);
  pending.resize(static_cast<size_t>(n));
  caps.send_recv = caps.write = caps.read = caps.write_with_imm = true;
  caps.ordered_writes = o.ordered_writes;
  caps.max_msg_size = o.max_msg_size;
  caps.max_outstanding = o.max_outstanding;
  caps.cpu_driven_nic = o.cpu_driven_nic;
  caps.max_batch = o.max_batch;
}

// The first rule that picks the post decides. A post answered retry is expected back
// with the same target; it then goes through without being counted or picked again.
Decision LoopbackFabric::Impl::decide(PostKind kind, int src, int dst, int rail) {
  loopback::PendingRetry& p = pending[static_cast<size_t>(src)];
  if (p.active && p.kind == kind && p.dst == dst && p.rail == rail) {
    if (p.left > 0) {
      --p.left;
      ++retries;
      return Decision{Status::retry};
    }
    p.active = false;
    return Decision{};
  }
  p.active = false;
  for (size_t i = 0; i < rules.size(); ++i) {
    loopback::RuleState& r = rules[i];
    const FaultRule& f = r.rule;
    if (f.op != kind || !matches(f.rank, src) || !matches(f.peer, dst) || !matches(f.rail, rail)) continue;
    ++r.seen;
    if (f.nth != 0 && r.seen != f.nth) continue;
    ++r.fired;
    if (f.fault == Fault::retry) {
      p = loopback::PendingRetry{true, kind, dst, rail, f.retries - 1};
      ++retries;
      return Decision{Status::retry};
    }
    return Decision{f.fault == Fault::reject ? Status::error : Status::ok, f.fault, f.hold, f.delay, i};
  }
  return Decision{};
}

uint64_t LoopbackFabric::Impl::imms_on_other_rails(int dst, int rail) const {
  uint64_t sum = 0;
  for (int r = 0; r < options.rails; ++r)
    if (r != rail) sum += imms_seen[static_cast<size_t>(dst) * static_cast<size_t>(options.rails) + r];
  return sum;
}

void LoopbackFabric::Impl::enqueue(Op op) {
  auto& w = wires[wire(op.src, op.dst, op.rail)];
  if (w.empty() && op.hold == Hold::none) {
    deliver(op);
    return;
  }
  w.push_back(op);
  ++queued;
}

void LoopbackFabric::Impl::pump() {
  if (queued == 0) return;
  const auto now = Clock::now();
  for (auto& w : wires) {
    while (!w.empty()) {
      Op& op = w.front();
      if (op.hold == Hold::stall) break;
      if (op.hold == Hold::delay && now < op.release_at) break;
      if (op.hold == Hold::overtake) {
        if (imms_on_other_rails(op.dst, op.rail) <= op.imm_mark) break;
        ++overtaken;
      }
      const Op ready = op;
      w.pop_front();
      --queued;
      deliver(ready);
    }
  }
}

const Region* LoopbackFabric::Impl::find_region(uint64_t key, int rank, std::string& why) const {
  auto it = regions.find(key);
  if (it == regions.end() || it->second.rank != rank) {
    why =
        fmt::format("key {} is not a region rank {} has registered (deregistered, or another rank's key?)", key, rank);
    return nullptr;
  }
  return &it->second;
}

const Region* LoopbackFabric::Impl::resolve(uint64_t key, int rank, uint64_t addr, size_t length,
                                            std::string& why) const {
  const Region* found = find_region(key, rank, why);
  if (!found) return nullptr;
  const Region& r = *found;
  const auto base = reinterpret_cast<uint64_t>(r.base);
  if (addr < base || addr - base > r.length || length > r.length - (addr - base)) {
    why = fmt::format("[{:#x}, +{}) is outside rank {}'s region [{:#x}, +{}) (key {})", addr, length, rank, base,
                      r.length, key);
    return nullptr;
  }
  return &r;
}

void LoopbackFabric::Impl::fail(const Op& op, const std::string& why) {
  if (op.silent) {
    failed_batches.emplace(std::make_pair(op.src, op.wr_id), fmt::format("{} (in a batch): {}", describe(op), why));
    return;
  }
  if (op.batch_last) {
    const auto it = failed_batches.find({op.src, op.wr_id});
    if (it != failed_batches.end()) failed_batches.erase(it);
  }
  last_error[static_cast<size_t>(op.src)] = fmt::format("{}: {}", describe(op), why);
  const OpKind kind = op.kind == PostKind::send   ? OpKind::send
                      : op.kind == PostKind::read ? OpKind::read
                      : op.kind == PostKind::recv ? OpKind::recv
                                                  : OpKind::write;
  cqs[static_cast<size_t>(op.src)].push_back(Completion{op.wr_id, op.dst, op.rail, kind, Status::error, 0, 0});
}

void LoopbackFabric::Impl::land_message(int dst, int src, int rail, const PostedRecv& r, const std::byte* data,
                                        size_t length) {
  auto& cq = cqs[static_cast<size_t>(dst)];
  std::string why;
  const Region* into = find_region(r.key, dst, why);
  if (length > r.length) {
    why = fmt::format("the message of {} bytes is larger than the receive ({} bytes)", length, r.length);
    into = nullptr;
  }
  if (!into) {
    last_error[static_cast<size_t>(dst)] = fmt::format("recv from rank {} on rail {}: {}", src, rail, why);
    cq.push_back(Completion{r.wr_id, src, rail, OpKind::recv, Status::error, 0, 0});
    return;
  }
  if (length) std::memcpy(into->base + r.offset, data, length);
  cq.push_back(Completion{r.wr_id, src, rail, OpKind::recv, Status::ok, length, 0});
}

void LoopbackFabric::Impl::deliver(const Op& op) {
  if (op.fault == Fault::drop) return;
  if (op.fault == Fault::fail) return fail(op, fmt::format("injected failure (fault rule {})", op.rule));
  if (!open[static_cast<size_t>(op.dst)]) return fail(op, fmt::format("rank {} has closed its transport", op.dst));
  std::string why;
  const Region* local = find_region(op.local_key, op.src, why);
  if (!local) return fail(op, "local buffer: " + why);
  std::byte* mine = local->base + op.local_offset;
  auto& cq = cqs[static_cast<size_t>(op.src)];
  if (op.kind == PostKind::send) {
    auto& posted = recvs[wire(op.dst, op.src, op.rail)];
    if (posted.empty()) {
      unexpected[wire(op.dst, op.src, op.rail)].emplace_back(mine, mine + op.length);
    } else {
      land_message(op.dst, op.src, op.rail, posted.front(), mine, op.length);
      posted.pop_front();
    }
    cq.push_back(Completion{op.wr_id, op.dst, op.rail, OpKind::send, Status::ok, op.length, 0});
    return;
  }
  const Region* remote = resolve(op.remote_key, op.dst, op.remote_addr, op.length, why);
  if (!remote) return fail(op, "remote buffer: " + why);
  auto* theirs = reinterpret_cast<std::byte*>(op.remote_addr);
  if (op.length) {
    if (op.kind == PostKind::read) {
      std::memcpy(mine, theirs, op.length);
    } else {
      std::memcpy(theirs, mine, op.length);
    }
  }
  if (op.batch_last) {
    // The batch completes with its first failed write's reason, once all have landed.
    const auto it = failed_batches.find({op.src, op.wr_id});
    if (it != failed_batches.end()) {
      last_error[static_cast<size_t>(op.src)] = it->second;
      failed_batches.erase(it);
      cq.push_back(Completion{op.wr_id, op.dst, op.rail, OpKind::write, Status::error, 0, 0});
    } else {
      cq.push_back(Completion{op.wr_id, op.dst, op.rail, OpKind::write, Status::ok, op.batch_bytes, 0});
    }
  } else if (!op.silent) {
    cq.push_back(Completion{op.wr_id, op.dst, op.rail, op.kind == PostKind::read ? OpKind::read : OpKind::write,
                            Status::ok, op.length, 0});
  }
  if (op.kind == PostKind::write_imm) {
    cqs[static_cast<size_t>(op.dst)].push_back(
        Completion{0, op.src, op.rail, OpKind::remote_write_imm, Status::ok, op.length, op.imm});
  }
}

// Whatever `rank` had in flight goes with its transport; operations addressed to it
// fail at their initiators from now on.
void LoopbackFabric::Impl::close(int rank) {
  open[static_cast<size_t>(rank)] = 0;
  for (int peer = 0; peer < n; ++peer) {
    for (int rail = 0; rail < options.rails; ++rail) {
      auto& w = wires[wire(rank, peer, rail)];
      queued -= w.size();
      w.clear();
      recvs[wire(rank, peer, rail)].clear();
      unexpected[wire(rank, peer, rail)].clear();
      connected[wire(rank, peer, rail)] = 0;
    }
  }
  cqs[static_cast<size_t>(rank)].clear();
}

LoopbackFabric::LoopbackFabric(int world_size, const LoopbackOptions& options)
    : impl_(std::make_unique<Impl>(world_size, options)) {}

LoopbackFabric::~LoopbackFabric() = default;

size_t LoopbackFabric::inject(const FaultRule& rule) {
  if (rule.op == PostKind::recv && (rule.hold != Hold::none || rule.fault == Fault::drop)) {
    throw std::invalid_argument(
        "a receive can fail, be rejected or answer retry; holding or dropping one means nothing");
  }
  if (rule.hold == Hold::delay && rule.delay.count() <= 0) throw std::invalid_argument("Hold::delay needs a delay");
  if (rule.fault == Fault::retry && rule.retries < 1) throw std::invalid_argument("Fault::retry needs retries >= 1");
  std::lock_guard lock(impl_->mu);
  impl_->rules.push_back(loopback::RuleState{rule});
  return impl_->rules.size() - 1;
}

uint64_t LoopbackFabric::fired(size_t index) const {
  std::lock_guard lock(impl_->mu);
  return index < impl_->rules.size() ? impl_->rules[index].fired : 0;
}

uint64_t LoopbackFabric::overtaken() const {
  std::lock_guard lock(impl_->mu);
  return impl_->overtaken;
}

uint64_t LoopbackFabric::retries_answered() const {
  std::lock_guard lock(impl_->mu);
  return impl_->retries;
}

size_t LoopbackFabric::queued() const {
  std::lock_guard lock(impl_->mu);
  return impl_->queued;
}

size_t LoopbackFabric::unexpected() const {
  std::lock_guard lock(impl_->mu);
  size_t sum = 0;
  for (const auto& q : impl_->unexpected) sum += q.size();
  return sum;
}

void LoopbackFabric::release() {
  std::lock_guard lock(impl_->mu);
  for (auto& w : impl_->wires)
    for (Op& op : w)
      if (op.hold == Hold::stall) op.hold = Hold::none;
}

int LoopbackFabric::world_size() const {
  return impl_->n;
}

const LoopbackOptions& LoopbackFabric::options() const {
  return impl_->options;
}

}  // namespace railbench::testing
