#include "collectives/alltoall.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "collectives/pairwise.h"
#include "collectives/reduce.h"
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
  pairwise_exchange(p_, Group::world(p_.transport()), opt_.rails, opt_.window,
                    PairwiseBlocks{send_block, land_block, copy_own}, step_us_, "an all-to-all block",
                    "all-to-all sends");
  if (in_place) {
    for (int q = 0; q < n; ++q)
      if (q != r)
        copy_bytes(opt_.memory, b.recv->at(b.recv_offset + static_cast<size_t>(q) * block),
                   scratch_mr_->at(static_cast<size_t>(q) * block), block);
  }
}

}  // namespace railbench
