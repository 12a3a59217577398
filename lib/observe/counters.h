// Fabric counters per rail: where a rail's NIC keeps them (verbs port counters and
// hw_counters, the network interface's statistics, the driver's ethtool statistics, the
// interface's root qdisc (tc) statistics),
// snapshots of them, and the deltas a measurement raised. A bandwidth figure says a link
// is slow; these say why (PFC pauses, CNPs, retransmits, symbol errors, drops).
// Read-only and unprivileged: sysfs files, the ETHTOOL_GSTATS ioctl and a netlink qdisc
// dump, all in the caller's network namespace. The sysfs root is
// a parameter so tests run on fixture trees.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace railbench {

// What a counter says about the link, for an operator: data moved, flow-control
// back-pressure (PFC/pause), congestion control at work (ECN marks, CNPs), loss
// recovery (retransmits, out-of-sequence), faults (symbol errors, link down, retry
// exceeded), packets thrown away (discards, drops), and everything else.
enum class CounterKind { data, pause, congestion, retransmit, error, drop, other };
inline constexpr CounterKind kCounterKinds[] = {CounterKind::data,       CounterKind::pause, CounterKind::congestion,
                                                CounterKind::retransmit, CounterKind::error, CounterKind::drop,
                                                CounterKind::other};
const char* to_string(CounterKind k);

// The kind of a counter from the device's own name (without the source prefix), e.g.
// "np_cnp_sent" -> congestion, "rx_prio3_pause" -> pause, "symbol_error" -> error.
CounterKind counter_kind(std::string_view device_name);

// Counter values by name. Names are "<source>/<the device's own name>": "port/" for
// verbs port counters, "hw/" for verbs hw_counters, "net/" for the interface's
// statistics, "ethtool/" for the driver's statistics, "qdisc/" for the root qdisc's
// drops and overlimits (what tc -s qdisc shows: packets the host itself threw
// away before they reached the wire, e.g. a shaper's full queue).
using CounterSnapshot = std::map<std::string, uint64_t>;

struct CounterDelta {
  std::string name;  // as in the snapshot, except IB's 4-byte data words (see below)
  CounterKind kind = CounterKind::other;
  uint64_t value = 0;
};

struct CounterDeltas {
  std::vector<CounterDelta> changed;  // only counters that moved, in name order
  std::vector<std::string> wrapped;   // went down from below 2^32: counted as a 32-bit wrap
  std::vector<std::string> reset;     // went down from 2^32 or above: counted from 0
  std::vector<std::string> dropped;   // in `before`, missing from `after`: no delta
  bool empty() const { return changed.empty() && wrapped.empty() && reset.empty() && dropped.empty(); }
  // Sum of the changed counters of `k` (a drop counted by both the interface and its
  // driver counts twice: the per-counter values are the exact ones).
  uint64_t total(CounterKind k) const;
};

// What `after` - `before` moved. IB's port_xmit_data and port_rcv_data count 4-byte
// words (octets / 4): their deltas are converted to bytes and renamed
// "port/port_xmit_data_bytes" and "port/port_rcv_data_bytes".
CounterDeltas counter_delta(const CounterSnapshot& before, const CounterSnapshot& after);

// {"name": value, ...} for the changed counters, plus "wrapped"/"reset"/"dropped" lists
// when not empty.
nlohmann::json to_json(const CounterDeltas& d);
// {"pause": n, ...} for the kinds that moved (data and other left out: they say nothing
// about a fault, and data counters overlap).
nlohmann::json kind_totals_json(const CounterDeltas& d);

// Where one rail's counters are.
struct CounterSources {
  std::string rail;          // RailInfo::name it was resolved from
  std::string verbs_device;  // "mlx5_0", "" when not a verbs device
  int verbs_port = 0;
  std::string netdev;                         // the interface ("eth0"), or the one behind the verbs device
  bool ethtool = false;                       // the driver answers ETHTOOL_GSTATS
  bool qdisc = false;                         // read the interface's root qdisc statistics (netlink)
  std::vector<std::string> describe() const;  // "verbs mlx5_0 port 1 (counters, hw_counters)", ...
  bool empty() const { return verbs_device.empty() && netdev.empty(); }
  std::vector<std::filesystem::path> dirs;  // sysfs directories of counter files
  std::vector<std::string> prefixes;        // "port/", "hw/", "net/" for each of dirs
};

// Finds the sources of the rail named `rail_name` (RailInfo::name): "dev:port" or a
// bare "dev" (port 1) under class/infiniband, with the interface behind it
// (ports/P/gid_attrs/ndevs/0, the device's "parent" file (rxe), or device/net/*); or an
// interface under class/net. "shm" and unknown names have none. `live` false (fixture
// trees) keeps to sysfs: no ethtool, no qdisc. Never throws.
CounterSources find_counter_sources(const std::string& rail_name, const std::filesystem::path& sysfs_root = "/sys",
                                    bool live = true);

// Reads one rail's counters: the file list and ethtool's names are resolved once, each
// snapshot only reads (at most kMaxCounterFiles sysfs files).
class CounterReader {
 public:
  static constexpr size_t kMaxCounterFiles = 512;
  explicit CounterReader(CounterSources sources);
  const CounterSources& sources() const { return sources_; }
  CounterSnapshot snapshot() const;

 private:
  CounterSources sources_;
  std::vector<std::pair<std::string, std::string>> files_;  // name, path
};

// The ethtool statistics of interface `ifname` in this network namespace (name ->
// value), empty when the driver has none or the interface does not exist.
CounterSnapshot read_ethtool_stats(const std::string& ifname);

// The root qdisc statistics of interface `ifname` in this network namespace: "drops",
// "overlimits" (empty when it has none, e.g. noqueue, or on any error).
CounterSnapshot read_qdisc_stats(const std::string& ifname);

}  // namespace railbench
