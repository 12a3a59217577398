// What every transport (ofi, verbs, nccl) otherwise repeats: its place in the job (rank,
// world size), what it offers (provider, capabilities), and the reason for its last
// Status::error, with the one set_error that the data path may call.
//
// A base beside Transport rather than fields inside it: Transport stays a pure
// interface with no constructor, so a test double (a loopback transport) implements it
// with no state of its own, while the real transports derive from this and share one
// set of rules for their error text (fixed buffer, no allocation, never throws).
// Header-only: RailTransport is a template over the transport's rail type.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/transport/transport.h"

namespace railbench {

class TransportBase : public Transport {
 public:
  std::string provider() const override { return provider_; }
  const Capabilities& caps() const override { return caps_; }
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string last_error() const override { return std::string(last_error_.data(), last_error_size_); }
  // For transports without a batch form (caps().max_batch <= 1): a batch of one goes
  // through post_write/post_write_imm, a longer one is refused with a reason.
  Status post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                          uint64_t wr_id) noexcept override {
    if (ops.size() == 1) return Transport::post_write_batch(peer, rail, ops, imm, wr_id);
    set_error("batched write of {} to peer {} on rail {}: provider {} takes 1..{} write(s) per batch", ops.size(), peer,
              rail, provider_, caps_.max_batch);
    return Status::error;
  }

 protected:
  TransportBase(int rank, int world_size) : rank_(rank), world_size_(world_size) {}

  // Replaces last_error(). Formats into a fixed buffer, so it neither allocates nor
  // throws and is safe on the data path; text past kMaxErrorSize bytes is cut off.
  // Arguments must not allocate either (pass const char* or a formatter such as
  // ofi::FiErrorText, not a freshly built std::string): they are evaluated outside.
  template <class... Args>
  void set_error(fmt::format_string<Args...> format, Args&&... args) noexcept {
    try {
      const auto r = fmt::format_to_n(last_error_.data(), last_error_.size(), format, std::forward<Args>(args)...);
      last_error_size_ = std::min(r.size, last_error_.size());
    } catch (...) {
      // Only a formatter of our own could throw; keep a message rather than none.
      constexpr const char kFallback[] = "an operation failed, and formatting its error message failed too";
      std::memcpy(last_error_.data(), kFallback, sizeof(kFallback) - 1);
      last_error_size_ = sizeof(kFallback) - 1;
    }
  }
  bool has_error() const noexcept { return last_error_size_ > 0; }

  // Transport::valid_target, with the reason going to last_error() (same texts).
  using Transport::valid_target;
  bool valid_target(const char* what, int peer, int rail) noexcept {
    if (rail < 0 || rail >= num_rails()) {
      set_error("{} with peer {}: rail {} does not exist ({} rail(s))", what, peer, rail, num_rails());
      return false;
    }
    if (peer < 0 || peer >= world_size_) {
      set_error("{} on rail {}: peer {} is not a rank (world size {})", what, rail, peer, world_size_);
      return false;
    }
    return true;
  }

  const int rank_;
  const int world_size_;
  std::string provider_;  // filled in by the transport's constructor
  Capabilities caps_;     // filled in by the transport's constructor

 private:
  static constexpr size_t kMaxErrorSize = 1024;  // the longest data-path message is ~600
  std::array<char, kMaxErrorSize> last_error_{};
  size_t last_error_size_ = 0;
};

// A transport whose rails are objects of its own (ofi, verbs): name, rails, their
// descriptions and addresses, and connect() with one set of range checks. `RailPtr`
// owns one rail (std::unique_ptr or std::shared_ptr) whose type offers describe(),
// blob() and connect(peer, remote address). The data path reaches rails_ directly, so
// it costs no more than a member of the transport itself.
template <class RailPtr>
class RailTransport : public TransportBase {
 public:
  std::string name() const override { return name_; }
  int num_rails() const override { return static_cast<int>(rails_.size()); }
  RailInfo rail_info(int rail) const override { return checked_rail(rail).describe(); }
  std::vector<uint8_t> local_address(int rail) const override { return checked_rail(rail).blob(); }
  // peer == rank works too: a rail facing itself connects to itself (loopback).
  void connect(int peer, int rail, std::span<const uint8_t> remote_address) override {
    checked_rail(rail);
    if (peer < 0 || peer >= world_size_) {
      throw UsageError(fmt::format("cannot connect peer {} on rail {}: ranks are 0..{}", peer, rail, world_size_ - 1));
    }
    rails_[static_cast<size_t>(rail)]->connect(peer, remote_address);
  }

 protected:
  RailTransport(const char* name, int rank, int world_size) : TransportBase(rank, world_size), name_(name) {}

  // Setup only: throws UsageError for a rail that does not exist.
  const auto& checked_rail(int rail) const {
    if (rail < 0 || rail >= num_rails()) {
      throw UsageError(
          fmt::format("rail {} does not exist: the {} transport has {} rail(s)", rail, name_, num_rails()));
    }
    return *rails_[static_cast<size_t>(rail)];
  }

  std::vector<RailPtr> rails_;

 private:
  const char* name_;  // "ofi": a literal, lives as long as the program
};

}  // namespace railbench
