// Command-line options shared by the subcommands, nccl-tests compatible where they overlap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace railbench {

struct CommonOptions {
  std::string transport = "ofi";  // -t: "ofi", "ofi:tcp", "ofi:shm", ...
  std::string min_bytes;          // -b (subcommand default when empty)
  std::string max_bytes;          // -e
  uint64_t step_factor = 2;       // -f
  uint64_t step_bytes = 0;        // -i (fixed increment instead of -f)
  int iters = -1;                 // -n (subcommand default when < 0)
  int warmup_iters = -1;          // -w
  bool check = false;             // -c
  std::string json_path;          // --json
  std::string rails;              // --rails: a count ("2") or names ("eth0,eth1")
  double timeout_s = 60;          // --timeout: no progress from a peer for this long fails
  int gid_index = -1;             // --gid-index (verbs): -1 picks the RoCE v2 GID of the port's IPv4 address
  int qps_per_peer = 1;           // --qps-per-peer (verbs): RC queue pairs per (peer, rail)
  std::string mem;                // --mem: host, cuda, cuda-host; empty: cuda for -t nccl, else host
  std::string gpu_map;            // --gpu-map: GPU per local rank ("0,1,2,3"); empty: local rank i -> GPU i
  std::vector<std::string> argv;  // the command line, recorded in the results
};

struct SendRecvOptions {
  std::string verb = "send";  // send, write, read
  int window = 64;            // messages in flight per bandwidth iteration
  int bw_iters = 20;          // timed bandwidth iterations (windows) per direction
  bool all_pairs = false;     // print every pair at every size
};

struct ValidateOptions {
  std::string config;  // --config: a path, or a name in configs/
  bool plan = false;   // --plan: print the schedule and estimate, run nothing
  bool inventory_only = false;
  std::string transport;  // -t: overrides the config's transport
  double timeout_s = 0;   // --pair-timeout: overrides tests.pair_timeout_s
};

// allreduce, allgather, reducescatter, alltoall.
struct CollectiveOptions {
  std::string datatype = "f32";
  std::string op = "sum";
  std::string algo;  // empty: ring (alltoall: pairwise); allreduce also rhd, hier, auto
  std::string slice_bytes = "16M";
  std::string protocol = "send";
  int window = 4;          // alltoall: steps (peers) in flight
  int ranks_per_node = 0;  // hier/auto: consecutive ranks per node; 0 groups by host name
};

// kvcache: the prefill -> decode KV-cache transfer.
struct KvCacheOptions {
  std::string model = "llama-3.1-8b";  // preset name (configs/models), unless --layers is given
  int layers = 0;                      // custom geometry
  int kv_heads = 0;
  int head_dim = 0;
  int latent_dim = 0;  // custom MLA: latent width per token per layer
  int rope_dim = 0;
  std::string kv_dtype = "fp16";
  std::vector<std::string> tokens{"4096"};  // one or more token counts (4K = 4096)
  int block_tokens = 16;
  std::vector<std::string> modes{"per-block", "coalesced", "staged"};
  std::string prefill_ranks;      // "0,1" or "0-1"; default: the first half of the ranks
  std::string decode_ranks;       // default: the other ranks
  int requests = 8;               // timed requests per prefill/decode pair and mode
  int concurrency = 1;            // requests in flight per pair
  int alloc_run = 4;              // block ids the pool allocator hands out in one run
  std::string protocol = "auto";  // auto, write, send
  std::string max_mem;            // per host; default 90% of MemAvailable
};

}  // namespace railbench
