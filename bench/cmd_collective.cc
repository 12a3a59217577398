// railbench allreduce / allgather / reducescatter: nccl-tests columns and semantics
// over any transport.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "bench/commands.h"
#include "bench/run_context.h"
#include "bench/sweep.h"
#include "bench/timing.h"
#include "collectives/allreduce.h"
#include "collectives/alltoall.h"
#include "collectives/check.h"
#include "collectives/gather_scatter.h"
#include "lib/bandwidth.h"
#include "lib/clock.h"
#include "lib/gpu.h"
#include "lib/results.h"
#include "lib/sizes.h"

namespace railbench {

using nlohmann::json;

namespace {

std::string side_columns(const CollectiveSide& s, bool check) {
  return fmt::format("{:>9.2f} {:>7.3f} {:>7.3f} {:>7} {:>8.2f} {:>8.2f}", s.time_us, s.algbw, s.busbw,
                     check ? fmt::format("{}", s.wrong) : std::string("N/A"), s.iter_us.p50, s.iter_us.p99);
}

const char* command_name(Pattern p) {
  switch (p) {
    case Pattern::all_reduce: return "allreduce";
    case Pattern::all_gather: return "allgather";
    case Pattern::reduce_scatter: return "reducescatter";
    case Pattern::all_to_all: return "alltoall";
    default: return "collective";
  }
}

// Which node each rank is on: consecutive blocks of --ranks-per-node (or the
// RAILBENCH_RANKS_PER_NODE environment variable), so one host can stand in for several
// nodes in tests; by default ranks that share a host name share a node.
NodeLayout node_layout(const RunContext& ctx, int ranks_per_node) {
  if (ranks_per_node <= 0) {
    if (const char* env = std::getenv("RAILBENCH_RANKS_PER_NODE")) ranks_per_node = std::atoi(env);
  }
  NodeLayout layout;
  if (ranks_per_node > 0) {
    if (ctx.size() % ranks_per_node != 0) {
      throw UsageError(
          fmt::format("--ranks-per-node {} does not divide the {} ranks of this job", ranks_per_node, ctx.size()));
    }
    for (int r = 0; r < ctx.size(); ++r) layout.node_of.push_back(r / ranks_per_node);
    return layout;
  }
  std::vector<std::string> seen;
  for (const auto& h : ctx.hosts()) {
    auto it = std::find(seen.begin(), seen.end(), h);
    layout.node_of.push_back(static_cast<int>(it - seen.begin()));
    if (it == seen.end()) seen.push_back(h);
  }
  return layout;
}

// All-to-all step times of one rank: samples[q] holds, per timed iteration, how long
// the block from rank q took.
struct PairSamples {
  std::vector<std::vector<double>> from;
};

// Every rank's per-source step times summarized: one entry per (src -> dst) link.
json gather_pairs(RunContext& ctx, const PairSamples& mine, uint64_t block_bytes) {
  json local = json::array();
  for (int q = 0; q < ctx.size(); ++q) {
    if (q == ctx.rank() || mine.from[static_cast<size_t>(q)].empty()) continue;
    const Summary s = summarize(mine.from[static_cast<size_t>(q)]);
    local.push_back(json{{"src", q},
                         {"dst", ctx.rank()},
                         {"step_us", to_json(s)},
                         {"gbps", gbps(static_cast<double>(block_bytes), s.p50 * 1e-6)}});
  }
  json all = json::array();
  for (const auto& text : ctx.bootstrap().all_gather_strings(local.dump()))
    for (auto& e : json::parse(text)) all.push_back(std::move(e));
  return all;
}

// After the sweep: the links with the slowest median step at the largest size, against
// the median link, so one bad cable or NIC stands out.
void print_slowest_pairs(const RunContext& ctx, uint64_t bytes, const json& pairs) {
  if (pairs.empty()) return;
  std::vector<std::pair<double, const json*>> order;
  for (const auto& p : pairs) order.emplace_back(p.at("step_us").at("p50").get<double>(), &p);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<double> p50s;
  for (const auto& [v, p] : order) p50s.push_back(v);
  const double median = summarize(p50s).p50;
  ctx.print(fmt::format("# Slowest all-to-all links at {} B (step time: step posted until the block arrived):", bytes));
  ctx.print(fmt::format("#   {:<24} {:<24} {:>10} {:>10} {:>8} {:>9}", "src", "dst", "p50 (us)", "p99 (us)", "GB/s",
                        "x median"));
  for (size_t i = 0; i < std::min<size_t>(order.size(), 5); ++i) {
    const json& p = *order[i].second;
    ctx.print(fmt::format("#   {:<24} {:<24} {:>10.1f} {:>10.1f} {:>8.3f} {:>9.2f}", ctx.peer_name(p.at("src")),
                          ctx.peer_name(p.at("dst")), order[i].first, p.at("step_us").at("p99").get<double>(),
                          p.at("gbps").get<double>(), median > 0 ? order[i].first / median : 0.0));
  }
}

}  // namespace

int run_collective(Bootstrap& bootstrap, const CommonOptions& common, const CollectiveOptions& opt, Pattern pattern) {
  const char* name = command_name(pattern);
  RunContext ctx(bootstrap, common, name);
  const bool alltoall = pattern == Pattern::all_to_all;
  std::string algo_opt = opt.algo.empty() ? (alltoall ? "pairwise" : "ring") : opt.algo;
  Sweep sweep;
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  RingProtocol protocol = RingProtocol::send;
  uint64_t slice_bytes = 0;
  NodeLayout layout;
  ctx.agree([&] {
    protocol = parse_ring_protocol(opt.protocol);
    slice_bytes = parse_size(opt.slice_bytes);
    sweep = make_sweep(common, SweepDefaults{"1K", "16M", 20, 5});
    type = parse_datatype(opt.datatype);
    op = parse_reduce_op(opt.op);
    const bool all_reduce = pattern == Pattern::all_reduce;
    const bool known = alltoall ? algo_opt == "pairwise"
                                : algo_opt == "ring" ||
                                      (all_reduce && (algo_opt == "rhd" || algo_opt == "hier" || algo_opt == "auto"));
    if (!known) {
      throw UsageError(fmt::format("unknown --algo '{}' for {}: use {}", algo_opt, name,
                                   all_reduce                       ? "ring, rhd, hier or auto"
                                   : pattern == Pattern::all_to_all ? "pairwise"
                                                                    : "ring"));
    }
    if (slice_bytes < 64) throw UsageError(fmt::format("--slice-bytes {} must be 64 or more", opt.slice_bytes));
    if (pattern != Pattern::all_reduce && protocol != RingProtocol::send) {
      throw UsageError(fmt::format("--protocol {} is for allreduce; {} uses send", opt.protocol, name));
    }
    if (opt.window < 1) throw UsageError(fmt::format("--window {} must be 1 or more", opt.window));
    if (opt.ranks_per_node < 0) {
      throw UsageError(
          fmt::format("--ranks-per-node {} must be positive (0: group ranks by host name)", opt.ranks_per_node));
    }
    layout = node_layout(ctx, opt.ranks_per_node);
  });
  ctx.open_transport();
  Transport& t = ctx.transport();
  // Transports with their own collectives (NCCL) run them; the others run ours.
  const bool native = t.caps().native_collectives;
  const MemoryKind mem = ctx.memory_kind();
  ctx.agree([&] {
    if (native && !opt.algo.empty())
      throw UsageError(fmt::format("--algo applies to railbench's own collectives; -t {} runs its own", t.name()));
  });
  if (native) algo_opt = t.name();
  const int n = ctx.size();
  const size_t esize = size_of(type);
  const bool reduces = pattern == Pattern::all_reduce || pattern == Pattern::reduce_scatter;
  // Elements per rank as nccl-tests counts them: all-reduce count = S / type size; for
  // the others S is the whole n x count buffer.
  const size_t per = pattern == Pattern::all_reduce ? 1 : static_cast<size_t>(n);
  auto count_of = [&](uint64_t bytes) { return bytes / esize / per; };
  const size_t max_count = std::max<size_t>(count_of(sweep.sizes.back()), 1);
  const size_t max_bytes = max_count * per * esize;
  const int nodes = layout.nodes();
  const bool uniform_nodes = layout.uniform();

  // Buffers for the largest size, registered once, as nccl-tests allocates once.
  std::unique_ptr<gpu::Buffer> sendbuf, recvbuf;
  std::unique_ptr<MemoryRegion> send_mr, recv_mr;
  ctx.agree([&] {
    sendbuf = std::make_unique<gpu::Buffer>(mem, max_bytes);
    recvbuf = std::make_unique<gpu::Buffer>(mem, max_bytes);
    send_mr = t.register_memory(sendbuf->data(), sendbuf->size(), mem);
    recv_mr = t.register_memory(recvbuf->data(), recvbuf->size(), mem);
  });
  // -c on GPU memory: patterns are made and checked on the host, copied over.
  const bool staged = mem == MemoryKind::cuda;
  std::vector<std::byte> staging(staged ? max_bytes : 0);
  std::unique_ptr<AllReduce> allreduce;
  std::unique_ptr<AllGather> allgather;
  std::unique_ptr<ReduceScatter> reducescatter;
  std::unique_ptr<AllToAll> all_to_all;
  ctx.agree([&] {
    if (native) return;
    // Our own collectives on GPU memory: scratch alike, reductions by the CUDA kernels.
    const RingOptions ring{max_bytes, slice_bytes, t.num_rails(), protocol, mem};
    if (pattern == Pattern::all_reduce)
      allreduce = make_allreduce(parse_allreduce_algo(algo_opt), ctx.progress(), AllReduceSetup{ring, layout});
    if (pattern == Pattern::all_gather) allgather = make_ring_allgather(ctx.progress(), ring);
    if (pattern == Pattern::reduce_scatter) reducescatter = make_ring_reducescatter(ctx.progress(), ring);
    if (alltoall)
      all_to_all =
          std::make_unique<AllToAll>(ctx.progress(), AllToAllOptions{max_bytes, t.num_rails(), opt.window, mem});
  });
  auto algo_for = [&](size_t bytes) -> std::string { return allreduce ? allreduce->algo_for(bytes) : algo_opt; };
  auto run_once = [&](const std::string& algo, const CollectiveBuffers& bufs, size_t count) {
    if (native) {
      CollectiveOp cop;
      cop.kind = pattern == Pattern::all_reduce       ? CollectiveKind::all_reduce
                 : pattern == Pattern::all_gather     ? CollectiveKind::all_gather
                 : pattern == Pattern::reduce_scatter ? CollectiveKind::reduce_scatter
                                                      : CollectiveKind::all_to_all;
      cop.send = LocalSpan{bufs.send, bufs.send_offset, count * per * esize};
      cop.recv = LocalSpan{bufs.recv, bufs.recv_offset, count * per * esize};
      cop.count = count;
      cop.dtype = type;
      cop.op = op;
      Progress& p = ctx.progress();
      p.wait(p.post(ctx.rank(), OpKind::collective, [&](uint64_t id) { return t.post_collective(cop, id); }), name);
      return;
    }
    (void)algo;  // the all-reduce makes its own choice per size
    if (allreduce) allreduce->run(bufs, count, type, op);
    if (allgather) allgather->run(bufs, count, type);
    if (reducescatter) reducescatter->run(bufs, count, type, op);
    if (all_to_all) all_to_all->run(bufs, count, type);
  };
  // nccl-tests' in-place layouts: all-gather sends from its own block of the result,
  // reduce-scatter leaves its result in its own block of the input.
  auto buffers = [&](bool in_place, size_t count) {
    const size_t own = static_cast<size_t>(ctx.rank()) * count * esize;
    if (!in_place) return CollectiveBuffers{send_mr.get(), 0, recv_mr.get(), 0};
    if (pattern == Pattern::all_gather) return CollectiveBuffers{recv_mr.get(), own, recv_mr.get(), 0};
    if (pattern == Pattern::reduce_scatter) return CollectiveBuffers{recv_mr.get(), 0, recv_mr.get(), own};
    return CollectiveBuffers{recv_mr.get(), 0, recv_mr.get(), 0};
  };
  // Inputs: all-gather one block per rank, reduce-scatter and all-to-all n blocks.
  auto fill = [&](const CollectiveBuffers& bufs, size_t count, uint32_t seed) {
    void* in = staged ? staging.data() : bufs.send->at(bufs.send_offset);
    const size_t in_count = pattern == Pattern::all_gather ? count : pattern == Pattern::all_reduce ? count : count * n;
    if (pattern == Pattern::all_gather) {
      fill_block(type, ctx.rank(), 0, seed, in, count);
    } else if (alltoall) {
      fill_alltoall(type, ctx.rank(), n, seed, in, count);
    } else {
      fill_input(type, op, ctx.rank(), seed, in, in_count);
    }
    if (staged) gpu::copy(bufs.send->at(bufs.send_offset), staging.data(), in_count * esize);
  };
  auto count_wrong = [&](const CollectiveBuffers& bufs, size_t count, uint32_t seed) -> uint64_t {
    const std::byte* result = bufs.recv->at(bufs.recv_offset);
    if (staged) {
      const size_t out_count = pattern == Pattern::reduce_scatter ? count : count * per;
      gpu::copy(staging.data(), result, out_count * esize);
      result = staging.data();
    }
    switch (pattern) {
      case Pattern::all_reduce: return count_wrong_allreduce(type, op, n, seed, result, count);
      case Pattern::all_gather: return count_wrong_allgather(type, n, seed, result, count);
      case Pattern::all_to_all: return count_wrong_alltoall(type, ctx.rank(), n, seed, result, count);
      default: return count_wrong_allreduce(type, op, n, seed, result, count, static_cast<size_t>(ctx.rank()) * count);
    }
  };
  const char* redop = reduces ? to_string(op) : "none";

  json config{{"min_bytes", sweep.sizes.front()},
              {"max_bytes", sweep.sizes.back()},
              {"step_factor", common.step_factor},
              {"iters", sweep.iters},
              {"warmup_iters", sweep.warmup},
              {"datatype", to_string(type)},
              {"op", redop},
              {"algo", algo_opt},
              {"slice_bytes", slice_bytes},
              {"protocol", opt.protocol},
              {"nodes", nodes}};
  if (alltoall) config["window"] = opt.window;
  ResultsFile results(ctx.is_root() ? common.json_path : "", ctx.results_header(config));

  const bool show_algo = algo_opt == "auto";
  ctx.print(fmt::format("# railbench {}: transport {} ({}), {} ranks on {} host(s), {} rail(s), algo {}{}", name,
                        t.name(), t.provider(), n, ctx.num_hosts(), t.num_rails(), algo_opt,
                        alltoall ? fmt::format(", window {}", opt.window) : std::string()));
  if (algo_opt == "hier" || show_algo)
    ctx.print(fmt::format("# nodes: {} ({}; --ranks-per-node or RAILBENCH_RANKS_PER_NODE overrides)", nodes,
                          uniform_nodes ? "same ranks on each" : "uneven"));
  ctx.print(fmt::format("# time: mean iteration time, an iteration's time being the slowest rank's; busbw = algbw * {}",
                        pattern == Pattern::all_reduce ? "2(n-1)/n" : "(n-1)/n"));
  ctx.print("#");
  const std::string algo_head = show_algo ? "  algo" : "";
  ctx.print(
      fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6}  {:^51}  {:^51}", "", "", "", "", "", "out-of-place", "in-place"));
  const std::string side_head =
      fmt::format("{:>9} {:>7} {:>7} {:>7} {:>8} {:>8}", "time", "algbw", "busbw", "#wrong", "p50", "p99");
  const std::string side_units =
      fmt::format("{:>9} {:>7} {:>7} {:>7} {:>8} {:>8}", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)");
  ctx.print(fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6}  {}  {}{}", "size", "count", "type", "redop", "root",
                        side_head, side_head, algo_head));
  ctx.print(fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6}  {}  {}", "(B)", "(elements)", "", "", "", side_units,
                        side_units));

  uint64_t total_wrong = 0;
  double busbw_sum = 0;
  int busbw_n = 0;
  json last_pairs;
  uint64_t last_bytes = 0;
  try {
    for (size_t si = 0; si < sweep.sizes.size(); ++si) {
      const size_t count = count_of(sweep.sizes[si]);
      if (count == 0) continue;  // less than one element per rank, as nccl-tests skips it
      const size_t bytes = count * per * esize;
      const std::string algo = algo_for(bytes);
      ctx.progress_note(fmt::format("{} {} B", name, bytes));
      CollectiveRecord rec;
      rec.bytes = bytes;
      rec.count = count * per;
      rec.type = to_string(type);
      rec.redop = redop;
      rec.algo = algo;
      PairSamples samples{std::vector<std::vector<double>>(static_cast<size_t>(n))};

      for (int in_place = 0; in_place < 2; ++in_place) {
        const CollectiveBuffers bufs = buffers(in_place != 0, count);
        const auto seed = static_cast<uint32_t>(si * 2 + static_cast<size_t>(in_place));
        fill(bufs, count, seed);
        // All-to-all keeps each out-of-place iteration's per-source step times.
        const bool keep_steps = alltoall && !in_place;
        auto times = time_iterations(ctx, sweep.warmup, sweep.iters, [&] {
          run_once(algo, bufs, count);
          if (!keep_steps) return;
          for (int q = 0; q < n; ++q)
            if (q != ctx.rank())
              samples.from[static_cast<size_t>(q)].push_back(all_to_all->step_us()[static_cast<size_t>(q)]);
        });
        // time_iterations runs the warm-up through the same callback: drop those.
        if (keep_steps)
          for (auto& v : samples.from)
            if (v.size() > static_cast<size_t>(sweep.iters)) v.erase(v.begin(), v.end() - sweep.iters);
        CollectiveSide side = collective_side(times, bytes, pattern, n);
        if (common.check) {
          // Fresh inputs, one run, every element compared against the reference.
          const uint32_t check_seed = seed + 1000;
          // (Only GPU memory goes through CUDA: a host run must not create a CUDA context.)
          if (!in_place && staged) gpu::zero(bufs.recv->data(), max_bytes);
          if (!in_place && !staged) std::memset(bufs.recv->data(), 0, max_bytes);
          fill(bufs, count, check_seed);
          run_once(algo, bufs, count);
          const uint64_t wrong = count_wrong(bufs, count, check_seed);
          for (uint64_t w : ctx.bootstrap().all_gather_value<uint64_t>(wrong)) side.wrong += w;
        }
        (in_place ? rec.in_place : rec.out_of_place) = side;
        total_wrong += side.wrong;
      }
      busbw_sum += rec.out_of_place.busbw + rec.in_place.busbw;
      busbw_n += 2;
      ctx.print(fmt::format("  {:>10} {:>12} {:>8} {:>6} {:>6}  {}  {}{}", rec.bytes, rec.count, rec.type, rec.redop,
                            rec.root, side_columns(rec.out_of_place, common.check),
                            side_columns(rec.in_place, common.check),
                            show_algo ? fmt::format("  {}", algo) : std::string()));
      json entry = to_json(rec);
      if (alltoall) {
        last_pairs = gather_pairs(ctx, samples, count * esize);
        last_bytes = bytes;
        entry["pairs"] = last_pairs;
      }
      results.add(std::move(entry));
    }
  } catch (const Error& e) {
    results.finish(false, e.what());
    throw;
  }
  ctx.progress_note("");
  if (common.check)
    ctx.print(fmt::format("# Out of bounds values : {} {}", total_wrong, total_wrong ? "FAILED" : "OK"));
  ctx.print(fmt::format("# Avg bus bandwidth    : {:.4f}", busbw_n ? busbw_sum / busbw_n : 0.0));
  if (alltoall) print_slowest_pairs(ctx, last_bytes, last_pairs);
  results.set("channels", ctx.gather_channels());
  results.finish(true);
  if (!common.json_path.empty()) ctx.print(fmt::format("# results: {}", common.json_path));
  return total_wrong ? 1 : 0;
}

}  // namespace railbench
