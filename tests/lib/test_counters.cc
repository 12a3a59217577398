// Fabric counters on sysfs trees shaped like an mlx5 RoCE port, an rxe port and a plain
// interface, built in a temp dir: where each rail's counters are, snapshots, deltas
// (wrap, reset, a counter that disappears) and the kind of each well-known name.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "lib/observe/counters.h"
#include "tests/support/temp_tree.h"

using namespace railbench;
namespace fs = std::filesystem;

namespace {

// A fake /sys, written file by file.
class FakeSysfs : public railbench::testing::TempTree {
 public:
  FakeSysfs() : TempTree("counters") {}
  // Files under DIR (which ends in '/'), each with its text.
  void write_all(const std::string& dir, std::initializer_list<std::pair<const char*, const char*>> files) const {
    for (const auto& [name, text] : files) write(dir + name, text);
  }
};

// A ConnectX port in RoCE mode: IB port counters, mlx5 hw_counters, the netdev named in
// the GID attributes.
void mlx5(FakeSysfs& s) {
  s.write_all("class/infiniband/mlx5_0/ports/1/", {{"counters/port_xmit_data", "1000"},
                                                   {"counters/port_rcv_data", "2000"},
                                                   {"counters/symbol_error", "0"},
                                                   {"counters/link_downed", "0"},
                                                   {"counters/port_xmit_discards", "5"},
                                                   {"hw_counters/np_cnp_sent", "10"},
                                                   {"hw_counters/rp_cnp_handled", "7"},
                                                   {"hw_counters/out_of_sequence", "0"},
                                                   {"hw_counters/out_of_buffer", "0"},
                                                   {"gid_attrs/ndevs/0", "enp23s0f0np0"}});
  s.write_all("class/net/enp23s0f0np0/statistics/", {{"rx_dropped", "0"}, {"tx_bytes", "123"}});
}

// Soft-RoCE: hw_counters only, the netdev in the device's "parent" file.
void rxe(FakeSysfs& s) {
  s.write_all("class/infiniband/rxe0/ports/1/hw_counters/",
              {{"sent_pkts", "100"}, {"rcvd_pkts", "90"}, {"retry_exceeded_err", "0"}, {"rcvd_seq_err", "0"}});
  s.write("class/infiniband/rxe0/parent", "eth1");
  s.write("class/net/eth1/statistics/tx_packets", "50");
}

// A verbs port's sources as "DEVICE port N on NETDEV": the device, its port and the
// interface beneath it, compared in one CHECK that prints both sides.
std::string verbs_source(const CounterSources& src) {
  return src.verbs_device + " port " + std::to_string(src.verbs_port) + " on " + src.netdev;
}

}  // namespace

TEST_CASE("counters: an mlx5 RoCE port has port counters, hw_counters and its interface", "[counters]") {
  FakeSysfs s;
  mlx5(s);
  const CounterSources src = find_counter_sources("mlx5_0:1", s.root(), false);
  CHECK(verbs_source(src) == "mlx5_0 port 1 on enp23s0f0np0");
  REQUIRE(src.describe().size() == 2);
  CHECK(src.describe()[0] == "verbs mlx5_0 port 1 (counters, hw_counters)");
  CHECK(src.describe()[1] == "interface enp23s0f0np0 (statistics)");

  const CounterReader reader(src);
  const CounterSnapshot before = reader.snapshot();
  CHECK(before.size() == 11);
  CHECK(before.at("port/port_xmit_data") == 1000);
  CHECK(before.at("hw/np_cnp_sent") == 10);
  CHECK(before.at("net/tx_bytes") == 123);

  const std::string p = "class/infiniband/mlx5_0/ports/1/";
  s.write(p + "counters/port_xmit_data", "1250");  // 250 words = 1000 bytes
  s.write(p + "counters/symbol_error", "3");
  s.write(p + "hw_counters/np_cnp_sent", "14");
  s.write(p + "hw_counters/out_of_sequence", "4180");
  s.write("class/net/enp23s0f0np0/statistics/rx_dropped", "2");
  const CounterDeltas d = counter_delta(before, reader.snapshot());
  REQUIRE(d.changed.size() == 5);
  CHECK(d.wrapped.empty());
  CHECK(d.dropped.empty());
  const nlohmann::json j = to_json(d);
  CHECK(j.at("port/port_xmit_data_bytes") == 1000);
  CHECK_FALSE(j.contains("port/port_xmit_data"));
  CHECK_FALSE(j.contains("port/port_rcv_data_bytes"));  // did not move
  CHECK(j.at("port/symbol_error") == 3);
  CHECK(j.at("hw/np_cnp_sent") == 4);
  CHECK(j.at("hw/out_of_sequence") == 4180);
  CHECK(j.at("net/rx_dropped") == 2);
  CHECK(d.total(CounterKind::error) == 3);
  CHECK(d.total(CounterKind::congestion) == 4);
  CHECK(d.total(CounterKind::retransmit) == 4180);
  CHECK(d.total(CounterKind::drop) == 2);
  CHECK(kind_totals_json(d) == nlohmann::json{{"error", 3}, {"congestion", 4}, {"retransmit", 4180}, {"drop", 2}});
}

TEST_CASE("counters: an rxe port finds its parent interface, a bare device name means port 1", "[counters]") {
  FakeSysfs s;
  rxe(s);
  const CounterSources src = find_counter_sources("rxe0", s.root(), false);
  CHECK(verbs_source(src) == "rxe0 port 1 on eth1");
  CHECK(src.describe()[0] == "verbs rxe0 port 1 (hw_counters)");
  const CounterReader reader(src);
  const CounterSnapshot before = reader.snapshot();
  s.write("class/infiniband/rxe0/ports/1/hw_counters/sent_pkts", "164");
  s.write("class/infiniband/rxe0/ports/1/hw_counters/retry_exceeded_err", "1");
  const CounterDeltas d = counter_delta(before, reader.snapshot());
  CHECK(to_json(d) == nlohmann::json{{"hw/sent_pkts", 64}, {"hw/retry_exceeded_err", 1}});
  CHECK(d.total(CounterKind::error) == 1);
  CHECK(d.total(CounterKind::data) == 64);
}

