#include "transports/ofi/ofi_rail.h"

#include <netinet/in.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/runtime/signals.h"

namespace railbench::ofi {

namespace {

// Provider queue depth as pool size; some providers leave it 0 ("unspecified").
size_t pool_size(size_t provider_size) {
  constexpr size_t kDefault = 1024;
  constexpr size_t kMax = 1 << 16;
  return provider_size == 0 ? kDefault : std::min(provider_size, kMax);
}

// Remote write-with-imm completions arrive unsolicited, on top of our own operations.
constexpr size_t kRemoteCqSlack = 4096;

// Start of every address blob: "RBOF", so a blob of another transport is named as such.
constexpr uint32_t kBlobMagic = 0x52424f46;
constexpr size_t kBlobHeader = 2 * sizeof(uint32_t);

uint64_t random_key_base(size_t key_bytes) {
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) | rd();
  size_t bits = key_bytes == 0 || key_bytes >= 8 ? 64 : key_bytes * 8;
  uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  // Half the key space leaves room to count up without wrapping to FI_KEY_NOTAVAIL.
  return (r & (mask >> 1)) + 1;
}

// libfabric's shm provider names its region /dev/shm/<pid>:<n>:<n> after the process
// and fails with EBUSY when that name exists. A rank killed before it closed its
// endpoint leaves its region behind, and pids come round again (pid_max is 32768 on
// many hosts). The regions named after this process's pid, owned by this user.
std::vector<std::string> own_shm_regions() {
  std::vector<std::string> out;
  const std::string prefix = fmt::format("{}:", ::getpid());
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(prefix.size());
    const auto colon = rest.find(':');
    const auto digits = [](std::string_view v) {
      return !v.empty() && std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); });
    };
    if (colon == std::string::npos || !digits(std::string_view(rest).substr(0, colon)) ||
        !digits(std::string_view(rest).substr(colon + 1)))
      continue;
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid())
      out.push_back(e.path().string());
  }
  return out;
}

// Before this process's first shm endpoint: nothing of its own exists yet, so a region
// with its pid is a dead process's, and would make fi_enable fail.
void remove_stale_shm_regions() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const auto& path : own_shm_regions()) ::unlink(path.c_str());
  });
}

std::string setup_hint(const std::string& provider, const char* call, long long ret) {
  std::string_view p = provider;
  std::string_view c = call;
  if (p.starts_with("shm") && (c == "fi_endpoint" || c == "fi_enable")) {
    return "; is /dev/shm full or too small (containers: --shm-size)?";
  }
  if (c == "fi_mr_reg" && ret == -FI_ENOMEM) return "; raise the locked-memory limit (ulimit -l)";
  if (p.starts_with("verbs") || p.starts_with("efa")) return "; is the RDMA device up (ibv_devinfo)?";
  return "";
}

}  // namespace

Rail::Rail(int rail_index, InfoPtr granted, int world_size, bool with_rma, uint32_t salt)
    : index(rail_index),
      provider(granted->fabric_attr->prov_name),
      domain_name(granted->domain_attr->name != nullptr ? granted->domain_attr->name : "?"),
      fabric_name(granted->fabric_attr->name != nullptr ? granted->fabric_attr->name : "?"),
      rma(with_rma),
      info(std::move(granted)),
      tx_pool(pool_size(info->tx_attr->size), rail_index, false),
      rx_pool(pool_size(info->rx_attr->size), rail_index, true),
      peers(world_size, FI_ADDR_NOTAVAIL),
      tag_salt(static_cast<uint64_t>(salt) << 32),
      peer_salts(world_size, 0) {
  read_mr_mode();
  open_domain();
  open_cq();
  open_av(world_size);
  open_endpoint();
  read_address();
}

void Rail::close_endpoint() noexcept {
  ep.reset();
  av.reset();
  cq.reset();
}

