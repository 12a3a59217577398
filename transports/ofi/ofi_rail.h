// Internal to transports/ofi: one rail (fabric, domain, CQ, AV, RDM endpoint) and the
// memory region registered on every rail.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transports/ofi/ofi_common.h"

namespace railbench::ofi {

// Everything one rail owns. Members are declared in opening order so they close in
// reverse: ep first (it references the pools, CQ and AV), then AV and CQ, domain,
// fabric. Memory regions hold a shared_ptr to their rail, so the domain outlives them
// even when the transport is destroyed first.
struct Rail {
  // `tag_salt` is this transport's random tag namespace (see blob()).
  Rail(int index, InfoPtr info, int world_size, bool rma, uint32_t tag_salt);
  Rail(const Rail&) = delete;
  Rail& operator=(const Rail&) = delete;

  // What a peer needs to reach this rail: a magic word, our tag salt, then the
  // fi_getname bytes. The salt goes into the tag of every message sent to us, so an
  // endpoint of another job that reuses a port (or a stale peer) can never match our
  // receives, which match on the source rank alone (FI_ADDR_UNSPEC).
  std::vector<uint8_t> blob() const;
  // Inserts a peer's blob into the AV and remembers its salt.
  void connect(int peer, std::span<const uint8_t> blob);
  // Tags: bits 32..59 are the receiver's salt, bits 0..31 the sender's rank.
  uint64_t recv_tag(int peer) const { return tag_salt | static_cast<uint32_t>(peer); }
  uint64_t send_tag(int peer, int my_rank) const { return peer_salts[peer] | static_cast<uint32_t>(my_rank); }
  RailInfo describe() const;
  // "libfabric <call> failed for provider P domain D: <text> (<code>)<hint>".
  [[noreturn]] void fail(const char* call, long long ret, const std::string& hint = "") const;
  // Closes the endpoint, then the AV and the CQ, keeping the domain for the memory
  // regions that still hold it. After a failure, operations may still be queued in the
  // provider, pointing into buffers about to be freed: closing the endpoint first cancels
  // them, so teardown never lets the provider touch freed memory. Idempotent; the data
  // path refuses a closed rail.
  void close_endpoint() noexcept;
  bool closed() const noexcept { return !ep; }

  int index;
  std::string provider;
  std::string domain_name;
  std::string fabric_name;
  bool rma;

  InfoPtr info;
  FidPtr<fid_fabric> fabric;
  FidPtr<fid_domain> domain;
  FidPtr<fid_cq> cq;
  FidPtr<fid_av> av;
  ContextPool tx_pool;
  ContextPool rx_pool;
  FidPtr<fid_ep> ep;

  std::vector<uint8_t> address;      // fi_getname bytes
  std::string address_text;          // fi_av_straddr
  std::vector<fi_addr_t> peers;      // FI_ADDR_NOTAVAIL until connect()
  uint64_t tag_salt;                 // ours, already shifted into place
  std::vector<uint64_t> peer_salts;  // theirs, shifted; set by connect()

  // What the provider granted, read once from info.
  bool mr_local = false;      // local buffers need fi_mr_desc
  bool mr_virt_addr = false;  // remote addresses are virtual addresses, not offsets
  bool mr_prov_key = false;   // the provider picks keys; otherwise we must
  bool mr_endpoint = false;   // MRs are bound to the endpoint and enabled
  bool directed_recv = false;
  size_t inject_size = 0;
  size_t batch_iov = 1;  // spans one fi_writemsg of a batch carries: the iov limits, at most kMaxIov
  // The chunks of a batch the provider did not take yet (-FI_EAGAIN partway): poll()
  // posts them in order, and every other post on this rail answers retry until it has,
  // so nothing overtakes them. Capacity reserved at setup: no allocation on the data path.
  std::vector<OpContext*> deferred;
  size_t deferred_next = 0;
  // requested_key for the next MR when !mr_prov_key. Starts at a random value so a
  // stale peer's key does not open a region of a later run that reuses its port.
  uint64_t next_mr_key = 1;

 private:
  // The constructor's steps, in order; each throws TransportError through fail().
  void read_mr_mode();  // the mr_* flags, directed_recv, inject_size, next_mr_key
  void open_domain();   // fabric, then domain
  void open_cq();
  void open_av(int world_size);
  void open_endpoint();  // bound to the CQ and AV, then enabled
  void read_address();   // address (fi_getname) and address_text
};

class OfiMemoryRegion final : public MemoryRegion {
 public:
  // Registers [data, data+length) on every rail; throws TransportError.
  // GPU memory (kind cuda) goes through fi_mr_regattr with FI_HMEM_CUDA on `gpu`.
  OfiMemoryRegion(void* data, size_t length, MemoryKind kind, int gpu, const void* owner,
                  const std::vector<std::shared_ptr<Rail>>& rails);
  // A region that goes while an operation on it is still in flight (after a failure,
  // when its owner is torn down before the transport) closes that rail's endpoint first.
  ~OfiMemoryRegion() override;

  RemoteKey remote_key() const override { return remote_key_; }
  // Descriptor to pass with local buffers; null unless the rail needs FI_MR_LOCAL.
  void* desc(int rail) const noexcept { return descs_[rail]; }
  // The transport that registered it; a region from another transport is rejected.
  const void* owner() const noexcept { return owner_; }

 private:
  struct PerRail {
    std::shared_ptr<Rail> rail;  // declared first so the MR closes before its domain
    FidPtr<fid_mr> mr;
  };
  const void* owner_;
  std::vector<PerRail> per_rail_;
  std::vector<void*> descs_;
  RemoteKey remote_key_;
};

}  // namespace railbench::ofi
