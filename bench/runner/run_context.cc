#include "bench/runner/run_context.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bench/kinds/result_kind.h"
#include "bench/runner/paths_run.h"
#include "bench/runner/results_csv.h"
#include "lib/results/results.h"
#include "lib/runtime/signals.h"

namespace railbench {

using nlohmann::json;

namespace {

std::string local_hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// This kernel's boot id, "" when it cannot be read.
std::string boot_id() {
  std::string id;
  if (std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof(buf), f)) id = buf;
    std::fclose(f);
  }
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

// The CPUs this process may run on (its affinity: taskset, a launcher's binding, a
// cgroup's cpuset), as ranges: "0-3,8". "" when it cannot be read.
std::string affinity_ranges() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return "";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int last = c;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    out +=
        fmt::format("{}{}", out.empty() ? "" : ",", c == last ? fmt::format("{}", c) : fmt::format("{}-{}", c, last));
    c = last;
  }
  return out;
}

// The CPUs of affinity_ranges()'s text, added to `cpus`.
void add_ranges(const std::string& ranges, std::set<long>& cpus) {
  for (size_t at = 0; at < ranges.size();) {
    const size_t comma = std::min(ranges.find(',', at), ranges.size());
    const std::string part = ranges.substr(at, comma - at);
    const size_t dash = part.find('-');
    const long lo = std::strtol(part.c_str(), nullptr, 10);
    const long hi = dash == std::string::npos ? lo : std::strtol(part.c_str() + dash + 1, nullptr, 10);
    for (long c = lo; c <= hi && c - lo < CPU_SETSIZE; ++c) cpus.insert(c);
    at = comma + 1;
  }
}

