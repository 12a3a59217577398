#include "tests/support/loopback_transport.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "tests/support/loopback_fabric.h"

namespace railbench::testing {

namespace {

using loopback::Op;

class LoopbackRegion final : public MemoryRegion {
 public:
  LoopbackRegion(std::shared_ptr<LoopbackFabric> fabric, int rank, void* data, size_t length, MemoryKind kind)
      : MemoryRegion(data, length, kind), fabric_(std::move(fabric)) {
    auto& f = fabric_->impl();
    std::lock_guard lock(f.mu);
    key_ = f.next_key++;
    f.regions[key_] = loopback::Region{rank, static_cast<std::byte*>(data), length};
  }
  ~LoopbackRegion() override {
    auto& f = fabric_->impl();
    std::lock_guard lock(f.mu);
    f.regions.erase(key_);
  }

  // Same process: the real address, so the fabric can memcpy to it.
  RemoteKey remote_key() const override {
    RemoteKey k{length(), {}};
    for (int r = 0; r < fabric_->options().rails; ++r)
      k.rails.push_back(RailKey{reinterpret_cast<uint64_t>(data()), key_});
    return k;
  }
  uint64_t key() const { return key_; }

 private:
  std::shared_ptr<LoopbackFabric> fabric_;
  uint64_t key_ = 0;
};

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<LoopbackFabric> fabric, int rank)
      : fabric_(std::move(fabric)), f_(fabric_->impl()), rank_(rank) {
    if (rank < 0 || rank >= f_.n) {
      throw UsageError(fmt::format("loopback rank {} outside 0..{}", rank, f_.n - 1));
    }
  }
  ~LoopbackTransport() override {
    std::lock_guard lock(f_.mu);
    f_.close(rank_);
  }

  std::string name() const override { return "loopback"; }
  std::string provider() const override { return "memory"; }
  const Capabilities& caps() const override { return f_.caps; }
  int rank() const override { return rank_; }
  int world_size() const override { return f_.n; }
  int num_rails() const override { return f_.options.rails; }
  RailInfo rail_info(int rail) const override {
    return RailInfo{fmt::format("loop{}", rail), "loopback", fmt::format("rank {}", rank_), 0, 0};
  }

  std::vector<uint8_t> local_address(int rail) const override {
    std::vector<uint8_t> blob(2 * sizeof(int));
    std::memcpy(blob.data(), &rank_, sizeof(int));
    std::memcpy(blob.data() + sizeof(int), &rail, sizeof(int));
    return blob;
  }

  void connect(int peer, int rail, std::span<const uint8_t> remote_address) override {
    int got[2] = {-1, -1};
    if (remote_address.size() == sizeof(got)) std::memcpy(got, remote_address.data(), sizeof(got));
    if (got[0] != peer || got[1] != rail || rail < 0 || rail >= num_rails()) {
      throw TransportError(fmt::format("loopback rank {}: address blob for rank {} rail {} names rank {} rail {}",
                                       rank_, peer, rail, got[0], got[1]));
    }
    std::lock_guard lock(f_.mu);
    f_.connected[f_.wire(rank_, peer, rail)] = 1;
  }

  std::unique_ptr<MemoryRegion> register_memory(void* data, size_t length, MemoryKind kind) override {
    if (kind == MemoryKind::cuda) throw UnsupportedError("the loopback transport has no GPU memory");
    return std::make_unique<LoopbackRegion>(fabric_, rank_, data, length, kind);
  }

  Status post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept override {
    return post(Op{PostKind::send, rank_, peer, rail, wr_id}, src, nullptr);
  }
  Status post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept override;
  Status post_write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint64_t wr_id) noexcept override {
    return post(Op{PostKind::write, rank_, peer, rail, wr_id}, src, &dst);
  }
  Status post_write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm,
                        uint64_t wr_id) noexcept override {
    Op op{PostKind::write_imm, rank_, peer, rail, wr_id};
    op.imm = imm;
    return post(op, src, &dst);
  }
  Status post_read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src, uint64_t wr_id) noexcept override {
    return post(Op{PostKind::read, rank_, peer, rail, wr_id}, dst, &src);
  }
  Status post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                          uint64_t wr_id) noexcept override;

  size_t poll(std::span<Completion> out) noexcept override {
    std::lock_guard lock(f_.mu);
    f_.pump();
    auto& cq = f_.cqs[static_cast<size_t>(rank_)];
    size_t n = 0;
    for (; n < out.size() && !cq.empty(); ++n) {
      out[n] = cq.front();
      cq.pop_front();
      if (out[n].op == OpKind::remote_write_imm) ++f_.imms_seen[static_cast<size_t>(rank_ * num_rails() + out[n].rail)];
    }
    return n;
  }

  std::string last_error() const override {
    std::lock_guard lock(f_.mu);
    return f_.last_error[static_cast<size_t>(rank_)];
  }

 private:
  Status refuse(std::string why) noexcept {
    f_.last_error[static_cast<size_t>(rank_)] = std::move(why);
    return Status::error;
  }
  // Fills op's local side from `local`; false (with last_error set) when it is unusable.
  bool check_local(Op& op, const LocalSpan& local) noexcept;
  bool check_remote(Op& op, const RemoteSpan& remote) noexcept;
  // Checks the target, applies the rules and hands the operation to its wire.
  Status post(Op op, const LocalSpan& local, const RemoteSpan* remote) noexcept;

  std::shared_ptr<LoopbackFabric> fabric_;
  LoopbackFabric::Impl& f_;
  int rank_;
};

