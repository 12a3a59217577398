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
  Rail(int index, InfoPtr info, int world_size, bool rma);
  Rail(const Rail&) = delete;
  Rail& operator=(const Rail&) = delete;

  // Inserts a peer's address blob (from its local_address) into the AV.
  void connect(int peer, std::span<const uint8_t> blob);
  RailInfo describe() const;
  // "libfabric <call> failed for provider P domain D: <text> (<code>)<hint>".
  [[noreturn]] void fail(const char* call, long long ret, const std::string& hint = "") const;

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

  std::vector<uint8_t> address;  // fi_getname bytes
  std::string address_text;      // fi_av_straddr
  std::vector<fi_addr_t> peers;  // FI_ADDR_NOTAVAIL until connect()

  // What the provider granted, read once from info.
  bool mr_local = false;      // local buffers need fi_mr_desc
  bool mr_virt_addr = false;  // remote addresses are virtual addresses, not offsets
  bool mr_prov_key = false;   // the provider picks keys; otherwise we must
  bool mr_endpoint = false;   // MRs are bound to the endpoint and enabled
  bool directed_recv = false;
  size_t inject_size = 0;
  uint64_t next_mr_key = 1;  // requested_key for the next MR when !mr_prov_key
};

class OfiMemoryRegion final : public MemoryRegion {
 public:
  // Registers [data, data+length) on every rail; throws TransportError.
  OfiMemoryRegion(void* data, size_t length, const void* owner, const std::vector<std::shared_ptr<Rail>>& rails);

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
