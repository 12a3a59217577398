#include "bench/commands/collectives/collective_sweep.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "bench/runner/burn_in.h"
#include "bench/runner/records.h"
#include "bench/runner/results_run.h"
#include "bench/runner/stragglers_run.h"
#include "bench/runner/sweep.h"
#include "bench/runner/timing.h"
#include "lib/core/config_path.h"
#include "lib/core/sizes.h"
#include "lib/observe/straggler_recording.h"
#include "lib/results/results.h"
#include "lib/transport/gpu.h"

namespace railbench {

using nlohmann::json;

namespace {

// "ring", "ring or rhd", "ring, rhd, hier or auto".
std::string one_of(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

// Which node each rank is on: consecutive blocks of --ranks-per-node (or the
// RAILBENCH_RANKS_PER_NODE environment variable), so one host can stand in for several
// nodes in tests; by default ranks that share a host name share a node.
NodeLayout node_layout(const RunContext& ctx, int ranks_per_node) {
  const char* source = "--ranks-per-node";
  if (ranks_per_node <= 0) {
    // Set but not a count is a mistake to name, not a default to fall back to silently.
    if (const char* env = std::getenv("RAILBENCH_RANKS_PER_NODE"); env && *env) {
      source = "RAILBENCH_RANKS_PER_NODE";
      const char* end = env + std::strlen(env);
      auto [ptr, ec] = std::from_chars(env, end, ranks_per_node);
      if (ec != std::errc() || ptr != end || ranks_per_node < 1) {
        throw UsageError(
            fmt::format("RAILBENCH_RANKS_PER_NODE='{}' is not a whole number of ranks, 1 or more: set "
                        "it to the ranks of each node (e.g. 8), or unset it to group ranks by host name",
                        cut_for_error(env, 40)));
      }
    }
  }
  NodeLayout layout;
  if (ranks_per_node > 0) {
    if (ctx.size() % ranks_per_node != 0) {
      throw UsageError(
          fmt::format("{} {} does not divide the {} ranks of this job", source, ranks_per_node, ctx.size()));
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

// A transport with collectives of its own (NCCL) runs the pattern natively.
class NativeRunner : public CollectiveRunner {
 public:
  NativeRunner(RunContext& ctx, const CollectiveSpec& spec) : ctx_(ctx), spec_(spec) {}
  std::string algo_for(size_t) const override { return ctx_.transport().name(); }
  void run(const CollectiveBuffers& bufs, size_t count, DataType type, ReduceOp op) override {
    const size_t per = spec_.per_rank_blocks ? static_cast<size_t>(ctx_.size()) : 1;
    CollectiveOp cop;
    cop.kind = spec_.native;
    cop.send = LocalSpan{bufs.send, bufs.send_offset, count * per * size_of(type)};
    cop.recv = LocalSpan{bufs.recv, bufs.recv_offset, count * per * size_of(type)};
    cop.count = count;
    cop.dtype = type;
    cop.op = op;
    Progress& p = ctx_.progress();
    Transport& t = ctx_.transport();
    p.wait(p.post(ctx_.rank(), OpKind::collective, [&](uint64_t id) { return t.post_collective(cop, id); }),
           spec_.name);
  }

 private:
  RunContext& ctx_;
  const CollectiveSpec& spec_;
};

class CollectiveSweep {
 public:
  CollectiveSweep(Bootstrap& bootstrap, const CommonOptions& common, const CollectiveOptions& opt,
                  const CollectiveSpec& spec)
      : ctx_(bootstrap, common, spec.name), common_(common), opt_(opt), spec_(spec) {}
  // The buffers and regions below go before ctx_: close the transport first (see
  // RunContext::close_transport), also when run() throws.
  ~CollectiveSweep() { ctx_.close_transport(); }
  CollectiveSweep(const CollectiveSweep&) = delete;
  CollectiveSweep& operator=(const CollectiveSweep&) = delete;

  int run();

 private:
  void resolve();
  void allocate();
  void print_header(const std::string& algo) const;
  CollectiveBuffers buffers(bool in_place, size_t count) const;
  void fill(const CollectiveBuffers& bufs, size_t count, uint32_t seed);
  uint64_t count_wrong(const CollectiveBuffers& bufs, size_t count, uint32_t seed);
  CollectiveSide measure(const CollectiveBuffers& bufs, size_t count, size_t bytes, uint32_t seed, bool in_place);
  json run_size(size_t si, CollectiveRecord& rec, bool print, ResultsRun& results);
  // Less than one element per rank (or, uneven, no token), as nccl-tests skips it.
  bool skipped(size_t si) const {
    if (auto u = runner_->uneven(si)) return u->count == 0;
    return sweep_.sizes[si] / esize_ / per_ == 0;
  }
  void print_window(const BurnInLog& log, const std::vector<CollectiveRecord>& window, int pass) const;
  void finish_stragglers(ResultsRun& results);

  RunContext ctx_;
  const CommonOptions& common_;
  const CollectiveOptions& opt_;
  const CollectiveSpec& spec_;
  Sweep sweep_;
  BurnInPlan burn_in_;
  DataType type_ = DataType::f32;
  ReduceOp op_ = ReduceOp::sum;
  RingProtocol protocol_ = RingProtocol::send;
  uint64_t slice_bytes_ = 0;
  std::string algo_;
  NodeLayout layout_;
  size_t per_ = 1, esize_ = 4, max_bytes_ = 0;
  bool staged_ = false;  // GPU memory: patterns are made and checked on the host, copied over
  std::unique_ptr<gpu::Buffer> sendbuf_, recvbuf_;
  std::unique_ptr<MemoryRegion> send_mr_, recv_mr_;
  std::vector<std::byte> staging_;
  std::unique_ptr<CollectiveRunner> runner_;
  // --stragglers: the timed out-of-place iterations of each size, collected after it.
  std::unique_ptr<StragglerRecording> stragglers_;
  StragglerThreshold straggler_threshold_;
  uint32_t straggler_iteration_ = 0;
  bool record_ = false;               // the first burn-in window is recorded, as it is printed
  std::optional<UnevenSize> uneven_;  // the current size's plan, for an uneven runner
};

void CollectiveSweep::resolve() {
  ctx_.agree([&] {
    protocol_ = parse_ring_protocol(opt_.protocol);
    slice_bytes_ = parse_size(opt_.slice_bytes);
    sweep_ = make_sweep(common_, SweepDefaults{"1K", "16M", 20, 5});
    burn_in_ = make_burn_in_plan(common_.duration, common_.cycles);
    type_ = parse_datatype(opt_.datatype);
    op_ = parse_reduce_op(opt_.op);
    algo_ = opt_.algo.empty() ? spec_.algos.front() : opt_.algo;
    if (std::find(spec_.algos.begin(), spec_.algos.end(), algo_) == spec_.algos.end())
      throw UsageError(fmt::format("unknown --algo '{}' for {}: use {}", algo_, spec_.name, one_of(spec_.algos)));
    if (slice_bytes_ < 64) throw UsageError(fmt::format("--slice-bytes {} must be 64 or more", opt_.slice_bytes));
    if (spec_.pattern != Pattern::all_reduce && protocol_ != RingProtocol::send)
      throw UsageError(fmt::format("--protocol {} is for allreduce; {} uses send", opt_.protocol, spec_.name));
    if (opt_.window < 1) throw UsageError(fmt::format("--window {} must be 1 or more", opt_.window));
    if (opt_.ranks_per_node < 0) {
      throw UsageError(
          fmt::format("--ranks-per-node {} must be positive (0: group ranks by host name)", opt_.ranks_per_node));
    }
    layout_ = node_layout(ctx_, opt_.ranks_per_node);
    if (!opt_.straggler_threshold.empty()) straggler_threshold_ = parse_straggler_threshold(opt_.straggler_threshold);
  });
  if (opt_.stragglers || !opt_.straggler_threshold.empty()) {
    // Room for every timed iteration of a size; messages capped so the gather stays small
    // (8192 x 40 bytes per rank and size): a size with more keeps its last iterations.
    stragglers_ = std::make_unique<StragglerRecording>(static_cast<size_t>(std::max(sweep_.iters, 1)), 8192);
    ctx_.wrap_transport([this](std::unique_ptr<Transport> t) { return stragglers_->wrap(std::move(t)); });
  }
  per_ = spec_.per_rank_blocks ? static_cast<size_t>(ctx_.size()) : 1;
  esize_ = size_of(type_);
}

// Buffers for the largest size, registered once, as nccl-tests allocates once; then
// the implementation: the transport's own collectives (NCCL) or railbench's.
void CollectiveSweep::allocate() {
  Transport& t = ctx_.transport();
  const bool native = t.caps().native_collectives;
  ctx_.agree([&] {
    if (native && !opt_.algo.empty())
      throw UsageError(fmt::format("--algo applies to railbench's own collectives; -t {} runs its own", t.name()));
  });
  if (native) algo_ = t.name();
  const size_t max_count = std::max<size_t>(sweep_.sizes.back() / esize_ / per_, 1);
  max_bytes_ = max_count * per_ * esize_;
  const MemoryKind mem = ctx_.memory_kind();
  // The runner first: an uneven one says how large its buffers must be.
  ctx_.agree([&] {
    if (native) {
      if (!opt_.routing.empty())
        throw UsageError(
            fmt::format("--routing runs railbench's own all-to-all-v; -t {} runs its own all-to-all: "
                        "choose another transport or leave --routing out",
                        t.name()));
      runner_ = std::make_unique<NativeRunner>(ctx_, spec_);
      return;
    }
    // Our own collectives on GPU memory: scratch alike, reductions by the CUDA kernels.
    runner_ = spec_.make(CollectiveSetup{&ctx_.progress(), algo_,
                                         RingOptions{max_bytes_, slice_bytes_, t.num_rails(), protocol_, mem}, layout_,
                                         opt_.window, &opt_, sweep_.sizes, type_});
  });
  max_bytes_ = runner_->buffer_bytes(max_bytes_);
  staged_ = mem == MemoryKind::cuda;
  staging_.resize(staged_ ? max_bytes_ : 0);
  ctx_.agree([&] {
    sendbuf_ = std::make_unique<gpu::Buffer>(mem, max_bytes_);
    recvbuf_ = std::make_unique<gpu::Buffer>(mem, max_bytes_);
    send_mr_ = t.register_memory(sendbuf_->data(), sendbuf_->size(), mem);
    recv_mr_ = t.register_memory(recvbuf_->data(), recvbuf_->size(), mem);
  });
}

void CollectiveSweep::print_header(const std::string& algo) const {
  const Transport& t = ctx_.transport();
  const bool alltoall = spec_.pattern == Pattern::all_to_all;
  ctx_.print(fmt::format("# railbench {}: transport {} ({}), {} ranks on {} host(s), {} rail(s), algo {}{}", spec_.name,
                         t.name(), t.provider(), ctx_.size(), ctx_.num_hosts(), t.num_rails(), algo,
                         alltoall ? fmt::format(", window {}", opt_.window) : std::string()));
  if (algo == "hier" || algo == "auto")
    ctx_.print(fmt::format("# nodes: {} ({}; --ranks-per-node or RAILBENCH_RANKS_PER_NODE overrides)", layout_.nodes(),
                           layout_.uniform() ? "same ranks on each" : "uneven"));
  ctx_.print(
      fmt::format("# time: mean iteration time, an iteration's time being the slowest rank's; busbw = algbw * {}",
                  spec_.busbw_formula));
  for (const auto& line : runner_->header_lines()) ctx_.print(line);
  ctx_.print("#");
  const auto [extra_head, extra_units] = runner_->columns_head();
  const std::string algo_head = (algo == "auto" ? "  algo" : "") + extra_head;
  ctx_.print(
      fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6}  {:^51}  {:^51}", "", "", "", "", "", "out-of-place", "in-place"));
  const std::string side_head =
      fmt::format("{:>9} {:>7} {:>7} {:>7} {:>8} {:>8}", "time", "algbw", "busbw", "#wrong", "p50", "p99");
  const std::string side_units =
      fmt::format("{:>9} {:>7} {:>7} {:>7} {:>8} {:>8}", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)");
  ctx_.print(fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6}  {}  {}{}", "size", "count", "type", "redop", "root",
                         side_head, side_head, algo_head));
  ctx_.print(fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6}  {}  {}{}", "(B)", "(elements)", "", "", "", side_units,
                         side_units, extra_units));
}

CollectiveBuffers CollectiveSweep::buffers(bool in_place, size_t count) const {
  if (!in_place) return CollectiveBuffers{send_mr_.get(), 0, recv_mr_.get(), 0};
  return spec_.in_place(recv_mr_.get(), static_cast<size_t>(ctx_.rank()) * count * esize_);
}

void CollectiveSweep::fill(const CollectiveBuffers& bufs, size_t count, uint32_t seed) {
  void* in = staged_ ? staging_.data() : bufs.send->at(bufs.send_offset);
  if (uneven_)
    runner_->fill(in, seed);
  else
    spec_.fill(type_, op_, ctx_.rank(), ctx_.size(), seed, in, count);
  const size_t in_bytes = uneven_ ? uneven_->in_bytes : spec_.in_count(count, ctx_.size()) * esize_;
  if (staged_) gpu::copy(bufs.send->at(bufs.send_offset), staging_.data(), in_bytes);
}

uint64_t CollectiveSweep::count_wrong(const CollectiveBuffers& bufs, size_t count, uint32_t seed) {
  const std::byte* result = bufs.recv->at(bufs.recv_offset);
  if (staged_) {
    gpu::copy(staging_.data(), result, uneven_ ? uneven_->out_bytes : spec_.out_count(count, ctx_.size()) * esize_);
    result = staging_.data();
  }
  if (uneven_) return runner_->count_wrong(result, seed);
  return spec_.count_wrong(type_, op_, ctx_.rank(), ctx_.size(), seed, result, count);
}

// One side at one size: timed iterations, then with -c one checked run on fresh
// inputs, every element compared against the reference.
CollectiveSide CollectiveSweep::measure(const CollectiveBuffers& bufs, size_t count, size_t bytes, uint32_t seed,
                                        bool in_place) {
  fill(bufs, count, seed);
  if (TimelineRecorder* timeline = ctx_.timeline()) timeline->set_mark_bytes(bytes);
  // --stragglers records the timed out-of-place calls: each op begins when this rank is
  // ready for it (its arrival) and ends when it returned.
  int call = 0;
  OpRecorder* rec = record_ && !in_place ? &stragglers_->recorder() : nullptr;
  const auto times = time_iterations(ctx_, sweep_.warmup, sweep_.iters, [&] {
    const bool timed = rec && call++ >= sweep_.warmup;
    if (timed) rec->begin_op(make_op_key(straggler_iteration_++, 0, spec_.name));
    runner_->run(bufs, count, type_, op_);
    if (timed) rec->end_op();
    runner_->after_call(!in_place, sweep_.iters);
  });
  // Uneven: algbw from the busiest rank's bytes (the bus factor as for the even case).
  CollectiveSide side = collective_side(times, uneven_ ? uneven_->bw_bytes : bytes, spec_.pattern, ctx_.size());
  if (common_.check) {
    const uint32_t check_seed = seed + 1000;
    // (Only GPU memory goes through CUDA: a host run must not create a CUDA context.)
    if (!in_place && staged_) gpu::zero(bufs.recv->data(), max_bytes_);
    if (!in_place && !staged_) std::memset(bufs.recv->data(), 0, max_bytes_);
    fill(bufs, count, check_seed);
    runner_->run(bufs, count, type_, op_);
    const uint64_t wrong = count_wrong(bufs, count, check_seed);
    for (uint64_t w : ctx_.bootstrap().all_gather_value<uint64_t>(wrong)) side.wrong += w;
  }
  return side;
}

// One line per burn-in window: when it ran and the range of its sizes' busbw.
void CollectiveSweep::print_window(const BurnInLog& log, const std::vector<CollectiveRecord>& window, int pass) const {
  if (window.empty()) return;
  const WindowTime& t = log.times().back();
  auto [lo, hi] = std::minmax_element(window.begin(), window.end(), [](const auto& a, const auto& b) {
    return a.out_of_place.busbw < b.out_of_place.busbw;
  });
  ctx_.print(fmt::format("# burn-in pass {} at +{:.1f} s ({}), {:.1f} s: busbw {:.3f} ({} B) .. {:.3f} ({} B) GB/s",
                         pass, t.start_s, t.wall, t.end_s - t.start_s, lo->out_of_place.busbw, lo->bytes,
                         hi->out_of_place.busbw, hi->bytes));
}

std::string side_columns(const CollectiveSide& s, bool check) {
  return fmt::format("{:>9.2f} {:>7.3f} {:>7.3f} {:>7} {:>8.2f} {:>8.2f}", s.time_us, s.algbw, s.busbw,
                     check ? fmt::format("{}", s.wrong) : std::string("N/A"), s.iter_us.p50, s.iter_us.p99);
}

// Rank 0 analyses what every size recorded, prints the blame table and writes the
// "stragglers" section. The analysis is rank 0's alone (no communication): should it
// fail, the figures already written stay and the section says why.
void CollectiveSweep::finish_stragglers(ResultsRun& results) {
  if (!stragglers_ || !ctx_.is_root()) return;
  std::vector<std::string> nodes;
  const bool one_host_many_nodes = ctx_.num_hosts() == 1 && layout_.nodes() > 1;
  for (int r = 0; r < ctx_.size(); ++r)
    nodes.push_back(one_host_many_nodes ? fmt::format("node{}", layout_.node_of[static_cast<size_t>(r)])
                                        : ctx_.hosts()[static_cast<size_t>(r)]);
  write_stragglers(ctx_, results, *stragglers_, nodes, straggler_threshold_);
}

json CollectiveSweep::run_size(size_t si, CollectiveRecord& rec, bool print, ResultsRun& results) {
  runner_->begin_size(si);
  uneven_ = runner_->uneven(si);
  const size_t count = uneven_ ? 0 : sweep_.sizes[si] / esize_ / per_;
  const size_t bytes = uneven_ ? uneven_->bytes : count * per_ * esize_;
  ctx_.sweep_step(si + 1, sweep_.sizes.size(), bytes);
  rec.bytes = bytes;
  rec.count = uneven_ ? uneven_->count : count * per_;
  rec.type = to_string(type_);
  rec.redop = spec_.reduces ? to_string(op_) : "none";
  rec.algo = runner_->algo_for(bytes);
  record_ = stragglers_ && print;
  // Counters go with the first burn-in window's results, the ones printed and kept (a
  // collective gather: `print` is the same on every rank, from rank 0's clock).
  if (print) results.counters_begin();
  for (int in_place = 0; in_place < 2; ++in_place) {
    const auto seed = static_cast<uint32_t>(si * 2 + static_cast<size_t>(in_place));
    (in_place ? rec.in_place : rec.out_of_place) =
        measure(buffers(in_place != 0, count), count, bytes, seed, in_place != 0);
  }
  if (print)
    ctx_.print(fmt::format("  {:>10} {:>12} {:>8} {:>6} {:>6}  {}  {}{}", rec.bytes, rec.count, rec.type, rec.redop,
                           rec.root, side_columns(rec.out_of_place, common_.check),
                           side_columns(rec.in_place, common_.check),
                           (algo_ == "auto" ? fmt::format("  {}", rec.algo) : std::string()) +
                               (uneven_ ? uneven_->columns : std::string())));
  json entry = to_json(rec);
  if (print) results.add_counters(entry);  // both sides of this size
  runner_->end_size(ctx_, bytes, count * esize_, entry);
  if (record_) stragglers_->collect(ctx_.progress(), ctx_.bootstrap());
  record_ = false;
  return entry;
}

int CollectiveSweep::run() {
  resolve();
  ctx_.open_transport();
  allocate();
  json config{{"min_bytes", sweep_.sizes.front()},
              {"max_bytes", sweep_.sizes.back()},
              {"step_factor", common_.step_factor},
              {"iters", sweep_.iters},
              {"warmup_iters", sweep_.warmup},
              {"datatype", to_string(type_)},
              {"op", spec_.reduces ? to_string(op_) : "none"},
              {"algo", algo_},
              {"slice_bytes", slice_bytes_},
              {"protocol", opt_.protocol},
              {"nodes", layout_.nodes()}};
  if (spec_.pattern == Pattern::all_to_all) config["window"] = opt_.window;
  runner_->add_config(config);
  if (stragglers_) config["stragglers"] = to_string(straggler_threshold_);
  ResultsRun results(ctx_, config);
  print_header(algo_);
  uint64_t total_wrong = 0;
  double busbw_sum = 0;
  int busbw_n = 0;
  // Burn-in: the sweep again and again, one window per pass; the table and "results"
  // are the first window's, later windows keep one figure per size (bench/runner/burn_in.h).
  BurnInLog log;
  std::vector<CollectiveRecord> window;
  results.measure([&] {
    results.burn_in(
        burn_in_, log,
        [&](const BurnInClock& clock) {
          const bool first = clock.windows_started() == 1;
          window.clear();
          for (size_t si = 0; si < sweep_.sizes.size(); ++si) {
            // Nothing to exchange at this size (skipped(), as nccl-tests skips it).
            if (skipped(si)) continue;
            CollectiveRecord rec;
            json entry = run_size(si, rec, first, results);
            if (first) results.add(std::move(entry));
            total_wrong += rec.out_of_place.wrong + rec.in_place.wrong;
            if (first) busbw_sum += rec.out_of_place.busbw + rec.in_place.busbw, busbw_n += 2;
            log.add(fmt::format("{} B", rec.bytes), fmt::format("{} B", rec.bytes), "GB/s", rec.out_of_place.busbw);
            window.push_back(std::move(rec));
          }
        },
        [&](const BurnInClock& clock, bool rewrite_due) {
          if (rewrite_due) print_window(log, window, clock.windows_started());
        });
  });
  ctx_.status().clear();
  if (common_.check)
    ctx_.print(fmt::format("# Out of bounds values : {} {}", total_wrong, total_wrong ? "FAILED" : "OK"));
  ctx_.print(fmt::format("# Avg bus bandwidth    : {:.4f}", busbw_n ? busbw_sum / busbw_n : 0.0));
  runner_->print_summary(ctx_);
  if (burn_in_.on())
    for (const auto& line : log.table(fmt::format("{} busbw (out-of-place) per size", spec_.name), "size"))
      ctx_.print(line);
  finish_stragglers(results);
  results.finish();
  return total_wrong ? 1 : 0;
}

}  // namespace

int run_collective_sweep(Bootstrap& bootstrap, const CommonOptions& common, const CollectiveOptions& options,
                         const CollectiveSpec& spec) {
  return CollectiveSweep(bootstrap, common, options, spec).run();
}

bool register_collective(const CollectiveSpec& spec) {
  return register_subcommand(Subcommand{
      spec.name, spec.help, spec.order, [&spec](CLI::App& sub, CommonOptions& common) {
        auto opt = std::make_shared<CollectiveOptions>();
        add_transport_options(sub, common);
        add_sweep_options(sub, common);
        add_iteration_options(sub, common);
        add_check_option(sub, common);
        add_output_options(sub, common, {.metrics = true});
        add_timeline_option(sub, common);
        add_paths_option(sub, common);
        add_link_options(sub, common);
        add_memory_options(sub, common);
        add_burn_in_options(sub, common);
        sub.add_option("-d,--datatype", opt->datatype, "f32, f64, f16, bf16, i32, i64, u8")->capture_default_str();
        if (spec.reduces) sub.add_option("-o,--op", opt->op, "sum, prod, min, max")->capture_default_str();
        // Only where there is a choice: one algorithm needs no option.
        if (spec.algos.size() > 1) sub.add_option("--algo", opt->algo, spec.algo_help);
        sub.add_flag("--stragglers", opt->stragglers,
                     "name who made slow iterations slow: a late-arriving rank or a slow link (node -> node, rail)");
        sub.add_option("--straggler-threshold", opt->straggler_threshold,
                       "TIME%,ITERS% (10%,25%): --stragglers' verdict names one costing more than TIME% of an "
                       "iteration in more than ITERS% of iterations; turns --stragglers on");
        spec.add_options(sub, *opt);
        return SubcommandRun{
            {}, [&spec, &common, opt](Bootstrap& b) { return run_collective_sweep(b, common, *opt, spec); }};
      }});
}

}  // namespace railbench
