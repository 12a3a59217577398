// railbench workload: a training step's traffic (TP, PP, DP, EP at once, on the rank
// layout a launcher gives them) replayed over the fabric, with the step time, the
// communication the step waits on beyond its compute, and who made slow steps slow.
#include <algorithm>
#include <array>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "bench/cli/cli.h"
#include "bench/commands/workload/workload_options.h"
#include "bench/commands/workload/workload_report.h"
#include "bench/runner/results_run.h"
#include "bench/runner/run_context.h"
#include "bench/runner/stragglers_run.h"
#include "collectives/kvcache/geometry.h"
#include "collectives/workload/executor.h"
#include "collectives/workload/formats/formats.h"
#include "collectives/workload/trace.h"
#include "lib/core/config_path.h"
#include "lib/core/sizes.h"
#include "lib/core/stats.h"
#include "lib/observe/straggler_recording.h"

namespace railbench {

using nlohmann::json;
using namespace workload;

namespace {

constexpr size_t kKinds = 5;
constexpr size_t kSamplesPerKind = 2000;   // op times per kind and rank kept for percentiles
constexpr size_t kMaxStepSamples = 10000;  // step times kept for percentiles
constexpr int kMaxEntries = 200;           // results entries (iterations or windows of them)
constexpr int kStragglerIters = 64;        // timed steps the straggler analysis records
constexpr int kStretch = 16;               // steps between collections of the records

// What every rank reports per iteration.
struct IterFigures {
  double step_us = 0, exposed_us = 0, compute_us = 0, async_us = 0;
  std::array<double, kKinds> kind_us{};
  std::array<double, kKinds> kind_bytes{}, kind_bus_bytes{};
};

formats::ImportOptions import_options(const WorkloadOptions& o) {
  if (o.trace.empty() && (o.fold != 1 || o.no_compute || o.compute_scale != 1))
    throw UsageError(
        "--fold, --compute-scale and --no-compute act on a trace: give --trace (for a spec, --compute-us sets the "
        "compute)");
  if (!(o.compute_scale >= 0))
    throw UsageError(
        fmt::format("--compute-scale {}: give a factor of 0 or more (1 replays compute as recorded)", o.compute_scale));
  formats::ImportOptions io;
  io.compute_scale = o.compute_scale;
  io.no_compute = o.no_compute;
  io.fold = o.fold;
  return io;
}

// What an outside trace held that the replay leaves out, by reason, and the fold.
std::string source_line(const json& m) {
  std::string s = fmt::format("# {} trace of {} ranks", m.value("source", "?"), m.value("trace_world", 0));
  if (m.contains("fold"))
    s += fmt::format(", folded by {} (dropped {} collectives and {} sends/receives of the ranks not replayed)",
                     m["fold"].value("k", 1), m["fold"].value("dropped_collectives", 0),
                     m["fold"].value("dropped_p2p", 0));
  const json skipped = m.value("skipped", json::object());
  uint64_t n = 0;
  for (const auto& [why, count] : skipped.items()) n += count.get<uint64_t>();
  s += fmt::format("; {} item(s) read but not replayed", n);
  for (const auto& [why, count] : skipped.items()) s += fmt::format("\n#   {:>8}  {}", count.get<uint64_t>(), why);
  return s;
}

// --trace: railbench's own file, or an outside format's per-rank files (formats.h), read
// whole on every rank (the checks need every rank's ops); folded onto `world` ranks with
// --fold. `world` <= 0: the trace's own.
Trace load_trace(const WorkloadOptions& o, int world) {
  Trace t = formats::load_trace_files(o.trace, import_options(o));
  const int trace_world = t.world;
  if (o.fold != 1) {
    t = formats::fold_trace(t, o.fold);
    check_trace(t);
  }
  if (world > 0 && t.world != world) {
    const std::string hint = trace_world % world == 0 ? fmt::format(", or --fold {} to replay one trace rank in {}",
                                                                    trace_world / world, trace_world / world)
                                                      : "";
    throw UsageError(fmt::format("--trace {} is for {} ranks{} but the job has {}: launch {} ranks{}", o.trace,
                                 trace_world, o.fold != 1 ? fmt::format(" ({} folded by {})", t.world, o.fold) : "",
                                 world, t.world, o.fold == 1 ? hint : ""));
  }
  return t;
}

int ranks_on_host(const std::vector<std::string>& hosts, const std::string& host) {
  return static_cast<int>(std::count(hosts.begin(), hosts.end(), host));
}

// Up to this world every rank builds the whole step (every rank's ops) and checks it
// (trace_check.h); beyond, a rank builds its own ops only: the whole step of 1,024 ranks
// of a 70B model is 1.5M ops, gigabytes on every rank. A spec's trace comes from one
// generator, checked over many shapes in the tests; `--emit-trace` checks it whole at any
// size (and `--trace` runs what it wrote, checked).
constexpr int kWholeTraceWorld = 256;

// The spec's trace: model, rank map, schedule. `ranks_per_node` <= 0 skips the node check.
// `only_rank` >= 0: that rank's ops alone, not checked.
Trace spec_trace(const WorkloadOptions& o, int world, int ranks_per_node, int only_rank = -1) {
  StepSpec spec = o.spec;
  spec.dtype_bytes = static_cast<int>(size_of(parse_datatype(spec.dtype)));
  spec.bucket_bytes = parse_size(o.bucket);
  if (spec.bucket_bytes == 0) throw UsageError("--bucket must be more than 0 bytes (e.g. 25M)");
  spec.routing.distribution = o.routing;
  spec.routing.seed = o.routing_seed;
  const TrainModel model = find_train_model(o.model, model_config_dir());
  const RankMap map = map_ranks(spec.shape, world, ranks_per_node);
  Trace t = make_step_trace(model, spec, map, only_rank);
  t.meta = {{"model", model.name},
            {"tp", spec.shape.tp},
            {"pp", spec.shape.pp},
            {"dp", spec.shape.dp},
            {"ep", spec.shape.ep},
            {"order", spec.shape.order},
            {"seq", spec.seq},
            {"micro_batch", spec.micro_batch},
            {"micro_batches", spec.micro_batches},
            {"zero", spec.zero},
            {"layers", spec.layers > 0 ? spec.layers : model.layers},
            {"layers_per_op", spec.layers_per_op},
            {"compute_us", spec.compute_us},
            {"bucket_bytes", spec.bucket_bytes}};
  if (only_rank < 0) check_trace(t);
  return t;
}

class WorkloadBench {
 public:
  WorkloadBench(Bootstrap& b, const CommonOptions& common, const WorkloadOptions& opt)
      : ctx_(b, common, "workload"), common_(common), opt_(opt) {}
  int run();

