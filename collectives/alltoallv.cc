#include "collectives/alltoallv.h"

#include <algorithm>

#include <fmt/format.h>

#include "collectives/pairwise.h"
#include "collectives/reduce.h"
#include "lib/core/errors.h"

namespace railbench {

namespace {
size_t extent(const std::vector<size_t>& counts, const std::vector<size_t>& offsets) {
  size_t e = 0;
  for (size_t m = 0; m < counts.size(); ++m)
    if (counts[m]) e = std::max(e, offsets[m] + counts[m]);
  return e;
}
std::vector<size_t> prefix(const std::vector<size_t>& counts) {
  std::vector<size_t> off(counts.size());
  size_t at = 0;
  for (size_t m = 0; m < counts.size(); ++m) off[m] = at, at += counts[m];
  return off;
}
}  // namespace

AllToAllVLayout AllToAllVLayout::packed(const std::vector<size_t>& counts_to, const std::vector<size_t>& counts_from) {
  return AllToAllVLayout{counts_to, prefix(counts_to), counts_from, prefix(counts_from)};
}
size_t AllToAllVLayout::send_extent() const {
  return extent(send_counts, send_offsets);
}
size_t AllToAllVLayout::recv_extent() const {
  return extent(recv_counts, recv_offsets);
}

AllToAllV::AllToAllV(Progress& progress, Group group, const AllToAllVOptions& options)
    : p_(progress), g_(std::move(group)), opt_(options) {
  const Transport& t = p_.transport();
  if (!t.caps().send_recv) {
    throw UnsupportedError(fmt::format("all-to-all-v needs send/recv, which {} ({}) lacks", t.name(), t.provider()));
  }
  if (opt_.rails < 1 || opt_.rails > t.num_rails()) {
    throw UsageError(fmt::format("all-to-all-v asked for {} rails, transport has {}", opt_.rails, t.num_rails()));
  }
  if (opt_.window < 1) throw UsageError(fmt::format("--window {} must be 1 or more", opt_.window));
  if (g_.size() < 1 || g_.me < 0 || g_.me >= g_.size() || g_.global(g_.me) != t.rank()) {
    throw UsageError(
        fmt::format("all-to-all-v group does not hold rank {} as its member {}: build the Group with "
                    "this rank's own index in `me`",
                    t.rank(), g_.me));
  }
  scratch_ = std::make_unique<gpu::Buffer>(opt_.memory, std::max<size_t>(opt_.max_bytes, 64));
  scratch_mr_ = p_.transport().register_memory(scratch_->data(), scratch_->size(), opt_.memory);
  step_us_.assign(static_cast<size_t>(g_.size()), 0.0);
}

AllToAllV::~AllToAllV() = default;

void AllToAllV::check_layout(const CollectiveBuffers& b, const AllToAllVLayout& l, size_t esize) const {
  const auto n = static_cast<size_t>(g_.size());
  for (const auto* v : {&l.send_counts, &l.send_offsets, &l.recv_counts, &l.recv_offsets}) {
    if (v->size() != n)
      throw UsageError(
          fmt::format("all-to-all-v layout has {} entries for a group of {}: give one per member", v->size(), n));
  }
  const size_t send_end = b.send_offset + l.send_extent() * esize, recv_end = b.recv_offset + l.recv_extent() * esize;
  if (send_end > b.send->length() || recv_end > b.recv->length()) {
    throw UsageError(
        fmt::format("all-to-all-v layout spans {} B to send and {} B to receive, beyond the {} and {} B "
                    "registered: register larger buffers",
                    send_end, recv_end, b.send->length(), b.recv->length()));
  }
  if (b.in_place() && l.recv_extent() * esize > opt_.max_bytes) {
    throw UsageError(
        fmt::format("all-to-all-v in place receives {} B, beyond the {} B of scratch this instance was "
                    "built with (AllToAllVOptions::max_bytes)",
                    l.recv_extent() * esize, opt_.max_bytes));
  }
}

void AllToAllV::run(const CollectiveBuffers& b, const AllToAllVLayout& l, DataType type) {
  const size_t esize = size_of(type);
  check_layout(b, l, esize);
  const int n = g_.size(), me = g_.me;
  const bool in_place = b.in_place();
  auto idx = [](int m) { return static_cast<size_t>(m); };
  auto send_to = [&](int m) {
    return LocalSpan{b.send, b.send_offset + l.send_offsets[idx(m)] * esize, l.send_counts[idx(m)] * esize};
  };
  auto land_from = [&](int m) {
    const size_t off = l.recv_offsets[idx(m)] * esize, len = l.recv_counts[idx(m)] * esize;
    return in_place ? LocalSpan{scratch_mr_.get(), off, len} : LocalSpan{b.recv, b.recv_offset + off, len};
  };
  if (l.send_counts[idx(me)] != l.recv_counts[idx(me)]) {
    throw UsageError(
        fmt::format("all-to-all-v sends {} elements to itself but expects {}: the counts to and from "
                    "this member must agree",
                    l.send_counts[idx(me)], l.recv_counts[idx(me)]));
  }
  // In place, the own block goes through scratch too: its recv offset may overlap a
  // block that is still to be sent.
  auto copy_own = [&] {
    const LocalSpan from = send_to(me), to = land_from(me);
    if (from.length) copy_bytes(opt_.memory, to.mr->at(to.offset), from.mr->at(from.offset), from.length);
  };
  if (n == 1) {
    copy_own();
  } else {
    pairwise_exchange(p_, g_, opt_.rails, opt_.window, PairwiseBlocks{send_to, land_from, copy_own}, step_us_,
                      "an all-to-all-v block", "all-to-all-v sends");
  }
  if (in_place) {
    for (int m = 0; m < n; ++m) {
      const LocalSpan s = land_from(m);
      if (s.length) copy_bytes(opt_.memory, b.recv->at(b.recv_offset + s.offset), scratch_mr_->at(s.offset), s.length);
    }
  }
}

}  // namespace railbench
