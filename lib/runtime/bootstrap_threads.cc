// Ranks as threads of one process: used by tests to run 2..8 ranks without mpirun.
#include <condition_variable>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "lib/core/clock.h"
#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"

namespace railbench {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), arrived_flags_(size, false) {}

  int size() const { return size_; }

  // A generation barrier; on timeout names the ranks that have not arrived.
  void arrive_and_wait(int rank, double timeout_s, const char* what) {
    std::unique_lock lock(mu_);
    const uint64_t gen = generation_;
    arrived_flags_[rank] = true;
    if (++arrived_ == size_) {
      arrived_ = 0;
      std::fill(arrived_flags_.begin(), arrived_flags_.end(), false);
      ++generation_;
      cv_.notify_all();
      return;
    }
    auto deadline = Deadline::after(timeout_s);
    while (generation_ == gen) {
      if (cv_.wait_until(lock, deadline.at()) == std::cv_status::timeout && generation_ == gen) {
        std::string missing;
        for (int r = 0; r < size_; ++r)
          if (!arrived_flags_[r]) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", r);
        throw TimeoutError(fmt::format("rank {}: {} timed out after {:.0f} s waiting for thread rank(s) {}", rank, what,
                                       timeout_s, missing));
      }
    }
  }

  std::vector<std::byte>& buffer() { return buffer_; }
  // Each rank's block of a gather, kept apart because their lengths differ.
  std::vector<std::vector<uint8_t>>& blocks() { return blocks_; }
  std::mutex& mutex() { return mu_; }

 private:
  int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<bool> arrived_flags_;
  std::vector<std::byte> buffer_;
  std::vector<std::vector<uint8_t>> blocks_;
};

namespace {

class ThreadBootstrap final : public Bootstrap {
 public:
  ThreadBootstrap(std::shared_ptr<ThreadGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string kind() const override { return "threads"; }

  void all_gather(std::span<const std::byte> in, std::span<std::byte> out) override {
    const size_t block = in.size();
    {
      std::lock_guard lock(group_->mutex());
      auto& buf = group_->buffer();
      if (buf.size() < block * size()) buf.resize(block * size());
      std::memcpy(buf.data() + block * rank_, in.data(), block);
    }
    group_->arrive_and_wait(rank_, timeout_s_, "all_gather");
    {
      std::lock_guard lock(group_->mutex());
      std::memcpy(out.data(), group_->buffer().data(), block * size());
    }
    // Nobody may overwrite the buffer before everyone has copied it out.
    group_->arrive_and_wait(rank_, timeout_s_, "all_gather");
  }

  void barrier() override { group_->arrive_and_wait(rank_, timeout_s_, "barrier"); }

 protected:
  std::vector<std::vector<uint8_t>> gather_blocks(std::span<const uint8_t> in, int root) override {
    {
      std::lock_guard lock(group_->mutex());
      auto& blocks = group_->blocks();
      if (blocks.size() < static_cast<size_t>(size())) blocks.resize(size());
      blocks[rank_].assign(in.begin(), in.end());
    }
    group_->arrive_and_wait(rank_, timeout_s_, "gather");
    std::vector<std::vector<uint8_t>> out;
    if (rank_ == root) {
      std::lock_guard lock(group_->mutex());
      out = std::move(group_->blocks());
      group_->blocks().clear();
    }
    // Nobody may put a block of the next gather in before the root has taken this one's.
    group_->arrive_and_wait(rank_, timeout_s_, "gather");
    return out;
  }

 private:
  std::shared_ptr<ThreadGroup> group_;
  int rank_;
};

}  // namespace

std::shared_ptr<ThreadGroup> make_thread_group(int size) {
  return std::make_shared<ThreadGroup>(size);
}

std::unique_ptr<Bootstrap> make_thread_bootstrap(std::shared_ptr<ThreadGroup> group, int rank) {
  return std::make_unique<ThreadBootstrap>(std::move(group), rank);
}

}  // namespace railbench
