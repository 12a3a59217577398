#include "lib/observe/op_recorder.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "lib/core/clock.h"
#include "lib/core/errors.h"

namespace railbench {

static_assert(std::is_trivially_copyable_v<OpRecord> && std::is_trivially_copyable_v<MsgRecord>);

std::string_view OpKey::name() const {
  return {label, strnlen(label, sizeof(label))};
}

bool OpKey::operator==(const OpKey& o) const {
  return iteration == o.iteration && index == o.index && name() == o.name();
}

OpKey make_op_key(uint32_t iteration, uint32_t index, std::string_view label, uint32_t flags) {
  OpKey k;
  k.iteration = iteration;
  k.index = index;
  k.flags = flags;
  std::memcpy(k.label, label.data(), std::min(label.size(), sizeof(k.label) - 1));
  return k;
}

int64_t monotonic_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

namespace {

constexpr char kMagic[8] = {'R', 'B', 'O', 'P', 'S', '0', '0', '1'};

template <class T>
void put(std::vector<uint8_t>& out, const T* p, size_t n) {
  const auto* b = reinterpret_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n * sizeof(T));
}

}  // namespace

std::vector<uint8_t> serialize(const RankOps& r) {
  std::vector<uint8_t> out;
  const uint64_t head[3] = {r.ops.size(), r.msgs.size(), r.dropped_ops};
  put(out, kMagic, sizeof(kMagic));
  put(out, head, 3);
  put(out, r.ops.data(), r.ops.size());
  put(out, r.msgs.data(), r.msgs.size());
  return out;
}

RankOps deserialize_rank_ops(std::span<const uint8_t> bytes) {
  uint64_t head[3];
  const size_t fixed = sizeof(kMagic) + sizeof(head);
  if (bytes.size() < fixed || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw BootstrapError(
        "op records: a rank sent a blob that is not op records: run the same railbench build on every rank");
  std::memcpy(head, bytes.data() + sizeof(kMagic), sizeof(head));
  if (bytes.size() != fixed + head[0] * sizeof(OpRecord) + head[1] * sizeof(MsgRecord))
    throw BootstrapError(fmt::format("op records: {} bytes for {} ops and {} messages: the gather was cut short",
                                     bytes.size(), head[0], head[1]));
  RankOps r;
  r.ops.resize(head[0]);
  r.msgs.resize(head[1]);
  r.dropped_ops = head[2];
  if (!r.ops.empty()) std::memcpy(r.ops.data(), bytes.data() + fixed, r.ops.size() * sizeof(OpRecord));
  if (!r.msgs.empty())
    std::memcpy(r.msgs.data(), bytes.data() + fixed + r.ops.size() * sizeof(OpRecord),
                r.msgs.size() * sizeof(MsgRecord));
  return r;
}

OpRecorder::OpRecorder(size_t max_ops, size_t max_msgs)
    : ops_(std::max<size_t>(max_ops, 1)),
      msgs_(std::max<size_t>(max_msgs, 1)),
      op_first_seq_(ops_.size()),
      pending_cap_(std::min<size_t>(msgs_.size(), 65536)) {
  pending_.reserve(pending_cap_);
}

void OpRecorder::begin_op(const OpKey& key) noexcept {
  if (open_) end_op();
  const int64_t now = monotonic_ns();
  const size_t slot = op_seq_ % ops_.size();
  ops_[slot] = OpRecord{};
  ops_[slot].key = key;
  ops_[slot].arrive_ns = now;
  op_first_seq_[slot] = msg_seq_;
  // A completion still owed from an earlier op is not this op's.
  pending_.clear();
  last_poll_ns_ = now;
  open_ = true;
}

void OpRecorder::end_op() noexcept {
  if (!open_) return;
  ops_[op_seq_ % ops_.size()].end_ns = monotonic_ns();
  ++op_seq_;
  open_ = false;
}

void OpRecorder::on_post(MsgDir dir, int peer, int rail, size_t bytes, uint64_t wr_id) noexcept {
  if (!open_) return;
  MsgRecord& m = msgs_[msg_seq_ % msgs_.size()];
  m = MsgRecord{};
  m.peer = peer;
  m.rail = rail;
  m.bytes = bytes;
  m.dir = dir;
  m.post_ns = monotonic_ns();
  // Beyond the cap of outstanding messages a completion goes unseen: done_ns stays 0.
  if (pending_.size() < pending_cap_) pending_.push_back(Pending{wr_id, msg_seq_});
  ++msg_seq_;
  ++ops_[op_seq_ % ops_.size()].msgs;
}

void OpRecorder::on_poll(std::span<const Completion> done, int64_t now_ns) noexcept {
  if (!open_) return;
  OpRecord& op = ops_[op_seq_ % ops_.size()];
  if (now_ns - last_poll_ns_ > op.stall_ns) {
    op.stall_ns = now_ns - last_poll_ns_;
    op.stall_from_ns = last_poll_ns_;
  }
  last_poll_ns_ = now_ns;
  for (const Completion& c : done) {
    if (c.op != OpKind::send && c.op != OpKind::recv && c.op != OpKind::write) continue;
    // Completions come back mostly in post order: the match is near the front.
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.wr_id == c.wr_id; });
    if (it == pending_.end()) continue;
    if (msg_seq_ - it->msg_seq <= msgs_.size() && c.status == Status::ok)
      msgs_[it->msg_seq % msgs_.size()].done_ns = now_ns;
    pending_.erase(it);
  }
}

