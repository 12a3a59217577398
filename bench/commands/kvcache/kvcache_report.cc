#include "bench/commands/kvcache/kvcache_report.h"

#include <string_view>

#include <fmt/format.h>

#include "bench/runner/run_context.h"
#include "lib/results/results.h"

namespace railbench {

using nlohmann::json;

json to_json(const KvRecord& r) {
  json j{{"tokens", r.tokens},
         {"mode", r.mode},
         {"bytes", r.bytes},
         {"blocks", r.blocks},
         {"ops", r.ops},
         {"request_us", to_json(r.request_us)},
         {"gbps", r.gbps},
         {"blocks_per_s", r.blocks_per_s},
         {"aggregate_gbps", r.aggregate_gbps},
         {"ratio_to_contiguous", r.ratio}};
  j["wrong"] = r.wrong;
  return j;
}

void print_kv_header(const RunContext& ctx) {
  ctx.print(fmt::format("# {:>7} {:>11} {:>13} {:>8} {:>8} {:>9} {:>9} {:>9} {:>8} {:>9} {:>7} {:>7}", "tokens", "mode",
                        "bytes/req", "blocks", "writes", "p50", "p99", "p99.9", "GB/s", "blocks/s", "vs 1w", "#wrong"));
  ctx.print(fmt::format("# {:>7} {:>11} {:>13} {:>8} {:>8} {:>9} {:>9} {:>9} {:>8} {:>9} {:>7} {:>7}", "", "", "(B)",
                        "/req", "/req", "(ms)", "(ms)", "(ms)", "", "(M/s)", "", ""));
}

void print_kv_row(const RunContext& ctx, const KvRecord& r) {
  ctx.print(fmt::format("  {:>7} {:>11} {:>13} {:>8} {:>8} {:>9.3f} {:>9.3f} {:>9.3f} {:>8.3f} {:>9.3f} {:>7.2f} {:>7}",
                        r.tokens, r.mode, r.bytes, r.blocks, r.ops, r.request_us.p50 / 1e3, r.request_us.p99 / 1e3,
                        r.request_us.p999 / 1e3, r.gbps, r.blocks_per_s / 1e6, r.ratio,
                        r.checked ? fmt::format("{}", r.wrong) : std::string("N/A")));
}

std::string host_transport_note(const std::string& provider, const std::string& device) {
  const std::string_view p = provider;
  if (p.starts_with("shm")) return "shared memory between processes on this host";
  if (p.starts_with("tcp") || p.starts_with("sockets")) return "the host's TCP stack";
  if (p.starts_with("udp")) return "the host's UDP stack";
  // A provider named after its transport (ucx's rc_verbs, libfabric's verbs) says nothing of
  // the device under it: soft-RoCE is told by the device's name.
  if (p.starts_with("rxe") || std::string_view(device).starts_with("rxe"))
    return "soft-RoCE (rxe): the CPU emulating a NIC";
  return "";
}

json print_what_if(const RunContext& ctx, const std::vector<KvModel>& presets, int dtype_bytes,
                   const std::string& kv_dtype, const std::string& mode, double efficiency, const std::string& provider,
                   const std::string& device) {
  const uint64_t token_counts[] = {4096, 32768, 131072};
  const double rates_gbps[] = {400, 800, 1600};
  const std::string host = host_transport_note(provider, device);
  ctx.print("#");
  ctx.print(
      fmt::format("# what-if: one request's KV at line rate, scaled by the {} efficiency measured here ({:.2f} "
                  "of one contiguous write); {}",
                  mode, efficiency, kv_dtype));
  // Per-block overhead through a host transport is the CPU's, not a NIC's work-request
  // rate: the figure only says how this host moves small writes.
  if (!host.empty())
    ctx.print(
        fmt::format("# what-if: the efficiency was measured over {} ({}), not a NIC: on a RoCE or IB NIC the "
                    "per-block cost differs, so measure there (-t verbs, -t ofi:verbs or efa) before trusting "
                    "these times",
                    provider, host));
  ctx.print(fmt::format("# {:>16} {:>7} {:>14} {:>10} {:>10} {:>10}", "model", "tokens", "bytes", "400 Gb/s",
                        "800 Gb/s", "1600 Gb/s"));
  ctx.print(fmt::format("# {:>16} {:>7} {:>14} {:>10} {:>10} {:>10}", "", "", "(B)", "(ms)", "(ms)", "(ms)"));
  json rows = json::array();
  for (const KvModel& m : presets) {
    for (uint64_t tokens : token_counts) {
      const uint64_t bytes = tokens * kv_bytes_per_token(m, dtype_bytes);
      json row{{"model", m.name}, {"tokens", tokens}, {"bytes", bytes}};
      std::string cells;
      for (double rate : rates_gbps) {
        const double ms = efficiency > 0 ? static_cast<double>(bytes) / (rate * 1.25e8 * efficiency) * 1e3 : 0.0;
        row[fmt::format("ms_at_{:.0f}gbps", rate)] = ms;
        cells += fmt::format(" {:>10.2f}", ms);
      }
      ctx.print(fmt::format("  {:>16} {:>7} {:>14}{}", m.name, tokens, bytes, cells));
      rows.push_back(std::move(row));
    }
  }
  json out{{"mode", mode}, {"efficiency", efficiency},  {"kv_dtype", kv_dtype},
           {"rows", rows}, {"measured_over", provider}, {"host_transport", !host.empty()}};
  return out;
}

}  // namespace railbench