void Rail::read_mr_mode() {
  uint64_t mr_mode = info->domain_attr->mr_mode;
  mr_local = (mr_mode & FI_MR_LOCAL) != 0;
  mr_virt_addr = (mr_mode & FI_MR_VIRT_ADDR) != 0;
  mr_prov_key = (mr_mode & FI_MR_PROV_KEY) != 0;
  mr_endpoint = (mr_mode & FI_MR_ENDPOINT) != 0;
  directed_recv = (info->caps & FI_DIRECTED_RECV) != 0;
  inject_size = info->tx_attr->inject_size;
  batch_iov =
      std::clamp<size_t>(std::min(info->tx_attr->iov_limit, info->tx_attr->rma_iov_limit), 1, OpContext::kMaxIov);
  deferred.reserve(tx_pool.size());
  if (!mr_prov_key) next_mr_key = random_key_base(info->domain_attr->mr_key_size);
}

void Rail::open_domain() {
  fid_fabric* f = nullptr;
  if (int ret = fi_fabric(info->fabric_attr, &f, nullptr); ret != 0) fail("fi_fabric", ret);
  fabric.reset(f);

  fid_domain* d = nullptr;
  if (int ret = fi_domain(fabric.get(), info.get(), &d, nullptr); ret != 0) fail("fi_domain", ret);
  domain.reset(d);
}

void Rail::open_cq() {
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_TAGGED;
  cq_attr.wait_obj = FI_WAIT_NONE;  // we only ever poll; no fd to maintain
  cq_attr.size = tx_pool.size() + rx_pool.size() + kRemoteCqSlack;
  fid_cq* c = nullptr;
  if (int ret = fi_cq_open(domain.get(), &cq_attr, &c, nullptr); ret != 0) fail("fi_cq_open", ret);
  cq.reset(c);
}

void Rail::open_av(int world_size) {
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  av_attr.count = static_cast<size_t>(world_size);
  fid_av* a = nullptr;
  if (int ret = fi_av_open(domain.get(), &av_attr, &a, nullptr); ret != 0) fail("fi_av_open", ret);
  av.reset(a);
}

void Rail::open_endpoint() {
  const bool shm = provider.starts_with("shm");
  if (shm) remove_stale_shm_regions();
  fid_ep* e = nullptr;
  if (int ret = fi_endpoint(domain.get(), info.get(), &e, nullptr); ret != 0) fail("fi_endpoint", ret);
  ep.reset(e);
  if (int ret = fi_ep_bind(ep.get(), &cq->fid, FI_TRANSMIT | FI_RECV); ret != 0) fail("fi_ep_bind(cq)", ret);
  if (int ret = fi_ep_bind(ep.get(), &av->fid, 0); ret != 0) fail("fi_ep_bind(av)", ret);
  if (int ret = fi_enable(ep.get()); ret != 0) fail("fi_enable", ret);
  // A rank ended by a signal exits without closing the endpoint: its handler removes
  // the region instead, so signalled runs do not fill /dev/shm.
  if (shm)
    for (const auto& path : own_shm_regions()) add_signal_cleanup_path(path);
}

void Rail::read_address() {
  address.resize(256);
  size_t len = address.size();
  int ret = fi_getname(&ep->fid, address.data(), &len);
  if (ret == -FI_ETOOSMALL) {
    address.resize(len);
    ret = fi_getname(&ep->fid, address.data(), &len);
  }
  if (ret != 0) fail("fi_getname", ret);
  address.resize(len);

  char text[256] = {};
  size_t text_len = sizeof(text);
  fi_av_straddr(av.get(), address.data(), text, &text_len);
  address_text = text;
}

void Rail::fail(const char* call, long long ret, const std::string& hint) const {
  throw TransportError(fmt::format("libfabric {} failed for provider {} domain {}: {}{}", call, provider, domain_name,
                                   fi_error_text(ret), hint.empty() ? setup_hint(provider, call, ret) : hint));
}

