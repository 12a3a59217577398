// One rail of the UCX transport: its context and worker, its endpoints (ucx_rail.h).
#include "transports/ucx/ucx_rail.h"

#include <chrono>
#include <cstdlib>
#include <initializer_list>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "transports/ucx/ucx_rxe.h"

namespace railbench::ucx {

namespace {

// Sets a UCX option for this context unless the user set it or one it stands for
// (UCX_<name> or UCX_<alias> in the environment): a setting of the user's wins.
void set_default(ucp_config_t* config, const char* name, const char* value,
                 std::initializer_list<const char*> aliases = {}) {
  if (std::getenv(fmt::format("UCX_{}", name).c_str()) != nullptr) return;
  for (const char* alias : aliases)
    if (std::getenv(fmt::format("UCX_{}", alias).c_str()) != nullptr) return;
  const ucs_status_t st = ucp_config_modify(config, name, value);
  if (st != UCS_OK)
    throw TransportError(fmt::format("UCX_{}={}: {} (UCX {})", name, value, ucs_status_string(st), ucx_version()));
}

// Whether UCX_TLS (empty: UCX picks) may bring in posix or sysv shared memory.
bool may_use_shared_memory(const std::string& tls) {
  if (tls.empty()) return true;
  for (const char* name : {"sm", "shm", "mm", "posix", "sysv", "all"})
    if (tls.find(name) != std::string::npos) return true;
  return false;
}

}  // namespace

bool peer_failure_from_env() {
  const char* env = std::getenv("RAILBENCH_UCX_PEER_FAILURE");
  const std::string v = env ? env : "";
  if (v.empty() || v == "on") return true;
  if (v == "off") return false;
  throw UsageError(
      fmt::format("RAILBENCH_UCX_PEER_FAILURE='{}': use on (endpoints fail within a second of a dead peer) or off "
                  "(UCX's zero-copy shared memory between ranks of one host; a dead peer waits for --timeout)",
                  v));
}

bool wait_request(ucp_worker_h worker, void* req, double seconds) {
  if (req == nullptr) return true;
  if (UCS_PTR_IS_ERR(req)) return false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS && std::chrono::steady_clock::now() < end)
    ucp_worker_progress(worker);
  // A request still in progress is released by UCX when it ends (or with the worker).
  ucp_request_free(req);
  return st == UCS_OK;
}

std::shared_ptr<RailCore> open_rail_core(const UcxOptions& o, const std::string& device) {
  auto core = std::make_shared<RailCore>();
  core->device = device;
  core->peer_failure = o.peer_failure;
  ucp_config_t* raw = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &raw);
  if (st != UCS_OK) throw TransportError(fmt::format("ucp_config_read: {}", ucs_status_string(st)));
  std::unique_ptr<ucp_config_t, ConfigFree> config(raw);
  const std::string tls = tls_with_aux(o.tls);  // ucx_rxe.h: rc_verbs needs its auxiliary
  if (!tls.empty() && (st = ucp_config_modify(raw, "TLS", tls.c_str())) != UCS_OK)
    throw UsageError(fmt::format("UCX_TLS={}: {}", tls, ucs_status_string(st)));
  if (!o.devices.empty() && (st = ucp_config_modify(raw, "NET_DEVICES", core->device.c_str())) != UCS_OK)
    throw UsageError(fmt::format("UCX_NET_DEVICES={}: {}", core->device, ucs_status_string(st)));
  // Endpoints that ask for peer-failure handling need it of every transport on them:
  // UCX 1.13's shared memory (posix, sysv: the MM_ table) offers it only when told, or
  // an shm endpoint is unreachable. It notices a dead same-host peer by its keepalive
  // check, every 20 s by default; 1 s keeps the detection well inside --timeout.
  if (o.peer_failure) {
    if (may_use_shared_memory(o.tls))  // elsewhere UCX warns of an option no transport takes
      set_default(raw, "MM_ERROR_HANDLING", "y", {"POSIX_ERROR_HANDLING", "SYSV_ERROR_HANDLING"});
    set_default(raw, "KEEPALIVE_INTERVAL", "1s");
  }
  for (const auto& s : rxe_settings(device)) set_default(raw, s.name.c_str(), s.value.c_str(), {s.alias.c_str()});
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
  ucp_context_h ctx = nullptr;
  st = ucp_init(&params, raw, &ctx);
  if (st != UCS_OK)
    throw TransportError(fmt::format("ucp_init with UCX_TLS={} on device {}: {} (ucx_info -d lists what exists)",
                                     o.tls.empty() ? "all" : o.tls, core->device, ucs_status_string(st)));
  core->context.reset(ctx);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;  // one thread drives a transport (transport.h)
  st = ucp_worker_create(ctx, &wp, &core->worker);
  if (st != UCS_OK)
    throw TransportError(fmt::format("ucp_worker_create on device {}: {}", core->device, ucs_status_string(st)));
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  st = ucp_worker_get_address(core->worker, &addr, &len);
  if (st != UCS_OK)
    throw TransportError(fmt::format("ucp_worker_get_address on device {}: {}", core->device, ucs_status_string(st)));
  core->address.assign(reinterpret_cast<uint8_t*>(addr), reinterpret_cast<uint8_t*>(addr) + len);
  ucp_worker_release_address(core->worker, addr);
  return core;
}

void Rail::connect(int peer, std::span<const uint8_t> remote) {
  if (eps[static_cast<size_t>(peer)] != nullptr) return;
  std::vector<uint8_t> addr(remote.begin(), remote.end());
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  p.address = reinterpret_cast<const ucp_address_t*>(addr.data());
  // A dead peer then fails this endpoint's operations instead of leaving them to a
  // deadline (or UCX aborting the process, its default).
  p.err_mode = core->peer_failure ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  if (core->peer_failure) {
    p.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    p.err_handler.cb = ep_failed;
    p.err_handler.arg = &owners[static_cast<size_t>(peer)];
  }
  ucp_ep_h ep = nullptr;
  const ucs_status_t st = ucp_ep_create(core->worker, &p, &ep);
  if (st != UCS_OK)
    throw TransportError(fmt::format("ucp_ep_create to peer {} on device {}: {} (do both ranks share a transport?)",
                                     peer, core->device, ucs_status_string(st)));
  eps[static_cast<size_t>(peer)] = ep;
}

}  // namespace railbench::ucx