 private:
  void plan();
  json config_json() const;
  void print_header() const;
  void run_steps(ResultsRun& results, Executor& ex);
  void finish(ResultsRun& results, Executor& ex);

  RunContext ctx_;
  const CommonOptions& common_;
  const WorkloadOptions& opt_;
  Trace trace_;
  void add_window(ResultsRun& results);
  void setup_stragglers();
  OpHooks straggler_hooks(int iter);
  void finish_stragglers(ResultsRun& results);
  std::string node_of(int rank) const;
  void keep_timeline(ResultsRun& results, int iter, const StepTimes& st, const std::vector<IterFigures>& all);
  int iters() const { return common_.iters < 0 ? 10 : common_.iters; }
  int warmup() const { return common_.warmup_iters < 0 ? 1 : common_.warmup_iters; }

  WorkloadTotals totals_;            // the slowest rank's figures, summed or sampled over the iterations
  uint64_t steps_seen_[2] = {0, 0};  // step and exposed samples
  IterFigures window_;               // sums over the window being filled
  int window_first_ = 0, window_n_ = 0;
  double window_max_ = 0;
  std::array<std::vector<double>, kKinds> samples_;
  uint64_t seen_[kKinds] = {0, 0, 0, 0, 0};
  std::mt19937_64 rng_{12345};
  // Straggler attribution (on unless --no-stragglers): the first kStragglerIters timed
  // steps recorded, collected to rank 0 every kStretch steps.
  std::unique_ptr<StragglerRecording> stragglers_;
  StragglerThreshold straggler_threshold_;
};

void WorkloadBench::plan() {
  ctx_.agree([&] {
    if (!opt_.straggler_threshold.empty()) straggler_threshold_ = parse_straggler_threshold(opt_.straggler_threshold);
    if (parse_size(opt_.chunk) < 4096)
      throw UsageError(
          fmt::format("--chunk {} is below 4K: give the largest piece an op moves at once, e.g. 64M", opt_.chunk));
    if (parse_size(opt_.slice) < 4096)
      throw UsageError(fmt::format(
          "--slice-bytes {} is below 4K: give the ring's pipeline slice, e.g. 16M (64K on slow links)", opt_.slice));
    if (!opt_.trace.empty()) {
      trace_ = load_trace(opt_, ctx_.size());
      return;
    }
    import_options(opt_);  // the trace-only options refused without --trace
    const int per_node = opt_.ranks_per_node > 0 ? opt_.ranks_per_node : ranks_on_host(ctx_.hosts(), ctx_.hosts()[0]);
    trace_ = spec_trace(opt_, ctx_.size(), per_node, ctx_.size() > kWholeTraceWorld ? ctx_.rank() : -1);
  });
}

json WorkloadBench::config_json() const {
  json groups = json::object();
  for (const auto& g : trace_.groups) groups[to_string(g.kind)].push_back({{"name", g.name}, {"ranks", g.ranks}});
  return json{{"trace", opt_.trace.empty() ? json(nullptr) : json(opt_.trace)},
              {"iters", iters()},
              {"warmup_iters", warmup()},
              {"chunk_bytes", parse_size(opt_.chunk)},
              {"slice_bytes", parse_size(opt_.slice)},
              {"spec", trace_.meta},
              {"dtype", trace_.dtype},
              {"groups", groups},
              {"ops_per_step", trace_.ranks[static_cast<size_t>(ctx_.rank())].size()},
              {"line_rate_gbps", opt_.line_rate_gbps},
              {"stragglers", opt_.no_stragglers ? json(nullptr) : json(to_string(straggler_threshold_))},
              {"routing", trace_.routing.experts ? json{{"distribution", trace_.routing.distribution},
                                                        {"experts", trace_.routing.experts},
                                                        {"topk", trace_.routing.topk},
                                                        {"seed", trace_.routing.seed}}
                                                 : json(nullptr)}};
}

void WorkloadBench::print_header() const {
  const auto& m = trace_.meta;
  if (!m.empty())
    ctx_.print(fmt::format(
        "# workload {}: tp {} x pp {} x dp {} (ep {}, order {}), seq {}, micro-batch {} x {}, "
        "zero {}, {} layers ({} per op), compute {} us/layer",
        m.value("model", "?"), m.value("tp", 1), m.value("pp", 1), m.value("dp", 1), m.value("ep", 1),
        m.value("order", "tp-pp-dp"), m.value("seq", 0), m.value("micro_batch", 0), m.value("micro_batches", 0),
        m.value("zero", 0), m.value("layers", 0), m.value("layers_per_op", 1), m.value("compute_us", 0.0)));
  else
    ctx_.print(fmt::format("# workload from trace {} ({} ranks)", opt_.trace, trace_.world));
  if (m.contains("source")) ctx_.print(source_line(m));
  print_rank_map(ctx_, trace_);
  ctx_.print(fmt::format("# {:>5} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}", "iter", "step_ms", "exposed_ms",
                         "compute_ms", "tp_ms", "pp_ms", "dp_ms", "ep_ms", "edp_ms"));
}

// Keeps at most `cap` samples (reservoir sampling: a uniform sample of everything seen,
// memory flat however long the run).
void keep_sample(std::vector<double>& v, uint64_t& seen, double x, size_t cap, std::mt19937_64& rng) {
  ++seen;
  if (v.size() < cap) {
    v.push_back(x);
  } else {
    const uint64_t j = rng() % seen;
    if (j < cap) v[static_cast<size_t>(j)] = x;
  }
}

// This rank's figures of one step.
IterFigures step_figures(const StepTimes& st) {
  IterFigures f;
  f.step_us = st.step_us;
  f.compute_us = st.compute_us;
  f.async_us = st.async_us;
  double comm = 0;
  for (size_t k = 0; k < kKinds; ++k) {
    f.kind_us[k] = st.kind_us[k];
    f.kind_bytes[k] = st.kind_bytes[k];
    f.kind_bus_bytes[k] = st.kind_bus_bytes[k];
    comm += st.kind_us[k];
  }
  // What of the communication no compute covered (async ops are credited against the
  // compute after them: the executor waited only for the rest).
  f.exposed_us = std::max(0.0, comm - (st.compute_us - st.slept_us));
  return f;
}

// Bulk-synchronous: the slowest rank's figures are the iteration's.
IterFigures worst_of(const std::vector<IterFigures>& all) {
  IterFigures w;
  for (const auto& r : all) {
    w.step_us = std::max(w.step_us, r.step_us);
    w.exposed_us = std::max(w.exposed_us, r.exposed_us);
    w.compute_us = std::max(w.compute_us, r.compute_us);
    w.async_us = std::max(w.async_us, r.async_us);
    for (size_t k = 0; k < kKinds; ++k) {
      w.kind_us[k] = std::max(w.kind_us[k], r.kind_us[k]);
      w.kind_bytes[k] = std::max(w.kind_bytes[k], r.kind_bytes[k]);
      w.kind_bus_bytes[k] = std::max(w.kind_bus_bytes[k], r.kind_bus_bytes[k]);
    }
  }
  return w;
}

// One line and one results entry per window of iterations: each iteration up to
// kMaxEntries iterations, then windows of iters / kMaxEntries (means, and the window's
// slowest step), so a run of 10,000 steps keeps its file and rank 0's memory bounded.
void WorkloadBench::add_window(ResultsRun& results) {
  const double n = static_cast<double>(window_n_);
  const IterFigures& w = window_;
  ctx_.print(fmt::format("  {:>5} {:>10.3f} {:>10.3f} {:>10.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f}",
                         window_first_, w.step_us / n / 1e3, w.exposed_us / n / 1e3, w.compute_us / n / 1e3,
                         w.kind_us[0] / n / 1e3, w.kind_us[1] / n / 1e3, w.kind_us[2] / n / 1e3, w.kind_us[3] / n / 1e3,
                         w.kind_us[4] / n / 1e3));
  json entry{{"iteration", window_first_}, {"iterations", window_n_},        {"step_us", w.step_us / n},
             {"step_max_us", window_max_}, {"exposed_us", w.exposed_us / n}, {"compute_us", w.compute_us / n},
             {"async_us", w.async_us / n}, {"kind_us", json::object()}};
  const char* names[kKinds] = {"tp", "pp", "dp", "ep", "edp"};
  for (size_t k = 0; k < kKinds; ++k) entry["kind_us"][names[k]] = w.kind_us[k] / n;
  results.add(std::move(entry));
  window_ = IterFigures{};
  window_n_ = 0;
  window_max_ = 0;
}

void WorkloadBench::run_steps(ResultsRun& results, Executor& ex) {
  const auto& ops = trace_.ranks[static_cast<size_t>(ctx_.rank())];
  const OpHooks hooks;
  const int warmup = this->warmup(), iters = this->iters();
  const int per_window = std::max(1, (iters + kMaxEntries - 1) / kMaxEntries);
  for (int w = 0; w < warmup; ++w) ex.run_step(-1 - w, hooks);
  for (int it = 0; it < iters; ++it) {
    const bool recorded = stragglers_ && it < kStragglerIters;
    const StepTimes st = ex.run_step(it, recorded ? straggler_hooks(it) : hooks);
    // Collected between steps, with nothing in flight (every rank at the same point).
    if (recorded && (it % kStretch == kStretch - 1 || it == std::min(iters, kStragglerIters) - 1))
      stragglers_->collect(ctx_.progress(), ctx_.bootstrap());
    for (size_t pc = 0; pc < ops.size(); ++pc)
      if (st.op_us[pc] > 0) {
        const auto k = static_cast<size_t>(ops[pc].kind);
        keep_sample(samples_[k], seen_[k], st.op_us[pc], kSamplesPerKind, rng_);
      }
    const auto all = ctx_.bootstrap().all_gather_value(step_figures(st));
    const IterFigures worst = worst_of(all);
    if (it == iters / 2) keep_timeline(results, it, st, all);
    keep_sample(totals_.step_us, steps_seen_[0], worst.step_us, kMaxStepSamples, rng_);
    keep_sample(totals_.exposed_us, steps_seen_[1], worst.exposed_us, kMaxStepSamples, rng_);
    totals_.compute_us = std::max(totals_.compute_us, worst.compute_us);
    if (window_n_ == 0) window_first_ = it;
    window_max_ = std::max(window_max_, worst.step_us);
    window_.step_us += worst.step_us;
    window_.exposed_us += worst.exposed_us;
    window_.compute_us += worst.compute_us;
    window_.async_us += worst.async_us;
    for (size_t k = 0; k < kKinds; ++k) {
      window_.kind_us[k] += worst.kind_us[k];
      totals_.kind_us[k] += worst.kind_us[k];
      totals_.bytes[k] += worst.kind_bytes[k] / iters;
      totals_.bus_bytes[k] += worst.kind_bus_bytes[k] / iters;
    }
    ++totals_.iterations;
    if (++window_n_ == per_window || it == iters - 1) add_window(results);
    ctx_.status().step(
        fmt::format("workload: iteration {}/{}, {} elapsed", it + 1, iters, format_clock(ctx_.status().elapsed_s())));
    // Rank 0 has just written the results file and a line: every rank starts the next
    // step together, so that time is in no rank's step.
    ctx_.bootstrap().barrier();
  }
}

void WorkloadBench::setup_stragglers() {
  if (opt_.no_stragglers) return;
  size_t comm = 0, msgs = 0;
  const uint64_t chunk = parse_size(opt_.chunk), slice = parse_size(opt_.slice);
  for (const Op& op : trace_.ranks[static_cast<size_t>(ctx_.rank())]) {
    if (op.type == OpType::compute || op.type == OpType::wait) continue;
    ++comm;
    // A generous number of messages per op (a ring of n members sends 2(n-1) per rail
    // and chunk), and a ring's slices: about 2 x its bytes / slice, chunk by chunk.
    msgs += 64 + 2 * static_cast<size_t>((std::min(op.bytes, chunk) + slice - 1) / slice) *
                     static_cast<size_t>((op.bytes + chunk - 1) / std::max<uint64_t>(chunk, 1));
  }
  // Room for a stretch of steps: every op and its messages, capped at 4M (160 MB).
  const size_t ops = std::max<size_t>(comm * kStretch, 1);
  stragglers_ = std::make_unique<StragglerRecording>(
      ops, std::min<size_t>(std::max<size_t>(msgs, 1) * kStretch, size_t{4} << 20));
  ctx_.wrap_transport([this](std::unique_ptr<Transport> t) { return stragglers_->wrap(std::move(t)); });
}

// Each op that communicates: it begins when this rank is ready (its arrival) and ends
// when it returned; the key is (step, op index, kind and type), the same on every rank
// of the op's group.
OpHooks WorkloadBench::straggler_hooks(int iter) {
  OpRecorder* rec = &stragglers_->recorder();
  OpHooks h;
  h.begin = [rec, iter](size_t pc, const Op& op) {
    // Pipeline send/recv: a stage waits for its neighbour's compute by design (the
    // bubble), so arrivals there are not blamed; its links and stalls still are.
    const bool p2p = op.type == OpType::send || op.type == OpType::recv || op.type == OpType::sendrecv;
    rec->begin_op(make_op_key(static_cast<uint32_t>(iter), static_cast<uint32_t>(pc),
                              fmt::format("{}.{}", to_string(op.kind), to_string(op.type)),
                              p2p ? kOpArrivalsScheduled : 0));
  };
  h.end = [rec](size_t, const Op&) { rec->end_op(); };
  return h;
}

// Rank 0 analyses the recorded steps, prints the blame table and writes "stragglers";
// should the analysis fail, the figures already written stay and the section says why.
void WorkloadBench::finish_stragglers(ResultsRun& results) {
  if (!stragglers_ || !ctx_.is_root()) return;
  std::vector<std::string> nodes;
  for (int r = 0; r < ctx_.size(); ++r) nodes.push_back(node_of(r));
  write_stragglers(ctx_, results, *stragglers_, nodes, straggler_threshold_);
}

// A rank's node as the tables name it: its host, or node<i> for --ranks-per-node on one host.
std::string WorkloadBench::node_of(int rank) const {
  const int per_node = opt_.ranks_per_node;
  return per_node > 0 && ctx_.num_hosts() == 1 ? fmt::format("node{}", rank / per_node)
                                               : ctx_.hosts()[static_cast<size_t>(rank)];
}

// The middle timed step's timeline, from the rank whose step was slowest (it set the
// step's pace): its spans gathered to rank 0 and written as the results' "step_timeline".
void WorkloadBench::keep_timeline(ResultsRun& results, int iter, const StepTimes& st,
                                  const std::vector<IterFigures>& all) {
  const auto slowest = static_cast<int>(
      std::max_element(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.step_us < b.step_us; }) -
      all.begin());
  // The slowest rank describes its own ops: in a large job only it holds their list.
  std::string mine;
  if (slowest == ctx_.rank())
    mine = timeline_json(trace_, slowest, node_of(slowest), iter, all[static_cast<size_t>(slowest)].step_us,
                         timeline_spans(trace_, slowest, st.op_start_us, st.op_end_us))
               .dump();
  const auto gathered = ctx_.bootstrap().gather_strings(mine);
  if (!ctx_.is_root()) return;
  results.set("step_timeline", json::parse(gathered[static_cast<size_t>(slowest)]));
}

void WorkloadBench::finish(ResultsRun& results, Executor& ex) {
  WorkloadTotals& totals = totals_;
  for (size_t k = 0; k < kKinds; ++k) {
    // Only rank 0 prints and records the per-kind figures; the exit code is `wrong`'s.
    const auto gathered = ctx_.bootstrap().gather_vectors(samples_[k]);
    for (const auto& v : gathered) totals.op_us[k].insert(totals.op_us[k].end(), v.begin(), v.end());
  }
  const auto link =
      ctx_.bootstrap().all_gather_value(std::array<double, 2>{ex.step_link_bytes(false), ex.step_link_bytes(true)});
  for (const auto& l : link) {
    totals.sync_link_bytes = std::max(totals.sync_link_bytes, l[0]);
    totals.async_link_bytes = std::max(totals.async_link_bytes, l[1]);
  }
  totals.micro_batches = trace_.meta.value("micro_batches", 1);
  totals.rails = ctx_.transport().num_rails();
  totals.line_rate_gbps = opt_.line_rate_gbps;
  totals.imbalance = ex.expert_imbalance().mean;
  totals.worst_imbalance = ex.expert_imbalance().worst;
  totals.rank_imbalance = ex.expert_imbalance().rank_mean;
  const auto wrong = ctx_.bootstrap().all_gather_value(ex.wrong());
  for (uint64_t w : wrong) totals.wrong += w;
  json summary = print_workload_summary(ctx_, totals, common_.check);
  results.add_counters(summary);
  results.set("summary", std::move(summary));
}

int WorkloadBench::run() {
  plan();
  setup_stragglers();
  ctx_.open_transport();
  ResultsRun results(ctx_, config_json());
  ExecOptions eo;
  eo.rails = ctx_.transport().num_rails();
  eo.type = parse_datatype(trace_.dtype);
  eo.check = common_.check;
  eo.chunk_bytes = parse_size(opt_.chunk);
  eo.slice_bytes = parse_size(opt_.slice);
  eo.memory = ctx_.memory_kind();
  uint64_t wrong = 0;
  std::unique_ptr<Executor> ex;
  results.measure([&] {
    ex = std::make_unique<Executor>(ctx_.progress(), trace_, ctx_.rank(), eo);
    print_header();
    results.counters_begin();
    run_steps(results, *ex);
    ctx_.status().clear();
    finish(results, *ex);
    finish_stragglers(results);
    wrong = results.doc().value("summary", json::object()).value("wrong", uint64_t{0});
  });
  ctx_.status().clear();
  results.finish();
  ex.reset();
  ctx_.close_transport();
  return wrong ? 1 : 0;
}

// --emit-trace: the spec's trace (world = the product of the shape; no node check
// without a job), or --trace's converted, written before any rank is launched in
// --emit-trace-format.
std::optional<int> emit_trace(const WorkloadOptions& o) {
  const auto format = formats::parse_format(o.emit_trace_format, "--emit-trace-format");
  import_options(o);  // the trace-only options refused without --trace
  const auto& s = o.spec.shape;
  const Trace t = o.trace.empty() ? spec_trace(o, s.tp * s.pp * s.dp, o.ranks_per_node) : load_trace(o, 0);
  const auto files = formats::write_trace_files(t, o.emit_trace, format);
  fmt::print("# trace: {} ({} {} file{}, {} ranks, {} ops on rank 0)\n", o.emit_trace, files.size(),
             formats::to_string(format), files.size() == 1 ? "" : "s", t.world, t.ranks[0].size());
  if (t.meta.contains("source")) fmt::print("{}\n", source_line(t.meta));
  return 0;
}

void add_workload_options(CLI::App& sub, WorkloadOptions& o) {
  auto& s = o.spec;
  sub.add_option("--model", o.model, "Preset from configs/models with training geometry")->capture_default_str();
  sub.add_option("--tp", s.shape.tp, "Tensor-parallel size (inside a node)")->capture_default_str();
  sub.add_option("--pp", s.shape.pp, "Pipeline-parallel stages")->capture_default_str();
  sub.add_option("--dp", s.shape.dp, "Data-parallel replicas (tp x pp x dp = ranks)")->capture_default_str();
  sub.add_option("--ep", s.shape.ep, "Expert-parallel size, carved out of dp (MoE models)")->capture_default_str();
  sub.add_option("--order", s.shape.order, "Rank order of the dimensions, innermost first")->capture_default_str();
  sub.add_option("--experts", s.routing.experts, "Routed experts per MoE layer (default: the model's)");
  sub.add_option("--topk", s.routing.topk, "Experts per token (default: the model's)");
  sub.add_option("--routing", o.routing, "Token routing: uniform, zipf:S or file:PATH")->capture_default_str();
  sub.add_option("--routing-seed", o.routing_seed, "Seed of the routing draws")->capture_default_str();
  sub.add_option("--seq", s.seq, "Tokens per sample")->capture_default_str();
  sub.add_option("--micro-batch", s.micro_batch, "Samples per micro-batch")->capture_default_str();
  sub.add_option("--micro-batches", s.micro_batches, "Micro-batches per step")->capture_default_str();
  sub.add_option("--dtype", s.dtype, "Activations and gradients: bf16, f16, f32")->capture_default_str();
  sub.add_option("--zero", s.zero, "0: DDP all-reduce; 1: reduce-scatter + all-gather; 3: also per-layer gathers")
      ->capture_default_str();
  sub.add_option("--layers", s.layers, "Layers to run (default: the model's; fewer for a short run)");
  sub.add_option("--layers-per-op", s.layers_per_op, "Layers whose traffic goes as one op")->capture_default_str();
  sub.add_option("--compute-us", s.compute_us, "Stand-in compute per layer forward, us (backward 2x)")
      ->capture_default_str();
  sub.add_option("--bucket", o.bucket, "DP gradient bucket")->capture_default_str();
  sub.add_option("--chunk", o.chunk, "Largest piece one op moves at a time (buffer size)")->capture_default_str();
  sub.add_option("--slice-bytes", o.slice,
                 "Pipeline slice of the ring collectives: blocks go in slices round-robin over the rails, each sent "
                 "on as soon as it is in")
      ->capture_default_str();
  sub.add_option("--trace", o.trace,
                 "Replay a trace instead of the spec: railbench's JSON, or per-rank Chakra ET / PARAM / PyTorch ET "
                 "files as 'DIR/name.{rank}.et'");
  sub.add_option("--emit-trace", o.emit_trace,
                 "Write the spec's trace (or --trace's, converted) to FILE and exit (no ranks needed)");
  sub.add_option("--emit-trace-format", o.emit_trace_format,
                 "--emit-trace's format: railbench, chakra, param or pytorch (per rank: {rank} in FILE)")
      ->capture_default_str();
  sub.add_option("--compute-scale", o.compute_scale, "A trace's compute times multiplied by X")->capture_default_str();
  sub.add_flag("--no-compute", o.no_compute, "Drop a trace's compute: communication back to back");
  sub.add_option("--fold", o.fold, "Replay a trace of K x N ranks on N: job rank j plays trace rank j*K")
      ->capture_default_str();
  sub.add_option("--line-rate", o.line_rate_gbps, "Gb/s per rail, for the ideal step and the what-if")
      ->capture_default_str();
  sub.add_option("--ranks-per-node", o.ranks_per_node, "Ranks per node (default: ranks sharing a host name)");
  sub.add_flag("--no-stragglers", o.no_stragglers, "Do not record the steps for straggler attribution");
  sub.add_option("--straggler-threshold", o.straggler_threshold,
                 "TIME%,ITERS% (10%,25%): the verdict names a rank or link costing more than TIME% of a step in "
                 "more than ITERS% of the steps");
}

const bool cmd_workload_registered = register_subcommand(
    Subcommand{"workload", "A training step's traffic (TP, PP, DP, EP) on the fabric: step time, exposed communication",
               57, [](CLI::App& sub, CommonOptions& common) {
                 auto opt = std::make_shared<WorkloadOptions>();
                 add_transport_options(sub, common);
                 add_iteration_options(sub, common);
                 add_check_option(sub, common);
                 add_output_options(sub, common);
                 add_link_options(sub, common);
                 add_memory_options(sub, common);
                 add_workload_options(sub, *opt);
                 SubcommandRun run;
                 run.before_bootstrap = [opt]() -> std::optional<int> {
                   if (opt->emit_trace.empty()) return std::nullopt;
                   return emit_trace(*opt);
                 };
                 run.run = [&common, opt](Bootstrap& b) { return WorkloadBench(b, common, *opt).run(); };
                 return run;
               }});

}  // namespace
}  // namespace railbench