std::vector<uint8_t> Rail::blob() const {
  std::vector<uint8_t> out(kBlobHeader + address.size());
  uint32_t salt = static_cast<uint32_t>(tag_salt >> 32);
  std::memcpy(out.data(), &kBlobMagic, sizeof(kBlobMagic));
  std::memcpy(out.data() + sizeof(kBlobMagic), &salt, sizeof(salt));
  std::copy(address.begin(), address.end(), out.begin() + kBlobHeader);
  return out;
}

void Rail::connect(int peer, std::span<const uint8_t> whole) {
  auto bad_blob = [&](const std::string& why) {
    throw TransportError(
        fmt::format("peer {} sent an unusable address for rail {} (provider {} domain {}): {}; "
                    "do all ranks use the same provider, domains and rail count?",
                    peer, index, provider, domain_name, why));
  };
  uint32_t magic = 0;
  uint32_t salt = 0;
  if (whole.size() >= kBlobHeader) {
    std::memcpy(&magic, whole.data(), sizeof(magic));
    std::memcpy(&salt, whole.data() + sizeof(magic), sizeof(salt));
  }
  if (magic != kBlobMagic) bad_blob(fmt::format("{} bytes, not an ofi transport address", whole.size()));
  auto blob = whole.subspan(kBlobHeader);
  if (blob.empty() || blob.size() > 4096) bad_blob(fmt::format("{}-byte provider address", blob.size()));
  // Catch a blob from another provider before libfabric reads past its end.
  switch (info->addr_format) {
    case FI_SOCKADDR_IN:
    case FI_SOCKADDR_IN6: {
      sa_family_t family = 0;
      if (blob.size() >= sizeof(family)) std::memcpy(&family, blob.data(), sizeof(family));
      size_t need = info->addr_format == FI_SOCKADDR_IN ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      int want = info->addr_format == FI_SOCKADDR_IN ? AF_INET : AF_INET6;
      if (blob.size() != need || family != want) {
        bad_blob(fmt::format("{} bytes with address family {}, expected a {}-byte {} address", blob.size(), family,
                             need, want == AF_INET ? "IPv4" : "IPv6"));
      }
      break;
    }
    case FI_ADDR_STR: {
      std::string_view mine(reinterpret_cast<const char*>(address.data()), address.size());
      std::string_view theirs(reinterpret_cast<const char*>(blob.data()), blob.size());
      auto scheme = mine.substr(0, mine.find("://") + 3);
      if (!theirs.starts_with(scheme)) bad_blob(fmt::format("expected an address starting with '{}'", scheme));
      break;
    }
    default:
      if (blob.size() != address.size()) {
        bad_blob(fmt::format("{} bytes, expected {}", blob.size(), address.size()));
      }
  }
  // String formats must be NUL-terminated; a trailing zero is harmless for the others.
  std::vector<uint8_t> copy(blob.begin(), blob.end());
  copy.push_back(0);

  if (peers[peer] != FI_ADDR_NOTAVAIL) {
    fi_av_remove(av.get(), &peers[peer], 1, 0);
    peers[peer] = FI_ADDR_NOTAVAIL;
  }
  fi_addr_t addr = FI_ADDR_NOTAVAIL;
  int ret = fi_av_insert(av.get(), copy.data(), 1, &addr, 0, nullptr);
  if (ret != 1) {
    throw TransportError(fmt::format(
        "libfabric fi_av_insert of peer {} on rail {} failed for provider {} domain {}: "
        "{}; the address blob is not valid here",
        peer, index, provider, domain_name, ret < 0 ? fi_error_text(ret) : std::string("address rejected")));
  }
  peers[peer] = addr;
  peer_salts[peer] = static_cast<uint64_t>(salt) << 32;
}

RailInfo Rail::describe() const {
  RailInfo r;
  r.name = domain_name;
  r.fabric = fabric_name;
  r.address = address_text;
  if (info->nic != nullptr && info->nic->link_attr != nullptr) {
    r.link_gbps = static_cast<double>(info->nic->link_attr->speed) / 1e9;  // speed is in bits/s
    r.mtu = static_cast<int>(info->nic->link_attr->mtu);
  }
  return r;
}

