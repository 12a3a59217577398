// A Transport that forwards every call to the one it wraps: the base of the decorators
// that watch a run's traffic (lib/observe's timeline and straggler recorders), which
// override only the calls they record and reach the wrapped transport through inner().
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lib/transport/transport.h"

namespace railbench {

class ForwardingTransport : public Transport {
 public:
  // A decorator watches every operation, so ping-pongs go through posts it sees: the
  // capability is hidden (a run with --timeline measures latency the generic way).
  explicit ForwardingTransport(std::unique_ptr<Transport> inner) : inner_(std::move(inner)), caps_(inner_->caps()) {
    caps_.ping_pong = false;
  }

  std::string name() const override { return inner_->name(); }
  std::string provider() const override { return inner_->provider(); }
  const Capabilities& caps() const override { return caps_; }
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  int num_rails() const override { return inner_->num_rails(); }
  RailInfo rail_info(int rail) const override { return inner_->rail_info(rail); }
  std::vector<uint8_t> local_address(int rail) const override { return inner_->local_address(rail); }
  void connect(int peer, int rail, std::span<const uint8_t> remote_address) override {
    inner_->connect(peer, rail, remote_address);
  }
  void connect_all(Bootstrap& bootstrap) override { inner_->connect_all(bootstrap); }
  std::unique_ptr<MemoryRegion> register_memory(void* data, size_t length, MemoryKind kind) override {
    return inner_->register_memory(data, length, kind);
  }
  Status post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept override {
    return inner_->post_send(peer, rail, src, wr_id);
  }
  Status post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept override {
    return inner_->post_recv(peer, rail, dst, wr_id);
  }
  Status post_write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint64_t wr_id) noexcept override {
    return inner_->post_write(peer, rail, src, dst, wr_id);
  }
  Status post_write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm,
                        uint64_t wr_id) noexcept override {
    return inner_->post_write_imm(peer, rail, src, dst, imm, wr_id);
  }
  Status post_read(int peer, int rail, const LocalSpan& dst, const RemoteSpan& src, uint64_t wr_id) noexcept override {
    return inner_->post_read(peer, rail, dst, src, wr_id);
  }
  Status post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                          uint64_t wr_id) noexcept override {
    return inner_->post_write_batch(peer, rail, ops, imm, wr_id);
  }
  Status post_collective(const CollectiveOp& op, uint64_t wr_id) noexcept override {
    return inner_->post_collective(op, wr_id);
  }
  size_t poll(std::span<Completion> out) noexcept override { return inner_->poll(out); }
  std::string last_error() const override { return inner_->last_error(); }
  std::vector<ChannelCounters> channel_counters() const override { return inner_->channel_counters(); }
  std::vector<NetworkFlow> network_flows() const override { return inner_->network_flows(); }
  double device_time_us() const override { return inner_->device_time_us(); }

 protected:
  Transport& inner() { return *inner_; }

 private:
  std::unique_ptr<Transport> inner_;
  Capabilities caps_;
};

}  // namespace railbench