// "pid:[4026531836]": the same text in two processes of one kernel means one pid
// namespace, where a pid names the same process (empty when it cannot be read).
std::string pid_namespace() {
  char buf[64] = {};
  const ssize_t n = ::readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

RunContext::RunContext(Bootstrap& bootstrap, const CommonOptions& options, std::string command)
    : options_(options), command_(std::move(command)), bootstrap_(bootstrap) {
  rank_ = bootstrap_.rank();
  size_ = bootstrap_.size();
  // The launcher's node name where it gives one (Slurm's node names are the ones its
  // commands, and the drain list, use).
  const std::string& node = bootstrap_.place().node_name;
  // The boot id and the CPUs this rank may use ride along, for has_own_core(), and the
  // pid with its namespace, for the signal handlers: no gather of their own at start-up.
  const std::string kernel = boot_id(), pids = pid_namespace();
  std::string rank0_pids;
  for (const std::string& s :
       bootstrap_.all_gather_strings(fmt::format("{}\n{}\n{}\n{}\n{}", node.empty() ? local_hostname() : node, kernel,
                                                 pids, static_cast<long>(::getpid()), affinity_ranges()))) {
    std::vector<std::string> parts;
    for (size_t at = 0; at <= s.size();) {
      const size_t nl = std::min(s.find('\n', at), s.size());
      parts.push_back(s.substr(at, nl - at));
      at = nl + 1;
    }
    parts.resize(5);
    hosts_.push_back(parts[0]);
    boot_ids_.push_back(parts[1]);
    if (hosts_.size() == 1) rank0_pids = parts[2];
    pids_.push_back(std::strtol(parts[3].c_str(), nullptr, 10));
    affinities_.push_back(parts[4]);
  }
  // Ranks beside rank 0 (its kernel and pid namespace) wait for it to exit on their
  // launcher's signal, so that its verdict is written before the launcher's SIGKILL.
  if (!kernel.empty() && !pids.empty() && boot_ids_[0] == kernel && rank0_pids == pids)
    set_signal_leader(static_cast<pid_t>(pids_[0]));
  launcher_local_ranks_ = bootstrap_.all_gather_value<int>(bootstrap_.place().local_rank);
  find_own_cores();
  status_ =
      std::make_unique<StatusLine>(StatusLine::mode_for(options_.quiet, rank_ == 0, ::isatty(STDERR_FILENO) != 0));
  set_signal_rank(rank_);
  std::vector<std::string> names;
  for (int r = 0; r < size_; ++r) names.push_back(peer_name(r));
  liveness_ = std::make_unique<Liveness>(bootstrap_, std::move(names));
  bootstrap_.set_liveness_probe(liveness_->hook());
  // A --json or --csv that cannot be written is bad input: refuse it before anything runs.
  agree([&] {
    if (!is_root()) return;
    check_results_path(options_.json_path, "--json");
    check_results_path(options_.csv_path, "--csv", "results.csv");
    check_results_path(options_.timeline_path, "--timeline", "timeline.bin");
    if (!options_.timeline_path.empty() &&
        (options_.timeline_path == options_.json_path || options_.timeline_path == options_.csv_path))
      throw UsageError(
          fmt::format("--timeline names '{}', which another output also names: give the timeline "
                      "its own file, e.g. --timeline {}.timeline",
                      options_.timeline_path, options_.timeline_path));
    if (!options_.csv_path.empty() && options_.csv_path == options_.json_path)
      throw UsageError(fmt::format("--csv and --json both name '{}': give the CSV its own file, e.g. --csv {}.csv",
                                   options_.csv_path, options_.csv_path));
  });
}

RunContext::~RunContext() {
  close_transport();
  // The bootstrap outlives us (main owns it); its probe must not.
  bootstrap_.set_liveness_probe({});
}

void RunContext::close_transport() noexcept {
  // Progress refers to the transport: release it first.
  progress_.reset();
  transport_.reset();
  timeline_.reset();  // after the transport, whose wrapper writes into its recorder
}

// Ranks that share a kernel share its CPUs, whatever their host names say (the netns
// SU's "nodes" are namespaces of one machine): the kernel's boot id tells them apart.
// What they share is the CPUs they may run on, not the machine's: 2 ranks under
// `taskset -c 0` on a 64-core host share one core, and 8 ranks bound to a core each
// have one each. Where a rank's affinity cannot be read, the online CPUs stand in.
// Once, at start-up, for every rank: one pass over the ranks by machine.
void RunContext::find_own_cores() {
  struct Machine {
    int ranks = 0;
    std::set<long> cpus;
    bool known = true;
  };
  auto machine = [&](int r) -> const std::string& { return boot_ids_[r].empty() ? hosts_[r] : boot_ids_[r]; };
  std::map<std::string, Machine> machines;
  for (int r = 0; r < size_; ++r) {
    Machine& m = machines[machine(r)];
    m.ranks += 1;
    m.known = m.known && !affinities_[r].empty();
    add_ranges(affinities_[r], m.cpus);
  }
  own_core_.clear();
  for (int r = 0; r < size_; ++r) {
    const Machine& m = machines.at(machine(r));
    const long usable = m.known ? static_cast<long>(m.cpus.size()) : sysconf(_SC_NPROCESSORS_ONLN);
    own_core_.push_back(usable > 0 && m.ranks <= usable);
  }
}

bool RunContext::has_own_core() const {
  return own_core_[rank_];
}

bool RunContext::all_on_one_host() const {
  return num_hosts() == 1;
}

int RunContext::num_hosts() const {
  return static_cast<int>(std::set(hosts_.begin(), hosts_.end()).size());
}

std::string RunContext::peer_name(int rank) const {
  if (rank < 0 || rank >= size_) return fmt::format("rank {}", rank);
  return fmt::format("rank {} ({})", rank, hosts_[rank]);
}

void RunContext::agree(const std::function<void()>& step) {
  std::string failure;
  ErrorCode code = ErrorCode::usage;
  try {
    step();
  } catch (const Error& e) {
    failure = e.what();
    code = e.code();
  } catch (const std::exception& e) {
    failure = e.what();
    code = ErrorCode::transport;
  }
  const auto codes = bootstrap_.all_gather_value<int>(failure.empty() ? -1 : static_cast<int>(code));
  if (std::all_of(codes.begin(), codes.end(), [](int c) { return c < 0; })) return;
  const auto texts = bootstrap_.all_gather_strings(failure);
  std::vector<int> failed;
  for (int r = 0; r < size_; ++r)
    if (codes[r] >= 0) failed.push_back(r);
  const bool same_everywhere = static_cast<int>(failed.size()) == size_ &&
                               std::all_of(texts.begin(), texts.end(), [&](const auto& t) { return t == texts[0]; });
  std::string message;
  if (same_everywhere) {
    message = texts[0];
  } else {
    for (int r : failed) message += fmt::format("{}{}: {}", message.empty() ? "" : "; ", peer_name(r), texts[r]);
  }
  throw AgreedError(static_cast<ErrorCode>(codes[failed.front()]), message);
}

int RunContext::local_rank() const {
  if (bootstrap_.place().local_rank >= 0) return bootstrap_.place().local_rank;
  int local = 0;
  for (int r = 0; r < rank_; ++r)
    if (hosts_[static_cast<size_t>(r)] == hosts_[static_cast<size_t>(rank_)]) ++local;
  return local;
}

void RunContext::open_transport() {
  PciTopology topo;
  agree([&] {
    spec_ = parse_transport_spec(options_.transport, options_.rails);
    spec_.options = options_.transport_options;
    const TransportEntry& entry = find_transport(spec_.name, options_.transport);
    // GPU checks come first: without a device, that is the one line to print.
    const bool gpu_default = entry.default_memory != MemoryKind::host;
    if (gpu_default || (!options_.mem.empty() && options_.mem != "host")) topo = read_pci_topology();
    placement_ = place_memory(options_.mem, options_.gpu_map, entry.default_memory, local_rank(), topo,
                              entry.exclusive_gpu ? "-t " + entry.name : std::string());
    spec_.gpu = placement_.gpu;
    spec_.mem = placement_.kind;
    // Rail-optimized nodes: the NIC nearest the GPU is this slot's rail unless --rails says.
    if (entry.rail_near_gpu && spec_.rail_names.empty() && spec_.num_rails == 1 && !placement_.nic.empty())
      spec_.rail_names = {placement_.nic};
    transport_ = make_transport(spec_, TransportJob{rank_, size_, all_on_one_host()});
  });
  if (placement_.gpu >= 0) {
    print(
        fmt::format("# GPU -> nearest NIC on {} (PCI topology from sysfs; the default rail of each GPU):", hosts_[0]));
    for (const auto& line : describe_affinity(topo)) print("#   " + line);
    if (placement_.shared_gpu)
      print(
          fmt::format("# --gpu-map {}: local ranks share a GPU (its memory bandwidth and copy engines too): a test "
                      "of the GPU paths, not a per-GPU figure",
                      options_.gpu_map));
  }
  // Only rank 0 writes the results header, the one reader of rank_memory_ and rank_rails_.
  for (const auto& s : bootstrap_.gather_strings(placement_.to_json().dump())) rank_memory_.push_back(json::parse(s));
  transport_->connect_all(bootstrap_);
  // From here on every completion lands in the timeline: connecting is not traffic.
  if (!options_.timeline_path.empty())
    timeline_ = std::make_unique<RunTimeline>(options_.timeline_path, size_, transport_, local_rank() == 0);
  for (auto& wrap : wrappers_) transport_ = wrap(std::move(transport_));
  // A provider may have installed its own handlers while opening (some exit 1 on SIGTERM
  // without a word): ours take over again, so a signal still leaves a verdict.
  install_signal_handlers();
  std::vector<std::string> names;
  for (int r = 0; r < size_; ++r) names.push_back(peer_name(r));
  progress_ = std::make_unique<Progress>(*transport_, options_.timeout_s, std::move(names));
  progress_->set_liveness_probe(liveness_->hook());
  progress_->set_own_core(has_own_core());

  counters_ = std::make_unique<FabricCounters>(*transport_, !options_.no_counters);
  json rails = json::array();
  for (int i = 0; i < transport_->num_rails(); ++i) {
    RailInfo info = transport_->rail_info(i);
    rails.push_back(json{{"index", i},
                         {"name", info.name},
                         {"fabric", info.fabric},
                         {"address", info.address},
                         {"link_gbps", info.link_gbps},
                         {"mtu", info.mtu}});
    if (counters_->enabled()) rails.back()["counters"] = counters_->sources_json(i);
  }
  for (const auto& s : bootstrap_.gather_strings(rails.dump())) rank_rails_.push_back(json::parse(s));
  if (options_.paths > 0) trace_paths();
}

void RunContext::trace_paths() {
  agree([&] { check_paths_supported(*transport_); });
  const std::vector<NetworkFlow> flows = paths_flows(*transport_, options_.paths);
  const double rate = paths_probe_rate(options_.probe_rate, transport_->world_size());
  print(paths_plan_line(flows.size(), rate));
  std::vector<std::string> names;
  for (int i = 0; i < transport_->num_rails(); ++i) names.push_back(transport_->rail_info(i).name);
  PathsResult r = trace_transport_paths(*transport_, bootstrap_, flows, rate, names);
  for (const auto& line : r.lines) print(line);
  paths_ = std::move(r.flows);
}

json RunContext::results_header(json config) const {
  json ranks = json::array();
  for (int r = 0; r < size_; ++r) {
    // The pid tells a dead "running" file from a live run: is it still there on its host?
    // The CPUs it could run on, and whether it had one of them to itself (it spun
    // waiting for its peers only then): a figure from ranks that shared cores says so.
    json entry{{"rank", r},
               {"host", hosts_[r]},
               {"pid", pids_[r]},
               {"cpus", affinities_[r]},
               {"own_core", bool{own_core_[r]}}};
    if (static_cast<size_t>(r) < rank_rails_.size()) entry["rails"] = rank_rails_[r];
    if (static_cast<size_t>(r) < rank_memory_.size()) entry.update(rank_memory_[static_cast<size_t>(r)]);
    ranks.push_back(std::move(entry));
  }
  // Not opened (validate before its traffic, or --fabric-only): what was asked for, and
  // that it never opened. An object either way: readers require one.
  const std::string& form = options_.transport;  // "ofi:tcp": the -t form asked for
  const auto colon = form.find(':');
  json transport{{"name", form.substr(0, colon)},
                 {"provider", colon == std::string::npos ? "" : form.substr(colon + 1)},
                 {"opened", false}};
  if (transport_) {
    const auto& c = transport_->caps();
    transport = json{{"name", transport_->name()},
                     {"provider", transport_->provider()},
                     {"rails", transport_->num_rails()},
                     {"caps",
                      {{"send_recv", c.send_recv},
                       {"write", c.write},
                       {"read", c.read},
                       {"write_with_imm", c.write_with_imm},
                       {"native_collectives", c.native_collectives},
                       {"device_memory", c.device_memory},
                       {"max_msg_size", c.max_msg_size}}}};
    transport.update(transport_details(spec_.name));
  }
  config["transport"] = options_.transport;
  config["rails"] = options_.rails;
  config["timeout_s"] = options_.timeout_s;
  config["check"] = options_.check;
  config["mem"] = to_string(placement_.kind);
  config["gpu_map"] = options_.gpu_map;
  json header{{"command", command_},
              {"argv", options_.argv},
              {"config", std::move(config)},
              {"world",
               {{"size", size_},
                {"hosts", num_hosts()},
                {"bootstrap", bootstrap_.kind()},
                {"bootstrap_layout", bootstrap_.layout()},
                {"launcher", bootstrap_.place().launcher},
                {"ranks", ranks}}},
              {"transport", std::move(transport)}};
  if (!paths_.is_null()) header["paths"] = paths_;
  return header;
}

json RunContext::gather_channels() {
  json mine = json::array();
  for (const auto& c : transport_->channel_counters()) {
    mine.push_back(json{{"rank", rank_},
                        {"peer", c.peer},
                        {"rail", c.rail},
                        {"channel", c.channel},
                        {"posted", c.posted},
                        {"completions", c.completions},
                        {"bytes", c.bytes}});
  }
  json all = json::array();
  for (const auto& s : bootstrap_.gather_strings(mine.dump()))
    for (auto& entry : json::parse(s)) all.push_back(std::move(entry));
  return all;
}

void RunContext::finish_timeline(ResultsFile& results) {
  if (!timeline_) return;
  for (const auto& line : timeline_->finish(bootstrap_, results)) print(line);
}

void RunContext::counters_begin() {
  if (counters_) counters_->begin();
}

json RunContext::counters_end() {
  return counters_ ? counters_->end(bootstrap_, hosts_) : json(nullptr);
}

json RunContext::counters_end_local() {
  return counters_ ? counters_->end_local() : json(nullptr);
}

void RunContext::print(const std::string& line) const {
  if (!is_root()) return;
  status_->hide();
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  status_->show();
}

void RunContext::sweep_step(size_t index, size_t count, uint64_t bytes) const {
  status_->step(sweep_step_text(command_, index, count, bytes, status_->elapsed_s()));
}

void RunContext::add_csv(ResultsFile& results) const {
  if (!is_root()) return;
  results.add_csv(options_.csv_path, results_csv_text);
  results.add_sidecar(options_.prometheus_path, "--prometheus", "railbench.prom", [](const nlohmann::json& doc) {
    return results_metrics_text(doc, MetricsOptions{}, MetricsFormat::prometheus, "--prometheus");
  });
}

}  // namespace railbench
