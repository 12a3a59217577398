#include "collectives/alltoall.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "collectives/reduce.h"
#include "lib/core/clock.h"
#include "lib/core/errors.h"

namespace railbench {

AllToAll::AllToAll(Progress& progress, const AllToAllOptions& options) : p_(progress), opt_(options) {
  const Transport& t = p_.transport();
  if (!t.caps().send_recv) {
    throw UnsupportedError(fmt::format("all-to-all needs send/recv, which {} ({}) lacks", t.name(), t.provider()));
  }
  if (opt_.rails < 1 || opt_.rails > t.num_rails()) {
    throw UsageError(fmt::format("all-to-all asked for {} rails, transport has {}", opt_.rails, t.num_rails()));
  }
  if (opt_.window < 1) throw UsageError(fmt::format("--window {} must be 1 or more", opt_.window));
  scratch_ = std::make_unique<gpu::Buffer>(opt_.memory, std::max<size_t>(opt_.max_bytes, 64));
  scratch_mr_ = p_.transport().register_memory(scratch_->data(), scratch_->size(), opt_.memory);
  step_us_.assign(static_cast<size_t>(t.world_size()), 0.0);
}

AllToAll::~AllToAll() = default;

void AllToAll::run(const CollectiveBuffers& b, size_t count, DataType type) {
  const int n = p_.transport().world_size(), r = p_.transport().rank();
  const size_t block = count * size_of(type);
  if (block * static_cast<size_t>(n) > opt_.max_bytes) {
    throw UsageError(fmt::format("all-to-all of {} bytes exceeds the {} bytes this instance was built for",
                                 block * static_cast<size_t>(n), opt_.max_bytes));
  }
  const bool in_place = b.in_place();
  auto send_block = [&](int q) { return LocalSpan{b.send, b.send_offset + static_cast<size_t>(q) * block, block}; };
  auto land_block = [&](int q) {
    return in_place ? LocalSpan{scratch_mr_.get(), static_cast<size_t>(q) * block, block}
                    : LocalSpan{b.recv, b.recv_offset + static_cast<size_t>(q) * block, block};
  };
  std::fill(step_us_.begin(), step_us_.end(), 0.0);
  auto copy_own = [&] {
    if (!in_place)
      copy_bytes(opt_.memory, b.recv->at(b.recv_offset + static_cast<size_t>(r) * block),
                 send_block(r).mr->at(send_block(r).offset), block);
  };
  if (n == 1 || block == 0) return copy_own();

  struct Step {
    int from = 0;
    Clock::time_point posted;
    std::vector<uint64_t> recvs;  // the pieces of the block from `from`
  };
  std::vector<Step> active;
  std::vector<uint64_t> sends, pending;
  int next = 1;
  auto post_step = [&] {
    const int to = (r + next) % n, from = (r - next + n) % n;
    Step s{from, Clock::now(), {}};
    post_exchange(p_, from, opt_.rails, LocalSpan{}, land_block(from), s.recvs);
    post_exchange(p_, to, opt_.rails, send_block(to), LocalSpan{}, sends);
    active.push_back(std::move(s));
    ++next;
  };
  while (next < n && static_cast<int>(active.size()) < opt_.window) post_step();
  // This rank's own block is copied while the first steps are in flight, not before.
  copy_own();
  while (!active.empty()) {
    // Retire every step whose block is complete; each retired step admits the next.
    bool retired = false;
    for (size_t i = 0; i < active.size();) {
      Step& s = active[i];
      if (std::all_of(s.recvs.begin(), s.recvs.end(), [&](uint64_t id) { return p_.done(id); })) {
        step_us_[static_cast<size_t>(s.from)] = seconds_between(s.posted, Clock::now()) * 1e6;
        active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
        retired = true;
        if (next < n) post_step();
      } else {
        ++i;
      }
    }
    if (retired || active.empty()) continue;
    pending.clear();
    for (const Step& s : active)
      for (uint64_t id : s.recvs)
        if (!p_.done(id)) pending.push_back(id);
    p_.wait_any(pending, "an all-to-all block");
  }
  for (uint64_t id : sends) p_.wait(id, "all-to-all sends");
  if (in_place) {
    for (int q = 0; q < n; ++q)
      if (q != r)
        copy_bytes(opt_.memory, b.recv->at(b.recv_offset + static_cast<size_t>(q) * block),
                   scratch_mr_->at(static_cast<size_t>(q) * block), block);
  }
}

}  // namespace railbench
