// What railbench kvcache prints and records: one row per (token count, mode), and the
// what-if table that scales the preset models' KV sizes by the efficiency measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/kvcache/geometry.h"
#include "lib/core/stats.h"

namespace railbench {

class RunContext;

struct KvRecord {
  uint64_t tokens = 0;
  std::string mode;
  uint64_t bytes = 0;   // KV bytes of one request
  uint64_t blocks = 0;  // blocks of one request: layers x planes x ceil(tokens / block)
  uint64_t ops = 0;     // writes (or sends) one request posts
  Summary request_us;   // per-request time, start on prefill until its ack
  double gbps = 0;      // bytes / median request time
  double blocks_per_s = 0;
  double aggregate_gbps = 0;  // all timed requests' bytes / slowest prefill rank's wall time
  double ratio = 0;           // gbps / the contiguous write's gbps at this token count
  uint64_t wrong = 0;
  bool checked = false;
};

nlohmann::json to_json(const KvRecord& r);

void print_kv_header(const RunContext& ctx);
void print_kv_row(const RunContext& ctx, const KvRecord& r);

// What the efficiency was measured through when that is not a NIC (libfabric's shm, tcp,
// sockets or udp providers, soft-RoCE), in words for the what-if table's header; ""
// for a hardware NIC. `provider` is Transport::provider() ("shm", "tcp;ofi_rxm", "rxe0",
// ucx's "rc_verbs"); `device` is rail 0's device ("rxe0:1"), which tells soft-RoCE where the
// provider is named after its transport.
std::string host_transport_note(const std::string& provider, const std::string& device = "");

// For every preset x {4K, 32K, 128K} tokens x {400, 800, 1600} Gb/s: bytes / (line rate
// x efficiency). Prints the table and returns it as JSON. `provider` as for
// host_transport_note: a host transport's efficiency is flagged in the header.
nlohmann::json print_what_if(const RunContext& ctx, const std::vector<KvModel>& presets, int dtype_bytes,
                             const std::string& kv_dtype, const std::string& mode, double efficiency,
                             const std::string& provider, const std::string& device = "");

}  // namespace railbench
