// Internal to transports/ucx: one rail's UCP context and worker (RailCore, opened with
// the settings every endpoint of the transport relies on), its endpoints and notice
// receives (Rail), and waiting for a request with a deadline. The transport itself is
// in ucx_transport_impl.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <ucp/api/ucp.h>

#include "lib/transport/transport.h"
#include "transports/ucx/ucx_transport.h"

namespace railbench::ucx {

struct ConfigFree {
  void operator()(ucp_config_t* c) const { ucp_config_release(c); }
};
struct ContextFree {
  void operator()(ucp_context* c) const { ucp_cleanup(c); }
};

// The context and worker of one rail; regions keep the context alive while they exist.
// The worker goes with the transport (its destructor), since destroying it ends the
// requests still in flight through callbacks into the transport.
struct RailCore {
  std::unique_ptr<ucp_context, ContextFree> context;
  ucp_worker_h worker = nullptr;
  std::string device;
  std::vector<uint8_t> address;
  bool peer_failure = true;  // endpoints in UCP_ERR_HANDLING_MODE_PEER (UcxOptions)
};

// One rail's UCP context, worker and worker address, on `device` ("auto": UCX picks),
// with the settings every endpoint of the transport relies on.
std::shared_ptr<RailCore> open_rail_core(const UcxOptions& o, const std::string& device);

// Waits up to `seconds` for `req` (an ucp request or status pointer), driving `worker`.
bool wait_request(ucp_worker_h worker, void* req, double seconds);

class UcxTransport;

// A receive pre-posted for one peer's write-with-immediate notices on one rail.
struct ImmSlot {
  UcxTransport* t = nullptr;
  int rail = 0;
  int peer = 0;  // whose notices it takes
  uint32_t value = 0;
  void* req = nullptr;  // the posted receive, cancelled at teardown
};

// What the error callback of one endpoint is told: whose endpoint failed.
struct EpOwner {
  UcxTransport* t = nullptr;
  int rail = 0;
  int peer = 0;
};
// Defined with the transport's other UCX callbacks (ucx_transport.cc).
void ep_failed(void* arg, ucp_ep_h ep, ucs_status_t st);

struct Rail {
  std::shared_ptr<RailCore> core;
  std::vector<ucp_ep_h> eps;         // per peer; nullptr until connected
  std::vector<EpOwner> owners;       // per peer: the error callback's argument
  std::vector<ucs_status_t> failed;  // per peer: UCS_OK while its endpoint works
  bool receives_to_fail = false;     // a peer failed: poll() fails its posted receives
  std::vector<ImmSlot> imm_slots;
  // Unpacked remote keys by (peer, region id).
  std::map<std::pair<int, uint64_t>, ucp_rkey_h> rkeys;

  RailInfo describe() const {
    return RailInfo{core->device, "", fmt::format("{} byte worker address", core->address.size()), 0, 0};
  }
  std::vector<uint8_t> blob() const { return core->address; }
  void connect(int peer, std::span<const uint8_t> remote);
};

}  // namespace railbench::ucx