TEST_CASE("counters: an interface rail reads its statistics, shm and unknown names have no counters", "[counters]") {
  FakeSysfs s;
  s.write("class/net/rail1/statistics/tx_dropped", "0");
  s.write("class/net/rail1/statistics/rx_bytes", "0");
  const CounterSources src = find_counter_sources("rail1", s.root(), false);
  CHECK(src.verbs_device.empty());
  CHECK(src.netdev == "rail1");
  CHECK(CounterReader(src).snapshot().size() == 2);
  CHECK(find_counter_sources("shm", s.root(), false).empty());
  CHECK(find_counter_sources("nosuch0:1", s.root(), false).empty());
  CHECK(find_counter_sources("", s.root(), false).empty());
  CHECK(CounterReader(find_counter_sources("shm", s.root(), false)).snapshot().empty());
}

TEST_CASE("counters: a 32-bit counter that wraps, a reset and a counter that disappears", "[counters]") {
  const uint64_t k32 = uint64_t{1} << 32;
  const CounterSnapshot before{
      {"port/port_rcv_packets", k32 - 10}, {"net/rx_bytes", k32 + 500}, {"hw/out_of_buffer", 7}, {"net/tx_bytes", 5}};
  const CounterSnapshot after{{"port/port_rcv_packets", 20}, {"net/rx_bytes", 100}, {"net/tx_bytes", 5}};
  const CounterDeltas d = counter_delta(before, after);
  CHECK(to_json(d) == nlohmann::json{{"port/port_rcv_packets", 30},
                                     {"net/rx_bytes", 100},
                                     {"wrapped", {"port/port_rcv_packets"}},
                                     {"reset", {"net/rx_bytes"}},
                                     {"dropped", {"hw/out_of_buffer"}}});
  CHECK(counter_delta(after, after).empty());
  CHECK(to_json(counter_delta(after, after)) == nlohmann::json::object());
}

TEST_CASE("counters: a counter removed between snapshots is dropped, not an error", "[counters]") {
  FakeSysfs s;
  rxe(s);
  const CounterReader reader(find_counter_sources("rxe0:1", s.root(), false));
  const CounterSnapshot before = reader.snapshot();
  s.remove("class/infiniband/rxe0/ports/1/hw_counters/rcvd_pkts");
  const CounterDeltas d = counter_delta(before, reader.snapshot());
  CHECK(d.changed.empty());
  CHECK(d.dropped == std::vector<std::string>{"hw/rcvd_pkts"});
}

TEST_CASE("counters: well-known names map to kinds", "[counters]") {
  const std::pair<const char*, CounterKind> cases[] = {
      {"port_xmit_data", CounterKind::data},
      {"port_rcv_packets", CounterKind::data},
      {"sent_pkts", CounterKind::data},
      {"rx_bytes", CounterKind::data},
      {"rx_pause_ctrl_phy", CounterKind::pause},
      {"tx_pause", CounterKind::pause},
      {"rx_prio3_pause", CounterKind::pause},
      {"rx_prio3_pause_duration", CounterKind::pause},
      {"port_xmit_wait", CounterKind::pause},
      {"np_cnp_sent", CounterKind::congestion},
      {"rp_cnp_handled", CounterKind::congestion},
      {"np_ecn_marked_roce_packets", CounterKind::congestion},
      {"out_of_sequence", CounterKind::retransmit},
      {"packet_seq_err", CounterKind::retransmit},
      {"local_ack_timeout_err", CounterKind::retransmit},
      {"duplicate_request", CounterKind::retransmit},
      {"rcvd_seq_err", CounterKind::retransmit},
      {"rnr_nak_retry_err", CounterKind::retransmit},
      {"completer_retry_err", CounterKind::retransmit},
      {"symbol_error", CounterKind::error},
      {"link_downed", CounterKind::error},
      {"link_down_events_phy", CounterKind::error},
      {"link_error_recovery", CounterKind::error},
      {"port_rcv_errors", CounterKind::error},
      {"retry_exceeded_err", CounterKind::error},
      {"retry_rnr_exceeded_err", CounterKind::error},
      {"rx_crc_errors", CounterKind::error},
      {"rx_pcs_symbol_err_phy", CounterKind::error},
      {"port_xmit_discards", CounterKind::drop},
      {"out_of_buffer", CounterKind::drop},
      {"rx_dropped", CounterKind::drop},
      {"tx_dropped", CounterKind::drop},
      {"rx_discards_phy", CounterKind::drop},
      {"rx_queue_0_drops", CounterKind::drop},
      {"rx_missed_errors", CounterKind::drop},
      {"peer_ifindex", CounterKind::other},
      {"lifespan", CounterKind::other},
  };
  for (const auto& [name, kind] : cases) {
    INFO(name);
    CHECK(to_string(counter_kind(name)) == std::string(to_string(kind)));
  }
}

TEST_CASE("counters: loopback's ethtool statistics are read without privileges or come back empty", "[counters]") {
  // lo has no driver statistics; the call must answer, not fail or hang.
  CHECK(read_ethtool_stats("lo").empty());
  CHECK(read_ethtool_stats("no-such-if0").empty());
  CHECK(read_ethtool_stats("").empty());
  CHECK(read_ethtool_stats(std::string(64, 'x')).empty());
}
