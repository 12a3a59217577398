#include "lib/transport/transport.h"

#include <cstring>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"

namespace railbench {

const char* to_string(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::host: return "host";
    case MemoryKind::cuda: return "cuda";
    case MemoryKind::cuda_host: return "cuda-host";
  }
  return "unknown";
}

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
    case OpKind::write: return "write";
    case OpKind::read: return "read";
    case OpKind::remote_write_imm: return "remote write-with-imm";
    case OpKind::collective: return "collective";
  }
  return "unknown";
}

namespace {

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

template <class T>
T get(std::span<const uint8_t> in, size_t& pos) {
  if (pos + sizeof(T) > in.size()) {
    throw BootstrapError(
        fmt::format("remote key blob is truncated ({} bytes): peers run different railbench builds?", in.size()));
  }
  T v;
  std::memcpy(&v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return v;
}

}  // namespace

// Layout: u64 length, u32 rail count, then (u64 addr, u64 key, u32 n, n packed bytes)
// per rail; host byte order, since every rank of one job runs on the same architecture.
std::vector<uint8_t> RemoteKey::serialize() const {
  std::vector<uint8_t> out;
  out.reserve(12 + rails.size() * 20);
  put<uint64_t>(out, length);
  put<uint32_t>(out, static_cast<uint32_t>(rails.size()));
  for (const auto& r : rails) {
    put<uint64_t>(out, r.addr);
    put<uint64_t>(out, r.key);
    put<uint32_t>(out, static_cast<uint32_t>(r.packed.size()));
    out.insert(out.end(), r.packed.begin(), r.packed.end());
  }
  return out;
}

RemoteKey RemoteKey::deserialize(std::span<const uint8_t> bytes) {
  RemoteKey k;
  size_t pos = 0;
  k.length = get<uint64_t>(bytes, pos);
  auto n = get<uint32_t>(bytes, pos);
  k.rails.resize(n);
  for (auto& r : k.rails) {
    r.addr = get<uint64_t>(bytes, pos);
    r.key = get<uint64_t>(bytes, pos);
    const auto n_packed = get<uint32_t>(bytes, pos);
    for (uint32_t i = 0; i < n_packed; ++i) r.packed.push_back(get<uint8_t>(bytes, pos));
  }
  return k;
}

void Transport::connect_all(Bootstrap& bootstrap) {
  if (bootstrap.size() != world_size() || bootstrap.rank() != rank()) {
    throw BootstrapError(fmt::format("transport was built for rank {} of {}, bootstrap says rank {} of {}", rank(),
                                     world_size(), bootstrap.rank(), bootstrap.size()));
  }
  for (int rail = 0; rail < num_rails(); ++rail) {
    auto blobs = bootstrap.all_gather_v(local_address(rail));
    for (int peer = 0; peer < world_size(); ++peer) {
      if (peer != rank()) connect(peer, rail, blobs[peer]);
    }
  }
  bootstrap.barrier();
}

bool Transport::valid_target(const char* what, int peer, int rail, std::string& why) const noexcept {
  try {
    if (rail < 0 || rail >= num_rails()) {
      why = fmt::format("{} with peer {}: rail {} does not exist ({} rail(s))", what, peer, rail, num_rails());
      return false;
    }
    if (peer < 0 || peer >= world_size()) {
      why = fmt::format("{} on rail {}: peer {} is not a rank (world size {})", what, rail, peer, world_size());
      return false;
    }
  } catch (...) {
    why.clear();
    return false;
  }
  return true;
}

Status Transport::post_collective(const CollectiveOp&, uint64_t) noexcept {
  return Status::error;
}

Status Transport::ping_pong(const PingPong&) noexcept {
  return Status::error;
}

Status Transport::post_write_batch(int peer, int rail, std::span<const WriteSpan> ops, std::optional<uint32_t> imm,
                                   uint64_t wr_id) noexcept {
  // A pure interface has no error text of its own to set: transports whose caps() say
  // max_batch > 1 override this.
  if (ops.size() != 1) return Status::error;
  if (imm) return post_write_imm(peer, rail, ops[0].src, ops[0].dst, *imm, wr_id);
  return post_write(peer, rail, ops[0].src, ops[0].dst, wr_id);
}

}  // namespace railbench
