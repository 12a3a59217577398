// What UCX 1.13 needs to run over verbs on a soft-RoCE (rxe) device: the auxiliary
// transport rc_verbs wires up through, and one ud_verbs check to switch off. Plain
// data, so open_rail_core applies them like its other defaults (a user's UCX_* wins).
#pragma once

#include <string>
#include <vector>

namespace railbench::ucx {

// UCX_TLS as railbench hands it to UCX: a list naming rc_verbs but no UD transport gets
// "ud_verbs:aux", since rc_verbs connects through an auxiliary transport when endpoints
// are made from worker addresses (UCX's own alias rc_v is the same pair). An exclusion
// list ("^tcp") is left as it is.
std::string tls_with_aux(const std::string& tls);

// Whether `device` ("rxe0:1"; "auto": every device UCX sees) is, or may be, a soft-RoCE
// device: rdma_rxe gives its devices a `parent` (the netdev) in sysfs.
bool is_soft_roce(const std::string& device);

// One UCX option: its name without UCX_ as ucp_config_modify takes it (the transport
// family's table: "UD_..."), its value, and the per-transport name that also sets it.
struct UcxSetting {
  std::string name, value, alias;
};
// The settings a rail on `device` needs; empty for anything but soft-RoCE.
std::vector<UcxSetting> rxe_settings(const std::string& device);

}  // namespace railbench::ucx