RankOps OpRecorder::take() {
  if (open_) end_op();
  RankOps out;
  const uint64_t from = std::max<uint64_t>(base_op_seq_, op_seq_ > ops_.size() ? op_seq_ - ops_.size() : 0);
  const uint64_t oldest_msg = msg_seq_ > msgs_.size() ? msg_seq_ - msgs_.size() : 0;
  out.dropped_ops = dropped_ + (from - base_op_seq_);
  for (uint64_t s = from; s < op_seq_; ++s) {
    const size_t slot = s % ops_.size();
    OpRecord op = ops_[slot];
    const uint64_t first = op_first_seq_[slot];
    // Some of its messages were overwritten by later ones: the op is incomplete, drop it.
    if (first < oldest_msg) {
      ++out.dropped_ops;
      continue;
    }
    op.first_msg = static_cast<uint32_t>(out.msgs.size());
    for (uint64_t m = first; m < first + op.msgs; ++m) out.msgs.push_back(msgs_[m % msgs_.size()]);
    out.ops.push_back(op);
  }
  base_op_seq_ = op_seq_;
  dropped_ = 0;
  pending_.clear();
  return out;
}

Status RecordingTransport::post_send(int peer, int rail, const LocalSpan& src, uint64_t wr_id) noexcept {
  const Status s = inner().post_send(peer, rail, src, wr_id);
  if (s == Status::ok) rec_.on_post(MsgDir::send, peer, rail, src.length, wr_id);
  return s;
}

Status RecordingTransport::post_recv(int peer, int rail, const LocalSpan& dst, uint64_t wr_id) noexcept {
  const Status s = inner().post_recv(peer, rail, dst, wr_id);
  if (s == Status::ok) rec_.on_post(MsgDir::recv, peer, rail, dst.length, wr_id);
  return s;
}

Status RecordingTransport::post_write(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst,
                                      uint64_t wr_id) noexcept {
  const Status s = inner().post_write(peer, rail, src, dst, wr_id);
  if (s == Status::ok) rec_.on_post(MsgDir::write, peer, rail, src.length, wr_id);
  return s;
}

Status RecordingTransport::post_write_imm(int peer, int rail, const LocalSpan& src, const RemoteSpan& dst, uint32_t imm,
                                          uint64_t wr_id) noexcept {
  const Status s = inner().post_write_imm(peer, rail, src, dst, imm, wr_id);
  if (s == Status::ok) rec_.on_post(MsgDir::write, peer, rail, src.length, wr_id);
  return s;
}

Status RecordingTransport::post_write_batch(int peer, int rail, std::span<const WriteSpan> ops,
                                            std::optional<uint32_t> imm, uint64_t wr_id) noexcept {
  const Status s = inner().post_write_batch(peer, rail, ops, imm, wr_id);
  size_t bytes = 0;
  for (const WriteSpan& w : ops) bytes += w.src.length;
  if (s == Status::ok) rec_.on_post(MsgDir::write, peer, rail, bytes, wr_id);
  return s;
}

size_t RecordingTransport::poll(std::span<Completion> out) noexcept {
  const size_t n = inner().poll(out);
  if (rec_.in_op()) rec_.on_poll(out.first(n), monotonic_ns());
  return n;
}

}  // namespace railbench
