// railbench info: what this build contains and what this host offers.
#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/cli/cli.h"
#include "bench/runner/memory_setup.h"
#include "lib/core/errors.h"
#include "lib/observe/counters.h"
#include "lib/runtime/launch.h"
#include "lib/transport/gpu.h"
#include "lib/transport/pci_topology.h"
#include "lib/transport/registry.h"

namespace railbench {

namespace {

// CUDA in this build (and what each transport adds, e.g. the NCCL version), the devices
// this host shows, and the GPU -> NIC table.
void print_gpus() {
  if (!gpu::built_in()) {
    fmt::print("memory kinds: host (built without CUDA: no --mem cuda, no -t nccl)\n");
    return;
  }
  const auto ver = [](int v) { return v ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : std::string("none"); };
  fmt::print("memory kinds: host, cuda, cuda-host (CUDA runtime {}, driver {})\n", ver(gpu::runtime_version()),
             ver(gpu::driver_version()));
  for (const TransportEntry* t : all_transports())
    if (t->gpu_info) t->gpu_info();
  const gpu::Probe p = gpu::probe();
  if (p.count == 0) {
    fmt::print("CUDA devices: 0 (cudaGetDeviceCount returned {})\n", p.error);
  } else {
    fmt::print("CUDA devices: {}\n", p.count);
    for (int i = 0; i < p.count; ++i) {
      const auto d = gpu::device_info(i);
      fmt::print("  GPU {}: {} at {}\n", i, d.name, d.pci_bus_id);
    }
  }
  const PciTopology topo = read_pci_topology();
  if (topo.gpus.empty()) return;
  fmt::print("GPU -> nearest NIC (PCI topology, sysfs):\n");
  for (const auto& line : describe_affinity(topo)) fmt::print("  {}\n", line);
}

// The fabric counters each possible rail exposes (what sendrecv, the collectives,
// kvcache and validate record around every measurement): verbs ports as "dev:port",
// then interfaces, each with its sources and how many counters of each kind.
void print_counters() {
  namespace fs = std::filesystem;
  std::vector<std::string> rails;
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator("/sys/class/infiniband", ec))
    for (const auto& port : fs::directory_iterator(dev.path() / "ports", ec))
      rails.push_back(dev.path().filename().string() + ":" + port.path().filename().string());
  std::vector<std::string> netdevs;
  for (const auto& dev : fs::directory_iterator("/sys/class/net", ec))
    netdevs.push_back(dev.path().filename().string());
  std::sort(rails.begin(), rails.end());
  std::sort(netdevs.begin(), netdevs.end());
  rails.insert(rails.end(), netdevs.begin(), netdevs.end());
  fmt::print("fabric counters per rail (read around each measurement; --no-counters: off):\n");
  if (rails.empty()) fmt::print("  none: no RDMA device and no network interface in sysfs\n");
  for (const auto& rail : rails) {
    const CounterReader reader(find_counter_sources(rail));
    const CounterSnapshot snap = reader.snapshot();
    std::map<CounterKind, int> kinds;
    for (const auto& [name, v] : snap) kinds[counter_kind(std::string_view(name).substr(name.find('/') + 1))]++;
    std::vector<std::string> counts;
    for (CounterKind k : kCounterKinds)
      if (kinds.count(k)) counts.push_back(fmt::format("{} {}", kinds[k], to_string(k)));
    fmt::print("  {:<12} {} counters{}{}: {}\n", rail, snap.size(), counts.empty() ? "" : " (",
               counts.empty() ? "" : fmt::format("{})", fmt::join(counts, ", ")),
               fmt::join(reader.sources().describe(), "; "));
  }
}

}  // namespace

namespace {

// Which launcher this process would join and why (lib/runtime/launch.h): the first thing to
// check when `srun -n 4` turns out to be four single-rank runs.
void print_launch() {
  LaunchInfo l;
  try {
    l = detect_launch(process_environment());
  } catch (const Error& e) {
    fmt::print("launcher: cannot join: {}\n", e.what());
    return;
  }
  if (l.launcher == Launcher::none) {
    fmt::print("launcher: none (no RAILBENCH_*, MPI, Slurm step or torchrun variables): a single rank\n");
    return;
  }
  fmt::print("launcher: {}\n", l.describe());
  fmt::print("  rank {} of {}{}{}\n", l.rank, l.size > 0 ? fmt::format("{}", l.size) : "? (MPI_Init says)",
             l.local_rank >= 0 ? fmt::format(", local rank {}", l.local_rank) : "",
             l.node_name.empty() ? "" : fmt::format(", node {}", l.node_name));
  if (l.uses_tcp()) {
    fmt::print("  rendezvous: tcp {} ({}); job token {}; rank 0 listens on {}\n", l.rendezvous.root,
               l.rendezvous_origin, l.rendezvous.job_token.empty() ? "none" : "set",
               l.rendezvous.bind_any                ? std::string("every address (RAILBENCH_BIND=any)")
               : !l.rendezvous.bind_address.empty() ? fmt::format("{} (RAILBENCH_BIND)", l.rendezvous.bind_address)
                                                    : std::string("the root's address"));
  }
}

int run_info() {
  fmt::print("railbench {}\n", RAILBENCH_VERSION);
  fmt::print("transports built in: {}\n", fmt::join(built_transports(), ", "));
  if (mpi_bootstrap_built())
    fmt::print("bootstraps: mpi, tcp (RAILBENCH_*, Slurm without MPI, torchrun-style), single\n");
  else
    fmt::print("bootstraps: tcp (RAILBENCH_*, Slurm without MPI, torchrun-style), single (built without MPI)\n");
  print_launch();
  print_gpus();
  // Each transport's section; one this build lacks may still say what the host has.
  for (const TransportEntry* t : all_transports())
    if (t->info) t->info();
  print_counters();
  return 0;
}

const bool cmd_info_registered =
    register_subcommand(Subcommand{"info", "What this build contains and which providers and devices this host has", 70,
                                   [](CLI::App&, CommonOptions&) {
                                     return SubcommandRun{[] { return std::optional<int>(run_info()); }, {}};
                                   }});

}  // namespace
}  // namespace railbench
