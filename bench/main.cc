// railbench: one binary, one subcommand per pattern.
//
// Exit codes: 0 success; 1 a run failed (check found wrong data, a peer timed out, a
// transport error); 2 bad input (command line, config, environment).
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "bench/commands.h"
#include "bench/run_context.h"
#include "lib/errors.h"
#include "lib/version.h"

using namespace railbench;

namespace {

int exit_code(ErrorCode code) {
  return code == ErrorCode::usage ? 2 : 1;
}

// Before the bootstrap exists: only the first rank of an mpirun job prints, so a bad
// command line gives one line rather than one per rank.
bool first_rank_by_environment() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RAILBENCH_RANK"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v) == 0;
  }
  return true;
}

void add_common(CLI::App* app, CommonOptions& o) {
  app->add_option("-t,--transport", o.transport,
                  "Transport[:provider]: ofi, ofi:tcp, ofi:shm, ofi:verbs, ofi:efa, verbs, nccl")
      ->capture_default_str();
  app->add_option("-b,--min-bytes", o.min_bytes, "Smallest message size (8, 4K, 1M, 1G)");
  app->add_option("-e,--max-bytes", o.max_bytes, "Largest message size");
  app->add_option("-f,--step-factor", o.step_factor, "Multiply the size by this between steps")->capture_default_str();
  app->add_option("-i,--step-bytes", o.step_bytes, "Add this many bytes between steps instead of -f");
  app->add_option("-n,--iters", o.iters, "Timed iterations per size");
  app->add_option("-w,--warmup-iters", o.warmup_iters, "Untimed iterations before timing");
  app->add_flag("-c,--check", o.check, "Verify the data and count wrong elements");
  app->add_option("--json", o.json_path, "Write results (JSON, schema in README) to this file after every size");
  app->add_option("--rails", o.rails, "Rails: a count (2) or names (eth0,eth1 / mlx5_0,mlx5_1)");
  app->add_option("--timeout", o.timeout_s, "Seconds without progress from a peer before failing")
      ->capture_default_str();
  app->add_option("--gid-index", o.gid_index, "verbs: GID table index (default: the port's RoCE v2 IPv4 GID)");
  app->add_option("--qps-per-peer", o.qps_per_peer, "verbs: RC queue pairs per peer and rail (ECMP entropy)")
      ->capture_default_str();
  app->add_option("--mem", o.mem,
                  "Buffer memory: host, cuda (GPU, GPUDirect RDMA) or cuda-host (default: cuda for "
                  "-t nccl, else host)");
  app->add_option("--gpu-map", o.gpu_map, "GPU of each local rank, e.g. 0,1,2,3 (default: local rank i -> GPU i)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"railbench: RDMA collective benchmarks and fabric validation"};
  app.require_subcommand(1);
  app.set_version_flag("--version", railbench_version_line());

  CommonOptions common;
  for (int i = 0; i < argc; ++i) common.argv.emplace_back(argv[i]);

  SendRecvOptions sr;
  auto* sendrecv = app.add_subcommand("sendrecv", "Point-to-point latency and bandwidth between every pair of ranks");
  add_common(sendrecv, common);
  sendrecv->add_option("--verb", sr.verb, "send (two-sided), write (RDMA write) or read (RDMA read)")
      ->capture_default_str();
  sendrecv->add_option("--window", sr.window, "Messages in flight per bandwidth iteration")->capture_default_str();
  sendrecv->add_option("--bw-iters", sr.bw_iters, "Timed bandwidth windows per direction")->capture_default_str();
  sendrecv->add_flag("--all-pairs", sr.all_pairs, "Print every pair at every size (default when <= 8 pairs)");

  // The collectives share their options; -o means nothing to allgather (redop "none").
  CollectiveOptions co;
  auto add_collective = [&](const char* name, const char* help, bool reduces) {
    auto* sub = app.add_subcommand(name, help);
    add_common(sub, common);
    sub->add_option("-d,--datatype", co.datatype, "f32, f64, f16, bf16, i32, i64, u8")->capture_default_str();
    if (reduces) sub->add_option("-o,--op", co.op, "sum, prod, min, max")->capture_default_str();
    return sub;
  };
  auto add_ring = [&](CLI::App* sub, bool ring_protocol) {
    sub->add_option("--slice-bytes", co.slice_bytes, "Pipeline slice of the ring")->capture_default_str();
    if (ring_protocol) {
      sub->add_option("--protocol", co.protocol, "Ring steps: send (two-sided) or write (RDMA write with immediate)")
          ->capture_default_str();
    }
    return sub;
  };
  auto* allreduce = add_collective("allreduce", "All-reduce with nccl-tests columns (size, time, algbw, busbw)", true);
  allreduce->add_option("--algo", co.algo, "ring (default), rhd (recursive halving-doubling), hier (rail-aware), auto");
  allreduce->add_option("--ranks-per-node", co.ranks_per_node,
                        "hier/auto: consecutive ranks per node (default: group by host name)");
  add_ring(allreduce, true);
  auto* allgather = add_collective("allgather", "All-gather (ring) with nccl-tests columns", false);
  allgather->add_option("--algo", co.algo, "ring (the only one)");
  add_ring(allgather, false);
  auto* reducescatter = add_collective("reducescatter", "Reduce-scatter (ring) with nccl-tests columns", true);
  reducescatter->add_option("--algo", co.algo, "ring (the only one)");
  add_ring(reducescatter, false);
  auto* alltoall = add_collective(
      "alltoall", "All-to-all (pairwise exchange, the MoE pattern) with nccl-tests columns and per-link step times",
      false);
  alltoall->add_option("--algo", co.algo, "pairwise (the only one)");
  alltoall->add_option("--window", co.window, "Steps (peers) in flight at once; 1: strict pairwise")
      ->capture_default_str();

  ValidateOptions vo;
  auto* validate = app.add_subcommand(
      "validate", "Acceptance test of a scalable unit against its config: names the bad node, rail or link");
  validate->add_option("--config", vo.config, "SU description (JSON): a path, or a name from configs/")->required();
  validate->add_flag("--plan", vo.plan, "Print the schedule and an estimated duration; run nothing");
  validate->add_flag("--inventory-only", vo.inventory_only, "Check NICs, ports, speeds and MTUs; send no traffic");
  validate->add_option("-t,--transport", vo.transport, "Override the config's transport (verbs, ofi:tcp, ...)");
  validate->add_option("--pair-timeout", vo.timeout_s,
                       "Seconds a pair may go without progress (config: tests.pair_timeout_s)");
  validate->add_option("--json", common.json_path,
                       "Write results (inventory, per-rail matrices, findings) to this file");
  KvCacheOptions kv;
  auto* kvcache = app.add_subcommand(
      "kvcache", "KV-cache transfer of prefill/decode disaggregation: paged blocks per mode vs one contiguous write");
  add_common(kvcache, common);
  kvcache->add_option("--model", kv.model, "Preset from configs/models (llama-3.1-70b, deepseek-v3, ...)")
      ->capture_default_str();
  kvcache->add_option("--layers", kv.layers, "Custom model: layers");
  kvcache->add_option("--kv-heads", kv.kv_heads, "Custom model: KV heads (grouped-query attention)");
  kvcache->add_option("--head-dim", kv.head_dim, "Custom model: head dimension");
  kvcache->add_option("--latent-dim", kv.latent_dim, "Custom model: MLA latent width per token per layer");
  kvcache->add_option("--rope-dim", kv.rope_dim, "Custom model: MLA rotary values per token per layer");
  kvcache->add_option("--kv-dtype", kv.kv_dtype, "fp16, bf16 or fp8")->capture_default_str();
  kvcache->add_option("--tokens", kv.tokens, "Tokens per request: a value or a list (4096 or 1K,4K,32K)")
      ->delimiter(',')
      ->capture_default_str();
  kvcache->add_option("--block-tokens", kv.block_tokens, "Tokens per KV block")->capture_default_str();
  kvcache->add_option("--mode", kv.modes, "per-block, coalesced, staged (a list; one contiguous write always runs)")
      ->delimiter(',')
      ->capture_default_str();
  kvcache->add_option("--prefill-ranks", kv.prefill_ranks, "Prefill ranks (0,1 or 0-1; default: first half)");
  kvcache->add_option("--decode-ranks", kv.decode_ranks, "Decode ranks (default: the others)");
  kvcache->add_option("--requests", kv.requests, "Timed requests per pair and mode")->capture_default_str();
  kvcache->add_option("--concurrency", kv.concurrency, "Requests in flight per pair")->capture_default_str();
  kvcache
      ->add_option("--alloc-run", kv.alloc_run, "Consecutive block ids the pool allocator hands out (1: all scattered)")
      ->capture_default_str();
  kvcache->add_option("--protocol", kv.protocol, "auto, write (one-sided + immediate) or send (two-sided)")
      ->capture_default_str();
  kvcache->add_option("--max-mem", kv.max_mem, "Memory all ranks of a host may allocate (default 90% of MemAvailable)");

  auto* info = app.add_subcommand("info", "What this build contains and which providers and devices this host has");

  // CLI11 calls a stray word "extra arguments"; name the real problem.
  auto is_subcommand = [&](const char* word) {
    for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; }))
      if (sub->check_name(word)) return true;
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !is_subcommand(argv[1])) {
    if (first_rank_by_environment()) {
      fmt::print(stderr,
                 "railbench: error: unknown subcommand '{}': use one of sendrecv, allreduce, allgather, "
                 "reducescatter, alltoall, kvcache, validate, info\n",
                 argv[1]);
    }
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (first_rank_by_environment()) {
      fmt::print(stderr, "railbench: error: {} (see railbench --help)\n", e.what());
    }
    return 2;
  }

  if (info->parsed()) return run_info();
  if (validate->parsed() && vo.plan) {
    try {
      return first_rank_by_environment() ? run_validate_plan(vo) : 0;
    } catch (const Error& e) {
      fmt::print(stderr, "railbench: error: {}\n", e.what());
      return exit_code(e.code());
    }
  }
  if (validate->parsed() && vo.timeout_s < 0) {
    if (first_rank_by_environment())
      fmt::print(stderr, "railbench: error: --pair-timeout {} must be positive\n", vo.timeout_s);
    return 2;
  }
  if (common.timeout_s <= 0) {
    if (first_rank_by_environment()) {
      fmt::print(stderr, "railbench: error: --timeout {} must be a positive number of seconds\n", common.timeout_s);
    }
    return 2;
  }

  std::unique_ptr<Bootstrap> bootstrap;
  try {
    bootstrap = make_bootstrap_from_environment(common.timeout_s);
    if (sendrecv->parsed()) return run_sendrecv(*bootstrap, common, sr);
    if (allreduce->parsed()) return run_collective(*bootstrap, common, co, Pattern::all_reduce);
    if (allgather->parsed()) return run_collective(*bootstrap, common, co, Pattern::all_gather);
    if (reducescatter->parsed()) return run_collective(*bootstrap, common, co, Pattern::reduce_scatter);
    if (alltoall->parsed()) return run_collective(*bootstrap, common, co, Pattern::all_to_all);
    if (validate->parsed()) return run_validate(*bootstrap, common, vo);
    if (kvcache->parsed()) return run_kvcache(*bootstrap, common, kv);
  } catch (const AgreedError& e) {
    // Every rank saw it: say it once, and let every rank end normally (MPI_Finalize).
    if (bootstrap ? bootstrap->rank() == 0 : first_rank_by_environment()) {
      fmt::print(stderr, "railbench: error: {}\n", e.what());
    }
    return exit_code(e.code());
  } catch (const std::exception& e) {
    const auto* err = dynamic_cast<const Error*>(&e);
    const int code = err ? exit_code(err->code()) : 1;
    fmt::print(stderr, "railbench: {}: {}\n", err ? "error" : "internal error", e.what());
    std::fflush(stderr);
    std::fflush(stdout);
    // Other ranks may be waiting on this one: end the whole job rather than leave them
    // to run into their own timeouts. Results already written stay on disk.
    if (bootstrap && bootstrap->size() > 1) bootstrap->abort(code);
    return code;
  }
  return 0;
}