OfiMemoryRegion::OfiMemoryRegion(void* data, size_t length, MemoryKind kind, int gpu, const void* owner,
                                 const std::vector<std::shared_ptr<Rail>>& rails)
    : MemoryRegion(data, length, kind), owner_(owner) {
  remote_key_.length = length;
  per_rail_.reserve(rails.size());
  for (const auto& rail : rails) {
    uint64_t access = FI_SEND | FI_RECV;
    if (rail->rma) access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    // Without FI_MR_PROV_KEY the key is ours to choose, unique within the domain.
    uint64_t requested_key = rail->mr_prov_key ? 0 : rail->next_mr_key++;
    fid_mr* m = nullptr;
    int ret = 0;
    if (kind == MemoryKind::cuda) {
      iovec iov{data, length};
      fi_mr_attr attr{};
      attr.mr_iov = &iov;
      attr.iov_count = 1;
      attr.access = access;
      attr.requested_key = requested_key;
      attr.iface = FI_HMEM_CUDA;
      attr.device.cuda = gpu;
      ret = fi_mr_regattr(rail->domain.get(), &attr, 0, &m);
      // A libfabric built without CUDA still lists FI_HMEM (its HMEM layer is generic) and
      // only fails here, with FI_ENOSYS: Debian's and Ubuntu's packages are built so.
      if (ret == -FI_ENOSYS)
        rail->fail("fi_mr_regattr (FI_HMEM_CUDA)", ret,
                   fmt::format(" for {} bytes of GPU {} memory: this libfabric was built without CUDA (it lists "
                               "FI_HMEM but cannot register GPU memory); use --mem cuda-host, -t verbs, -t nccl, or a "
                               "libfabric configured --with-cuda",
                               length, gpu));
      if (ret != 0)
        rail->fail("fi_mr_regattr (FI_HMEM_CUDA)", ret, fmt::format(" for {} bytes of GPU {} memory", length, gpu));
    } else {
      // Pinned host memory from cudaMallocHost is host memory to the provider.
      ret = fi_mr_reg(rail->domain.get(), data, length, access, 0, requested_key, 0, &m, nullptr);
      if (ret != 0) rail->fail("fi_mr_reg", ret);
    }
    FidPtr<fid_mr> mr(m);
    if (rail->mr_endpoint) {
      if (ret = fi_mr_bind(mr.get(), &rail->ep->fid, 0); ret != 0) rail->fail("fi_mr_bind", ret);
      if (ret = fi_mr_enable(mr.get()); ret != 0) rail->fail("fi_mr_enable", ret);
    }
    // With FI_MR_VIRT_ADDR the target expects the buffer's virtual address; otherwise
    // an offset into the region (we registered it at offset 0).
    uint64_t base = rail->mr_virt_addr ? reinterpret_cast<uint64_t>(data) : 0;
    uint64_t key = fi_mr_key(mr.get());
    if (key == FI_KEY_NOTAVAIL) {
      rail->fail("fi_mr_key", -FI_ENOSYS, "; keys wider than 64 bits (FI_MR_RAW) are not supported");
    }
    remote_key_.rails.push_back(RailKey{base, key});
    // GPU memory always carries its descriptor: it is how the provider learns the
    // buffer's iface (FI_MR_HMEM). Without it shm copies an inline send with memcpy from
    // the device pointer and crashes (seen on an H200 with a libfabric built with CUDA).
    const bool need_desc = rail->mr_local || kind == MemoryKind::cuda;
    descs_.push_back(need_desc ? fi_mr_desc(mr.get()) : nullptr);
    per_rail_.push_back(PerRail{rail, std::move(mr)});
  }
}

OfiMemoryRegion::~OfiMemoryRegion() {
  for (auto& r : per_rail_) {
    Rail& rail = *r.rail;
    if (!rail.closed() && (rail.tx_pool.uses(this) || rail.rx_pool.uses(this))) rail.close_endpoint();
  }
}

}  // namespace railbench::ofi
