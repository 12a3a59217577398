// The transports this build contains. Each transports/<name>/ folder registers itself
// from a static initializer (<name>_register.cc, linked whole so it is never dropped):
// its name, the -t forms it takes, its own options under its own prefix
// (--verbs-gid-index), what `railbench info` prints for it, how to build it and what
// the results record about it. Nothing above transports/ lists transports; the command
// line, `info` and the results ask this registry.
//
// Options are plain data here (lib does not depend on CLI11): bench/cli turns each into
// a command-line option whose value lands in TransportSpec::options.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/transport/transport.h"

namespace railbench {

// A whole-number option of one transport. On the command line it is
// --<transport>-<name> (--verbs-gid-index), plus `alias` where an older spelling must
// keep working. A value other than `default_value` with another -t is refused.
struct TransportOption {
  std::string name;   // "gid-index"
  std::string alias;  // "--gid-index"; empty: none
  std::string help;   // "verbs: GID table index (...)"
  int default_value = 0;
  bool show_default = false;  // help prints "=<default>"
};

// What a transport is built from: -t, --rails, where this rank's memory lives, and the
// values of every registered transport option.
struct TransportSpec {
  std::string name;      // "ofi"
  std::string provider;  // "tcp", "shm", "" (auto)
  int num_rails = 1;
  std::vector<std::string> rail_names;  // explicit domains/devices, empty: auto
  int gpu = -1;                         // the CUDA device of this rank, -1: none
  MemoryKind mem = MemoryKind::host;    // --mem
  // Transport options by flag without dashes ("verbs-gid-index"); a flag missing here
  // has its default.
  std::map<std::string, int> options;

  // The value of this transport's own option `name` ("gid-index" for --<this>-gid-index).
  int option(const std::string& option_name) const;
};

// Where the transport runs: this rank, the job's size, and whether every rank shares
// one host (feeds provider auto-selection, e.g. shm).
struct TransportJob {
  int rank = 0;
  int world_size = 1;
  bool all_on_one_host = false;
};

// What the code above transports/ must know of a -t form (validate: which NIC probe,
// which MTUs are valid, which checks measure the path they claim; the plan's estimate),
// answered by the transport's own folder instead of by comparing names.
struct TransportTraits {
  // Its rails are RDMA NICs (an ibverbs device and port): validate reads them through
  // sysfs's infiniband class, allows only InfiniBand MTUs and reads their RDMA counters.
  // False: kernel network devices.
  bool rdma_nics = false;
  // The one-way latency a pair test starts from: microseconds on an RDMA NIC or EFA,
  // tens of them through a kernel TCP stack.
  double one_way_latency_s = 50e-6;
  // A connection leaves from the rail's own address. False where the kernel's route to
  // the peer picks the interface (UCX's tcp), so a cross-rail pair (rail s to the peer's
  // rail s+1) runs on the peer's rail and never crosses the spine.
  bool binds_rail_address = true;
};

struct TransportEntry {
  std::string name;  // "ofi": -t ofi, and the prefix of its options
  int order = 0;     // position in help, `info` and "this build has"
  // The -t forms listed in --help: "ofi", "ofi:tcp", ...
  std::vector<std::string> forms;
  std::vector<TransportOption> options;
  // Why this transport does without other transports' options, for the error when one
  // is given with -t <name>: "libfabric chooses these itself".
  std::string foreign_options_note;
  // Buffers when --mem is not given (nccl: cuda).
  MemoryKind default_memory = MemoryKind::host;
  // Each rank needs a GPU of its own (nccl: NCCL refuses two ranks of one communicator
  // on one GPU), so --gpu-map may not name a GPU twice. Other transports let local ranks
  // share a GPU.
  bool exclusive_gpu = false;
  // Without --rails, the NIC nearest this rank's GPU is its one rail (rail-optimized
  // nodes); otherwise the transport picks its first rail(s) itself.
  bool rail_near_gpu = false;
  // `railbench info`: lines beside the GPU ones (after "memory kinds"), and the
  // transport's own section. Either may be empty.
  std::function<void()> gpu_info;
  std::function<void()> info;
  // Builds the transport; throws UsageError naming the fix for a bad combination.
  // Empty for a transport this build lacks (see missing_note).
  std::function<std::unique_ptr<Transport>(const TransportSpec&, const TransportJob&)> make;
  // What the results record beyond the name (nccl: version and NCCL_* environment).
  std::function<nlohmann::json()> details;
  // For a transport this build lacks: what it needs, "needs a build with CUDA and NCCL
  // found". Such an entry is not offered, only named in the unknown-transport error;
  // its options (if it declares them) still parse, and are refused by name.
  std::string missing_note;
  // The traits of -t <name>[:<provider>] ("" when none) over rails named `rails` (empty:
  // the transport picks them). Registered by a built and a missing entry alike, since a
  // plan is made on machines without the transport. Empty: TransportTraits' defaults.
  std::function<TransportTraits(const std::string& provider, const std::vector<std::string>& rails)> traits;

  bool built() const { return static_cast<bool>(make); }
};

// Called from a static initializer in transports/<name>/<name>_register.cc; returns
// true so it can initialize a namespace-scope constant. A second entry of one name is
// a link mistake and aborts with a message.
bool register_transport(TransportEntry entry);

// Every registered entry, built or not (one this build lacks may still print an info
// section), by `order`.
std::vector<const TransportEntry*> all_transports();
// Every built transport, by `order`.
std::vector<const TransportEntry*> transports();
// Names of the built transports, by `order`: {"ofi", "verbs", "nccl"}.
std::vector<std::string> built_transports();
// "Transport[:provider]: ofi, ofi:tcp, ..." for the -t option's help.
std::string transport_help();

// The built transport of this name; throws UsageError "unknown transport '<as_typed>':
// this build has ..." otherwise.
const TransportEntry& find_transport(const std::string& name, const std::string& as_typed);

// The traits of a -t form ("verbs", "ofi:efa", "ucx") over `rails`, whether this build
// has the transport or not; throws UsageError "'<form>' is not a transport: use ..."
// naming every registered transport's forms.
TransportTraits transport_traits(const std::string& form, const std::vector<std::string>& rails = {});

// Refuses another transport's options set away from their defaults (naming the option,
// the transport it belongs to and the fix), then builds the transport.
std::unique_ptr<Transport> make_transport(const TransportSpec& spec, const TransportJob& job);

// What the results record about the transport beyond its name; empty for most.
nlohmann::json transport_details(const std::string& name);

}  // namespace railbench
