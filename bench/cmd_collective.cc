// railbench allreduce / allgather / reducescatter: nccl-tests columns and semantics
// over any transport.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "bench/commands.h"
#include "bench/run_context.h"
#include "bench/sweep.h"
#include "collectives/allreduce.h"
#include "collectives/check.h"
#include "collectives/gather_scatter.h"
#include "lib/bandwidth.h"
#include "lib/clock.h"
#include "lib/results.h"
#include "lib/sizes.h"

namespace railbench {

using nlohmann::json;

namespace {

// Times `iters` back-to-back calls after `warmup` untimed ones. One barrier before the
// timed loop, none inside it (as nccl-tests), and each rank records when each of its
// iterations ended, so iteration i's time on a rank is end[i] - end[i-1]. The
// iteration's time is then the maximum over ranks.
std::vector<double> time_iterations(RunContext& ctx, int warmup, int iters, const std::function<void()>& once) {
  for (int i = 0; i < warmup; ++i) once();
  ctx.bootstrap().barrier();
  std::vector<double> local(static_cast<size_t>(iters));
  auto prev = Clock::now();
  for (int i = 0; i < iters; ++i) {
    once();
    auto now = Clock::now();
    local[static_cast<size_t>(i)] = seconds_between(prev, now) * 1e6;
    prev = now;
  }
  std::vector<double> all(local.size() * static_cast<size_t>(ctx.size()));
  ctx.bootstrap().all_gather(std::as_bytes(std::span<const double>(local)),
                             std::as_writable_bytes(std::span<double>(all)));
  std::vector<std::vector<double>> by_rank(static_cast<size_t>(ctx.size()));
  for (int r = 0; r < ctx.size(); ++r) by_rank[r].assign(all.begin() + r * iters, all.begin() + (r + 1) * iters);
  return max_over_ranks(by_rank);
}

std::string side_columns(const CollectiveSide& s, bool check) {
  return fmt::format("{:>9.2f} {:>7.3f} {:>7.3f} {:>7} {:>8.2f} {:>8.2f}", s.time_us, s.algbw, s.busbw,
                     check ? fmt::format("{}", s.wrong) : std::string("N/A"), s.iter_us.p50, s.iter_us.p99);
}

const char* command_name(Pattern p) {
  switch (p) {
    case Pattern::all_reduce: return "allreduce";
    case Pattern::all_gather: return "allgather";
    case Pattern::reduce_scatter: return "reducescatter";
    default: return "collective";
  }
}

}  // namespace

int run_collective(Bootstrap& bootstrap, const CommonOptions& common, const CollectiveOptions& opt, Pattern pattern) {
  const char* name = command_name(pattern);
  RunContext ctx(bootstrap, common, name);
  Sweep sweep;
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  RingProtocol protocol = RingProtocol::send;
  uint64_t slice_bytes = 0;
  ctx.agree([&] {
    protocol = parse_ring_protocol(opt.protocol);
    slice_bytes = parse_size(opt.slice_bytes);
    sweep = make_sweep(common, SweepDefaults{"1K", "16M", 20, 5});
    type = parse_datatype(opt.datatype);
    op = parse_reduce_op(opt.op);
    if (opt.algo != "ring") throw UsageError(fmt::format("unknown --algo '{}': this build offers ring", opt.algo));
    if (slice_bytes < 64) throw UsageError(fmt::format("--slice-bytes {} must be 64 or more", opt.slice_bytes));
    if (pattern != Pattern::all_reduce && protocol != RingProtocol::send) {
      throw UsageError(fmt::format("--protocol {} is for allreduce; {} uses send", opt.protocol, name));
    }
  });
  ctx.open_transport();
  Transport& t = ctx.transport();
  const int n = ctx.size();
  const size_t esize = size_of(type);
  const bool reduces = pattern != Pattern::all_gather;
  // Elements per rank as nccl-tests counts them: all-reduce count = S / type size; for
  // all-gather and reduce-scatter S is the whole n x count buffer.
  const size_t per = pattern == Pattern::all_reduce ? 1 : static_cast<size_t>(n);
  auto count_of = [&](uint64_t bytes) { return bytes / esize / per; };
  const size_t max_count = std::max<size_t>(count_of(sweep.sizes.back()), 1);
  const size_t max_bytes = max_count * per * esize;

  // Buffers for the largest size, registered once, as nccl-tests allocates once.
  std::vector<std::byte> sendbuf(max_bytes), recvbuf(max_bytes);
  auto send_mr = t.register_memory(sendbuf.data(), sendbuf.size(), MemoryKind::host);
  auto recv_mr = t.register_memory(recvbuf.data(), recvbuf.size(), MemoryKind::host);
  std::unique_ptr<AllReduce> allreduce;
  std::unique_ptr<AllGather> allgather;
  std::unique_ptr<ReduceScatter> reducescatter;
  ctx.agree([&] {
    RingOptions ring{max_bytes, slice_bytes, t.num_rails(), protocol};
    if (pattern == Pattern::all_reduce) allreduce = make_ring_allreduce(ctx.progress(), ring);
    if (pattern == Pattern::all_gather) allgather = make_ring_allgather(ctx.progress(), ring);
    if (pattern == Pattern::reduce_scatter) reducescatter = make_ring_reducescatter(ctx.progress(), ring);
  });
  auto run_once = [&](const CollectiveBuffers& bufs, size_t count) {
    if (allreduce) allreduce->run(bufs, count, type, op);
    if (allgather) allgather->run(bufs, count, type);
    if (reducescatter) reducescatter->run(bufs, count, type, op);
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
  const char* redop = reduces ? to_string(op) : "none";

  json config{{"min_bytes", sweep.sizes.front()},
              {"max_bytes", sweep.sizes.back()},
              {"step_factor", common.step_factor},
              {"iters", sweep.iters},
              {"warmup_iters", sweep.warmup},
              {"datatype", to_string(type)},
              {"op", redop},
              {"algo", "ring"},
              {"slice_bytes", slice_bytes},
              {"protocol", opt.protocol}};
  ResultsFile results(ctx.is_root() ? common.json_path : "", ctx.results_header(config));

  ctx.print(fmt::format("# railbench {}: transport {} ({}), {} ranks on {} host(s), {} rail(s), algo ring", name,
                        t.name(), t.provider(), n, ctx.num_hosts(), t.num_rails()));
  ctx.print(fmt::format("# time: mean iteration time, an iteration's time being the slowest rank's; busbw = algbw * {}",
                        pattern == Pattern::all_reduce ? "2(n-1)/n" : "(n-1)/n"));
  ctx.print("#");
  ctx.print(
      fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6}  {:^51}  {:^51}", "", "", "", "", "", "out-of-place", "in-place"));
  const std::string side_head =
      fmt::format("{:>9} {:>7} {:>7} {:>7} {:>8} {:>8}", "time", "algbw", "busbw", "#wrong", "p50", "p99");
  const std::string side_units =
      fmt::format("{:>9} {:>7} {:>7} {:>7} {:>8} {:>8}", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)");
  ctx.print(fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6}  {}  {}", "size", "count", "type", "redop", "root",
                        side_head, side_head));
  ctx.print(fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6}  {}  {}", "(B)", "(elements)", "", "", "", side_units,
                        side_units));

  uint64_t total_wrong = 0;
  double busbw_sum = 0;
  int busbw_n = 0;
  try {
    for (size_t si = 0; si < sweep.sizes.size(); ++si) {
      const size_t count = count_of(sweep.sizes[si]);
      if (count == 0) continue;  // less than one element per rank, as nccl-tests skips it
      const size_t bytes = count * per * esize;
      ctx.progress_note(fmt::format("{} {} B", name, bytes));
      CollectiveRecord rec;
      rec.bytes = bytes;
      rec.count = count * per;
      rec.type = to_string(type);
      rec.redop = redop;
      rec.algo = "ring";

      for (int in_place = 0; in_place < 2; ++in_place) {
        const CollectiveBuffers bufs = buffers(in_place != 0, count);
        const auto seed = static_cast<uint32_t>(si * 2 + static_cast<size_t>(in_place));
        // Inputs: all-gather one block per rank, the others n blocks (all-reduce: 1).
        const size_t input_count = pattern == Pattern::reduce_scatter ? count * per : count;
        fill_input(type, op, ctx.rank(), seed, bufs.send->at(bufs.send_offset), input_count);
        auto times = time_iterations(ctx, sweep.warmup, sweep.iters, [&] { run_once(bufs, count); });
        CollectiveSide side;
        side.iter_us = summarize(times);
        side.time_us = side.iter_us.mean;
        side.algbw = gbps(static_cast<double>(bytes), side.time_us * 1e-6);
        side.busbw = side.algbw * bus_factor(pattern, n);
        if (common.check) {
          // Fresh inputs, one run, every element compared against the reference.
          const uint32_t check_seed = seed + 1000;
          if (!in_place) std::memset(bufs.recv->data(), 0, max_bytes);
          fill_input(type, reduces ? op : ReduceOp::sum, ctx.rank(), check_seed, bufs.send->at(bufs.send_offset),
                     input_count);
          run_once(bufs, count);
          const std::byte* result = bufs.recv->at(bufs.recv_offset);
          uint64_t wrong = 0;
          if (pattern == Pattern::all_reduce) {
            wrong = count_wrong_allreduce(type, op, n, check_seed, result, count);
          } else if (pattern == Pattern::all_gather) {
            wrong = count_wrong_allgather(type, n, check_seed, result, count);
          } else {
            wrong =
                count_wrong_allreduce(type, op, n, check_seed, result, count, static_cast<size_t>(ctx.rank()) * count);
          }
          for (uint64_t w : ctx.bootstrap().all_gather_value<uint64_t>(wrong)) side.wrong += w;
        }
        (in_place ? rec.in_place : rec.out_of_place) = side;
        total_wrong += side.wrong;
      }
      busbw_sum += rec.out_of_place.busbw + rec.in_place.busbw;
      busbw_n += 2;
      ctx.print(fmt::format("  {:>10} {:>12} {:>8} {:>6} {:>6}  {}  {}", rec.bytes, rec.count, rec.type, rec.redop,
                            rec.root, side_columns(rec.out_of_place, common.check),
                            side_columns(rec.in_place, common.check)));
      results.add(to_json(rec));
    }
  } catch (const Error& e) {
    results.finish(false, e.what());
    throw;
  }
  ctx.progress_note("");
  if (common.check)
    ctx.print(fmt::format("# Out of bounds values : {} {}", total_wrong, total_wrong ? "FAILED" : "OK"));
  ctx.print(fmt::format("# Avg bus bandwidth    : {:.4f}", busbw_n ? busbw_sum / busbw_n : 0.0));
  results.finish(true);
  if (!common.json_path.empty()) ctx.print(fmt::format("# results: {}", common.json_path));
  return total_wrong ? 1 : 0;
}

}  // namespace railbench