bool LoopbackTransport::check_local(Op& op, const LocalSpan& local) noexcept {
  const auto* mr = dynamic_cast<const LoopbackRegion*>(local.mr);
  const char* what = to_string(op.kind);
  if (!mr) {
    refuse(fmt::format("{} to rank {}: the local buffer is not a loopback region", what, op.dst));
    return false;
  }
  if (local.offset > mr->length() || local.length > mr->length() - local.offset) {
    refuse(fmt::format("{} to rank {}: local [{}, +{}) is outside the region of {} bytes", what, op.dst, local.offset,
                       local.length, mr->length()));
    return false;
  }
  if (local.length > f_.caps.max_msg_size) {
    refuse(fmt::format("{} to rank {}: {} bytes is over max_msg_size {}", what, op.dst, local.length,
                       f_.caps.max_msg_size));
    return false;
  }
  op.local_key = mr->key();
  op.local_offset = local.offset;
  op.length = local.length;
  return true;
}

bool LoopbackTransport::check_remote(Op& op, const RemoteSpan& remote) noexcept {
  if (!remote.key || op.rail >= static_cast<int>(remote.key->rails.size())) {
    refuse(fmt::format("{} to rank {} on rail {}: no remote key for this rail", to_string(op.kind), op.dst, op.rail));
    return false;
  }
  op.remote_key = remote.key->rails[static_cast<size_t>(op.rail)].key;
  op.remote_addr = remote.key->rails[static_cast<size_t>(op.rail)].addr + remote.offset;
  return true;
}

// Every span is checked before anything goes on the wire, so an error posts nothing.
Status LoopbackTransport::post_write_batch(int peer, int rail, std::span<const WriteSpan> ops,
                                           std::optional<uint32_t> imm, uint64_t wr_id) noexcept {
  const char* what = "batched write";
  std::string why;
  if (!valid_target(what, peer, rail, why)) {
    std::lock_guard lock(f_.mu);
    return refuse(why);
  }
  std::lock_guard lock(f_.mu);
  if (ops.empty() || ops.size() > f_.caps.max_batch) {
    return refuse(fmt::format("{} to rank {} on rail {}: {} writes, a batch holds 1..{} (split the list)", what, peer,
                              rail, ops.size(), f_.caps.max_batch));
  }
  if (!f_.connected[f_.wire(rank_, peer, rail)]) {
    return refuse(fmt::format("{} to rank {} on rail {}: not connected (connect_all first)", what, peer, rail));
  }
  std::vector<Op> batch;
  batch.reserve(ops.size());
  size_t total = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const bool last = i + 1 == ops.size();
    Op op{last && imm ? PostKind::write_imm : PostKind::write, rank_, peer, rail, wr_id};
    if (last && imm) op.imm = *imm;
    if (!check_local(op, ops[i].src) || !check_remote(op, ops[i].dst)) return Status::error;
    total += op.length;
    batch.push_back(op);
  }
  // Fault rules see a batch as one write (its kind, whether or not it carries an
  // immediate): a hold applies to its first op, which holds the rest behind it on the
  // FIFO wire, and a fault to its last, which reports the batch.
  const loopback::Decision d = f_.decide(PostKind::write, rank_, peer, rail);
  if (d.status == Status::retry) return Status::retry;
  if (d.status == Status::error) {
    return refuse(
        fmt::format("{} to rank {} on rail {}: injected rejection (fault rule {})", what, peer, rail, d.rule));
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    Op& op = batch[i];
    op.silent = i + 1 < batch.size();
    op.fault = op.silent ? Fault::none : d.fault;
    op.hold = i == 0 ? d.hold : Hold::none;
    op.rule = d.rule;
    op.release_at = Clock::now() + d.delay;
    op.imm_mark = f_.imms_on_other_rails(op.dst, op.rail);
    op.batch_last = !op.silent;
    op.batch_bytes = total;
    f_.enqueue(op);
  }
  return Status::ok;
}

