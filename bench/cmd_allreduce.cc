// railbench allreduce: nccl-tests columns and semantics over any transport.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "bench/commands.h"
#include "bench/run_context.h"
#include "bench/sweep.h"
#include "collectives/allreduce.h"
#include "collectives/check.h"
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

}  // namespace

int run_allreduce(Bootstrap& bootstrap, const CommonOptions& common, const AllReduceOptions& opt) {
  RunContext ctx(bootstrap, common, "allreduce");
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
  });
  ctx.open_transport();
  Transport& t = ctx.transport();
  const size_t esize = size_of(type);
  const size_t max_bytes = std::max<size_t>(sweep.sizes.back() / esize * esize, esize);

  // Buffers for the largest size, registered once, as nccl-tests allocates once.
  std::vector<std::byte> sendbuf(max_bytes), recvbuf(max_bytes);
  auto send_mr = t.register_memory(sendbuf.data(), sendbuf.size(), MemoryKind::host);
  auto recv_mr = t.register_memory(recvbuf.data(), recvbuf.size(), MemoryKind::host);
  std::unique_ptr<AllReduce> algo;
  ctx.agree([&] {
    RingOptions ring{max_bytes, slice_bytes, t.num_rails(), protocol};
    algo = make_ring_allreduce(ctx.progress(), ring);
  });

  const int n = ctx.size();
  json config{{"min_bytes", sweep.sizes.front()},
              {"max_bytes", sweep.sizes.back()},
              {"step_factor", common.step_factor},
              {"iters", sweep.iters},
              {"warmup_iters", sweep.warmup},
              {"datatype", to_string(type)},
              {"op", to_string(op)},
              {"algo", algo->name()},
              {"slice_bytes", slice_bytes},
              {"protocol", opt.protocol}};
  ResultsFile results(ctx.is_root() ? common.json_path : "", ctx.results_header(config));

  ctx.print(fmt::format("# railbench allreduce: transport {} ({}), {} ranks on {} host(s), {} rail(s), algo {}",
                        t.name(), t.provider(), n, ctx.num_hosts(), t.num_rails(), algo->name()));
  ctx.print("# time: mean iteration time, an iteration's time being the slowest rank's; busbw = algbw * 2(n-1)/n");
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
      const size_t count = sweep.sizes[si] / esize;
      if (count == 0) continue;  // smaller than one element, as nccl-tests skips it
      const size_t bytes = count * esize;
      ctx.progress_note(fmt::format("allreduce {} B", bytes));
      CollectiveRecord rec;
      rec.bytes = bytes;
      rec.count = count;
      rec.type = to_string(type);
      rec.redop = to_string(op);
      rec.algo = algo->name();

      for (int in_place = 0; in_place < 2; ++in_place) {
        const CollectiveBuffers bufs = in_place ? CollectiveBuffers{recv_mr.get(), 0, recv_mr.get(), 0}
                                                : CollectiveBuffers{send_mr.get(), 0, recv_mr.get(), 0};
        const auto seed = static_cast<uint32_t>(si * 2 + static_cast<size_t>(in_place));
        fill_input(type, op, ctx.rank(), seed, bufs.send->data(), count);
        auto times = time_iterations(ctx, sweep.warmup, sweep.iters, [&] { algo->run(bufs, count, type, op); });
        CollectiveSide side;
        side.iter_us = summarize(times);
        side.time_us = side.iter_us.mean;
        side.algbw = gbps(static_cast<double>(bytes), side.time_us * 1e-6);
        side.busbw = side.algbw * bus_factor(Pattern::all_reduce, n);
        if (common.check) {
          // Fresh inputs, one run, every element compared against the sequential reference.
          fill_input(type, op, ctx.rank(), seed + 1000, bufs.send->data(), count);
          if (!in_place) std::memset(bufs.recv->data(), 0, bytes);
          algo->run(bufs, count, type, op);
          const uint64_t wrong = count_wrong_allreduce(type, op, n, seed + 1000, bufs.recv->data(), count);
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
