// railbench info: what this build contains and what this host offers.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/cli/cli.h"
#include "bench/runner/memory_setup.h"
#include "bench/runner/transport_factory.h"
#include "lib/core/errors.h"
#include "lib/observe/counters.h"
#include "lib/runtime/launch.h"
#include "lib/transport/gpu.h"
#include "lib/transport/pci_topology.h"

#ifdef RAILBENCH_HAVE_OFI
#include "transports/ofi/ofi_transport.h"
#endif
#ifdef RAILBENCH_HAVE_VERBS
#include "transports/verbs/verbs_transport.h"
#endif

namespace railbench {

namespace {

std::string read_first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

// Verbs devices from sysfs, so `info` works in builds without the verbs transport and
// on hosts whose kernel has no RDMA (it then says so).
void print_rdma_devices() {
  const std::filesystem::path root = "/sys/class/infiniband";
  std::error_code ec;
  if (!std::filesystem::exists(root, ec)) {
    fmt::print(
        "verbs devices: none (no /sys/class/infiniband: this kernel has no RDMA, or no RDMA device; "
        "see scripts/rxe-vm for soft-RoCE)\n");
    return;
  }
  bool any = false;
  for (const auto& dev : std::filesystem::directory_iterator(root, ec)) {
    for (const auto& port : std::filesystem::directory_iterator(dev.path() / "ports", ec)) {
      any = true;
      fmt::print("verbs device {} port {}: state {}, rate {}, link layer {}\n", dev.path().filename().string(),
                 port.path().filename().string(), read_first_line(port.path() / "state"),
                 read_first_line(port.path() / "rate"), read_first_line(port.path() / "link_layer"));
    }
  }
  if (!any) fmt::print("verbs devices: none\n");
}

#ifdef RAILBENCH_HAVE_VERBS
// What -t verbs would see: every port with its GID table; "(default)" marks the GID
// the transport picks without --gid-index.
void print_verbs_ports() {
  const auto ports = verbs::list_devices();
  if (ports.empty()) {
    fmt::print(
        "verbs (-t verbs): no RDMA devices (ibv_get_device_list found none): load a driver, or use "
        "scripts/rxe-vm/run.sh for soft-RoCE\n");
    print_rdma_devices();  // says whether the kernel has RDMA at all
    return;
  }
  fmt::print("verbs (-t verbs): devices and ports:\n");
  for (const auto& p : ports) {
    fmt::print("  {}:{}  state {}, link layer {}, active MTU {}, {} Gb/s, GID table {} entries\n", p.device, p.port,
               p.state, p.link_layer, p.active_mtu, p.link_gbps, p.gid_table_len);
    for (const auto& g : p.gids) {
      fmt::print("    gid[{}] {:<40} {}{}\n", g.index, g.gid, g.type, g.index == p.default_gid ? " (default)" : "");
    }
  }
}
#endif

// CUDA and NCCL in this build, the devices this host shows, and the GPU -> NIC table.
void print_gpus() {
  if (!gpu::built_in()) {
    fmt::print("memory kinds: host (built without CUDA: no --mem cuda, no -t nccl)\n");
    return;
  }
  const auto ver = [](int v) { return v ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : std::string("none"); };
  fmt::print("memory kinds: host, cuda, cuda-host (CUDA runtime {}, driver {})\n", ver(gpu::runtime_version()),
             ver(gpu::driver_version()));
  const auto details = transport_details("nccl");
  if (details.contains("nccl_version"))
    fmt::print("nccl: {} (-t nccl)\n", details.at("nccl_version").get<std::string>());
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
#ifdef RAILBENCH_HAVE_MPI
  fmt::print("bootstraps: mpi, tcp (RAILBENCH_*, Slurm without MPI, torchrun-style), single\n");
#else
  fmt::print("bootstraps: tcp (RAILBENCH_*, Slurm without MPI, torchrun-style), single (built without MPI)\n");
#endif
  print_launch();
  print_gpus();
#ifdef RAILBENCH_HAVE_OFI
  fmt::print("libfabric {}: providers offering RDM endpoints on this host:\n", ofi::libfabric_version());
  fmt::print("  {:<16} {:<10} {:<24} {:<4} {:<7} {}\n", "provider", "domain", "fabric", "rma", "tagged", "mr_mode");
  for (const auto& p : ofi::list_providers()) {
    fmt::print("  {:<16} {:<10} {:<24} {:<4} {:<7} {}\n", p.provider, p.domain, p.fabric, p.rma ? "yes" : "no",
               p.tagged ? "yes" : "no", p.mr_mode.empty() ? "-" : p.mr_mode);
  }
#endif
#ifdef RAILBENCH_HAVE_VERBS
  print_verbs_ports();
#else
  print_rdma_devices();
#endif
  print_counters();
  return 0;
}

const bool registered =
    register_subcommand(Subcommand{"info", "What this build contains and which providers and devices this host has", 70,
                                   [](CLI::App&, CommonOptions&) {
                                     return SubcommandRun{[] { return std::optional<int>(run_info()); }, {}};
                                   }});

}  // namespace
}  // namespace railbench