Status LoopbackTransport::post(Op op, const LocalSpan& local, const RemoteSpan* remote) noexcept {
  const char* what = to_string(op.kind);
  std::string why;
  if (!valid_target(what, op.dst, op.rail, why)) {
    std::lock_guard lock(f_.mu);
    return refuse(why);
  }
  std::lock_guard lock(f_.mu);
  if (!f_.connected[f_.wire(rank_, op.dst, op.rail)]) {
    return refuse(fmt::format("{} to rank {} on rail {}: not connected (connect_all first)", what, op.dst, op.rail));
  }
  if (!check_local(op, local)) return Status::error;
  if (remote && !check_remote(op, *remote)) return Status::error;
  const loopback::Decision d = f_.decide(op.kind, rank_, op.dst, op.rail);
  if (d.status == Status::retry) return Status::retry;
  if (d.status == Status::error) {
    return refuse(
        fmt::format("{} to rank {} on rail {}: injected rejection (fault rule {})", what, op.dst, op.rail, d.rule));
  }
  op.fault = d.fault;
  op.hold = d.hold;
  op.rule = d.rule;
  op.release_at = Clock::now() + d.delay;
  op.imm_mark = f_.imms_on_other_rails(op.dst, op.rail);
  f_.enqueue(op);
  return Status::ok;
}

// A receive matches the oldest unexpected message from its peer on its rail, or waits
// for the next one; it is never held on a wire.
Status LoopbackTransport::post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept {
  Op op{PostKind::recv, rank_, peer, rail, wr_id};
  std::string why;
  if (!valid_target("recv", peer, rail, why)) {
    std::lock_guard lock(f_.mu);
    return refuse(why);
  }
  std::lock_guard lock(f_.mu);
  if (!f_.connected[f_.wire(rank_, peer, rail)]) {
    return refuse(fmt::format("recv from rank {} on rail {}: not connected (connect_all first)", peer, rail));
  }
  if (!check_local(op, dst)) return Status::error;
  // Before decide(): a retry here must not use up a fault rule's count.
  if (f_.caps.max_outstanding > 0 && f_.unexpected[f_.wire(rank_, peer, rail)].empty() &&
      f_.recvs[f_.wire(rank_, peer, rail)].size() >= f_.caps.max_outstanding) {
    return Status::retry;
  }
  const loopback::Decision d = f_.decide(PostKind::recv, rank_, peer, rail);
  if (d.status == Status::retry) return Status::retry;
  if (d.status == Status::error) {
    return refuse(fmt::format("recv from rank {} on rail {}: injected rejection (fault rule {})", peer, rail, d.rule));
  }
  if (d.fault == Fault::fail) {
    f_.fail(op, fmt::format("injected failure (fault rule {})", d.rule));
    return Status::ok;
  }
  const loopback::PostedRecv r{wr_id, op.local_key, op.local_offset, op.length};
  auto& early = f_.unexpected[f_.wire(rank_, peer, rail)];
  if (early.empty()) {
    f_.recvs[f_.wire(rank_, peer, rail)].push_back(r);
    return Status::ok;
  }
  f_.land_message(rank_, peer, rail, r, early.front().data(), early.front().size());
  early.pop_front();
  return Status::ok;
}

}  // namespace

std::unique_ptr<Transport> make_loopback_transport(std::shared_ptr<LoopbackFabric> fabric, int rank) {
  return std::make_unique<LoopbackTransport>(std::move(fabric), rank);
}

namespace {

OpenRank open_on(std::shared_ptr<LoopbackFabric> fabric) {
  return [fabric](Bootstrap& b) {
    auto t = make_loopback_transport(fabric, b.rank());
    t->connect_all(b);
    return t;
  };
}

}  // namespace

Net loopback_net(LoopbackOptions options, std::vector<FaultRule> rules, std::string name) {
  return Net{std::move(name), [options, rules](int n, int rails) {
               LoopbackOptions o = options;
               o.rails = rails;
               auto fabric = std::make_shared<LoopbackFabric>(n, o);
               for (const FaultRule& rule : rules) fabric->inject(rule);
               return open_on(fabric);
             }};
}

Net fabric_net(std::shared_ptr<LoopbackFabric> fabric, std::string name) {
  return Net{
      std::move(name), [fabric](int n, int rails) {
        if (n != fabric->world_size() || rails != fabric->options().rails) {
          throw std::invalid_argument(fmt::format("fabric_net: the fabric has {} ranks and {} rails, not {} and {}",
                                                  fabric->world_size(), fabric->options().rails, n, rails));
        }
        return open_on(fabric);
      }};
}

}  // namespace railbench::testing
