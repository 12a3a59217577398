// The verbs transport's decisions that need no RDMA device: rail names, port choice,
// GID types and the RoCE v2 GID, MTU and speed codes, the address blob, and the
// selective-signaling bookkeeping of a work queue.
#include <catch2/catch.hpp>

#include <algorithm>

#include "lib/core/errors.h"
#include "transports/verbs/verbs_qp.h"
#include "transports/verbs/verbs_queue.h"
#include "transports/verbs/verbs_select.h"

using namespace railbench;
using namespace railbench::verbs;

namespace {

Gid gid(const char* text) {
  auto g = parse_gid(text);
  REQUIRE(g.has_value());
  return *g;
}

PortSummary port(const char* dev, int p, bool active) {
  return PortSummary{dev, p, active, active ? "ACTIVE" : "DOWN", "Ethernet"};
}

}  // namespace

TEST_CASE("verbs: rail names are a device or device:port", "[unit][verbs]") {
  CHECK(parse_rail_spec("mlx5_0") == RailSpec{"mlx5_0", 0});
  CHECK(parse_rail_spec("mlx5_0:1") == RailSpec{"mlx5_0", 1});
  CHECK(parse_rail_spec("rxe1:2") == RailSpec{"rxe1", 2});
  for (const char* bad : {"", ":1", "mlx5_0:", "mlx5_0:x", "mlx5_0:0", "mlx5_0:1x", "mlx5_0:300"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_rail_spec(bad), UsageError);
  }
  CHECK_THROWS_WITH(parse_rail_spec("mlx5_0:x"), Catch::Contains("'mlx5_0:x'") && Catch::Contains("mlx5_0:1"));
}

TEST_CASE("verbs: devices sort in natural order", "[unit][verbs]") {
  std::vector<std::string> names{"mlx5_10", "mlx5_2", "rxe0", "mlx5_1", "mlx4_0", "mlx5_0"};
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) { return natural_less(a, b); });
  CHECK(names == std::vector<std::string>{"mlx4_0", "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_10", "rxe0"});
  CHECK_FALSE(natural_less("rxe0", "rxe0"));
  CHECK(natural_less("rxe", "rxe0"));
}

TEST_CASE("verbs: no devices at all is a usage error that says how to get soft-RoCE", "[unit][verbs]") {
  CHECK_THROWS_AS(choose_ports({}, {}, 1), UsageError);
  CHECK_THROWS_WITH(choose_ports({}, {}, 1), Catch::Contains("no RDMA devices (ibv_get_device_list found none)") &&
                                                 Catch::Contains("scripts/rxe-vm/run.sh"));
}

TEST_CASE("verbs: a count takes the first active ports and reports the skipped ones", "[unit][verbs]") {
  const std::vector<PortSummary> all{port("mlx5_0", 1, false), port("mlx5_1", 1, true), port("mlx5_1", 2, true),
                                     port("mlx5_2", 1, true)};
  auto c = choose_ports(all, {}, 2);
  REQUIRE(c.ports.size() == 2);
  CHECK(c.ports[0] == all[1]);
  CHECK(c.ports[1] == all[2]);
  REQUIRE(c.warnings.size() == 1);
  CHECK_THAT(c.warnings[0], Catch::Contains("mlx5_0 port 1") && Catch::Contains("DOWN"));
  // Too few active ports: the error lists every port with its state.
  CHECK_THROWS_WITH(choose_ports(all, {}, 4), Catch::Contains("mlx5_0 port 1 (DOWN, Ethernet)") &&
                                                  Catch::Contains("mlx5_2 port 1 (ACTIVE, Ethernet)"));
}

TEST_CASE("verbs: named rails resolve to ports, and a wrong name lists what exists", "[unit][verbs]") {
  const std::vector<PortSummary> all{port("rxe0", 1, true), port("rxe1", 1, true), port("mlx5_0", 1, false),
                                     port("mlx5_0", 2, true)};
  auto c = choose_ports(all, {RailSpec{"rxe1", 0}, RailSpec{"rxe0", 1}}, 2);
  REQUIRE(c.ports.size() == 2);
  CHECK(c.ports[0].device == "rxe1");
  CHECK(c.ports[1].device == "rxe0");
  // Without a port, the device's first active one.
  CHECK(choose_ports(all, {RailSpec{"mlx5_0", 0}}, 1).ports[0].port == 2);
  // The same port twice is allowed (two rails over one NIC).
  CHECK(choose_ports(all, {RailSpec{"rxe0", 0}, RailSpec{"rxe0", 0}}, 2).ports.size() == 2);

  CHECK_THROWS_AS(choose_ports(all, {RailSpec{"nosuch0", 0}}, 1), UsageError);
  CHECK_THROWS_WITH(choose_ports(all, {RailSpec{"nosuch0", 0}}, 1),
                    Catch::Contains("'nosuch0'") && Catch::Contains("rxe0 port 1 (ACTIVE") &&
                        Catch::Contains("rxe1 port 1 (ACTIVE") && Catch::Contains("mlx5_0 port 1 (DOWN"));
  CHECK_THROWS_WITH(choose_ports(all, {RailSpec{"rxe0", 3}}, 1), Catch::Contains("no port 3"));
  CHECK_THROWS_WITH(choose_ports(all, {RailSpec{"mlx5_0", 1}}, 1),
                    Catch::Contains("mlx5_0:1") && Catch::Contains("DOWN"));
  const std::vector<PortSummary> down{port("mlx5_0", 1, false)};
  CHECK_THROWS_WITH(choose_ports(down, {RailSpec{"mlx5_0", 0}}, 1), Catch::Contains("no active port"));
}

TEST_CASE("verbs: devices without RC write-with-imm are passed over or refused by name", "[unit][verbs]") {
  PortSummary efa{"efa0", 1, true, "ACTIVE", "non-IB (e.g. EFA)", false};
  const std::vector<PortSummary> all{efa, port("mlx5_0", 1, true)};
  auto c = choose_ports(all, {}, 1);
  REQUIRE(c.ports.size() == 1);
  CHECK(c.ports[0].device == "mlx5_0");
  REQUIRE(c.warnings.size() == 1);
  CHECK_THAT(c.warnings[0], Catch::Contains("efa0"));
  CHECK_THROWS_WITH(choose_ports(all, {RailSpec{"efa0", 0}}, 1), Catch::Contains("-t ofi"));
}

TEST_CASE("verbs: GID types parse from sysfs text", "[unit][verbs]") {
  CHECK(parse_gid_type("RoCE v2\n", true) == GidType::roce_v2);
  CHECK(parse_gid_type("IB/RoCE v1\n", true) == GidType::roce_v1);
  CHECK(parse_gid_type("IB/RoCE v1", false) == GidType::ib);
  CHECK(parse_gid_type("  RoCE v2  ", true) == GidType::roce_v2);
  CHECK(parse_gid_type("", true) == GidType::unknown);
  CHECK(parse_gid_type("RoCE v3", true) == GidType::unknown);
  CHECK(std::string(to_string(GidType::roce_v2)) == "RoCE v2");
}

TEST_CASE("verbs: GIDs print, parse and show their IPv4 address", "[unit][verbs]") {
  const Gid v4 = gid("::ffff:10.0.0.15");
  CHECK(is_ipv4_mapped(v4));
  CHECK(ipv4_of(v4) == "10.0.0.15");
  CHECK(to_string(v4) == "::ffff:10.0.0.15");
  const Gid ll = gid("fe80::5054:ff:fe4b:0");
  CHECK(is_link_local(ll));
  CHECK_FALSE(is_ipv4_mapped(ll));
  CHECK_FALSE(ipv4_of(ll).has_value());
  CHECK(is_zero(Gid{}));
  CHECK_FALSE(parse_gid("not a gid").has_value());
  CHECK(ipv4_subnet("10.0.3.15", 24) == "10.0.3.0/24");
  CHECK(ipv4_subnet("192.168.7.200", 20) == "192.168.0.0/20");
  CHECK(gid_prefix64(gid("fe80::5054:ff:fe4b:0")) == "fe80::/64");
}

TEST_CASE("verbs: the RoCE v2 IPv4 GID wins over v1, IPv6 and link-local entries", "[unit][verbs]") {
  // A ConnectX port with an IPv4 and a global IPv6 address: v1 and v2 of each.
  const std::vector<GidEntry> mlx{
      {0, gid("fe80::1"), GidType::roce_v1},         {1, gid("fe80::1"), GidType::roce_v2},
      {2, gid("::ffff:10.1.0.7"), GidType::roce_v1}, {3, gid("::ffff:10.1.0.7"), GidType::roce_v2},
      {4, gid("2001:db8::7"), GidType::roce_v1},     {5, gid("2001:db8::7"), GidType::roce_v2},
  };
  CHECK(choose_roce_gid(mlx) == 3);
  // Order in the span does not matter.
  std::vector<GidEntry> reversed(mlx.rbegin(), mlx.rend());
  CHECK(choose_roce_gid(reversed) == 3);
  // No IPv4: a global RoCE v2 IPv6 before the link-local one.
  const std::vector<GidEntry> v6{{0, gid("fe80::1"), GidType::roce_v2}, {1, gid("2001:db8::7"), GidType::roce_v2}};
  CHECK(choose_roce_gid(v6) == 1);
  // Only RoCE v1: its IPv4 entry.
  const std::vector<GidEntry> v1{{0, gid("fe80::1"), GidType::roce_v1}, {1, gid("::ffff:10.1.0.7"), GidType::roce_v1}};
  CHECK(choose_roce_gid(v1) == 1);
  // rxe on a 6.1 kernel: link-local and IPv4, both v2.
  const std::vector<GidEntry> rxe{{0, gid("fe80::5054:ff:fe4b:0"), GidType::roce_v2},
                                  {1, gid("::ffff:10.0.0.15"), GidType::roce_v2}};
  CHECK(choose_roce_gid(rxe) == 1);
  // Zero GIDs, IB and unknown types never count.
  const std::vector<GidEntry> none{
      {0, Gid{}, GidType::roce_v2}, {1, gid("fe80::1"), GidType::ib}, {2, gid("::ffff:10.0.0.1"), GidType::unknown}};
  CHECK_FALSE(choose_roce_gid(none).has_value());
  CHECK_FALSE(choose_roce_gid({}).has_value());
  CHECK(describe_gids(rxe) == "0: fe80::5054:ff:fe4b:0 (RoCE v2), 1: ::ffff:10.0.0.15 (RoCE v2)");
  CHECK(describe_gids({}) == "empty");
}

TEST_CASE("verbs: MTU codes and link speeds convert", "[unit][verbs]") {
  CHECK(mtu_bytes(1) == 256);
  CHECK(mtu_bytes(3) == 1024);
  CHECK(mtu_bytes(5) == 4096);
  CHECK(mtu_bytes(0) == 0);
  CHECK(mtu_bytes(6) == 0);
  for (int code = 1; code <= 5; ++code) CHECK(mtu_code(mtu_bytes(code)) == code);
  CHECK(mtu_code(1500) == 0);
  CHECK(lane_gbps(32) * width_lanes(2) == 100);   // 4x EDR
  CHECK(lane_gbps(64) * width_lanes(2) == 200);   // 4x HDR
  CHECK(lane_gbps(128) * width_lanes(2) == 400);  // 4x NDR
  CHECK(lane_gbps(1) * width_lanes(1) == 2.5);    // rxe reports 1x SDR
  CHECK(lane_gbps(3) == 0);
  CHECK(width_lanes(3) == 0);
  CHECK(port_state_name(4) == "ACTIVE");
  CHECK(port_state_name(1) == "DOWN");
  CHECK(port_state_name(9) == "state 9");
}

TEST_CASE("verbs: the address blob round-trips and rejects foreign bytes", "[unit][verbs]") {
  RailAddress a;
  a.rank = 3;
  a.world_size = 4;
  a.channels = 2;
  a.link_layer = 2;
  a.mtu = 3;
  a.max_dest_rd_atomic = 16;
  a.use_grh = 1;
  a.lid = 0x12;
  a.gid = gid("::ffff:10.0.0.15");
  a.flush_addr = 0x7f0012345678;
  a.flush_rkey = 0xabcd;
  for (uint32_t i = 0; i < 8; ++i) a.ends.push_back(ChannelEnd{100 + i, 200 + i, 300 + i, 400 + i});
  const auto blob = encode(a);
  CHECK(decode_rail_address(blob) == a);
  CHECK_THROWS_AS(decode_rail_address(std::span(blob).first(blob.size() - 1)), TransportError);
  std::vector<uint8_t> foreign(blob.size(), 0);
  CHECK_THROWS_WITH(decode_rail_address(foreign), Catch::Contains("not from the verbs transport"));
}

TEST_CASE("verbs: selective signaling signals an idle queue, every Nth WR and a full queue", "[unit][verbs]") {
  WorkQueue q(8, 4, true);
  CHECK(q.next_signaled());  // nothing in flight: a lone message completes at once
  q.commit(1, OpKind::send, 10, true);
  // One in flight: a ping-pong whose reply overtook the last message's completion. An
  // unsignaled message would need a flush write of its own.
  CHECK(q.next_signaled());
  q.commit(2, OpKind::send, 20, true);
  // Two in flight, a burst: unsignaled until the 4th since the last signaled one.
  CHECK_FALSE(q.next_signaled());
  q.commit(3, OpKind::send, 30, false);
  CHECK_FALSE(q.next_signaled());
  q.commit(4, OpKind::send, 40, false);
  CHECK_FALSE(q.next_signaled());
  q.commit(5, OpKind::send, 50, false);
  CHECK(q.next_signaled());
  q.commit(6, OpKind::send, 60, true);
  CHECK_FALSE(q.needs_flush());
  CHECK(q.next_signaled());  // the 7th WR takes the last caller slot (one is kept for a flush)
  q.commit(7, OpKind::send, 70, true);
  CHECK_FALSE(q.can_post());
  CHECK(q.can_flush());
}

TEST_CASE("verbs: a ping-pong signals every message and never needs a flush write", "[unit][verbs]") {
  WorkQueue q(8, 16, true);
  // Each message is posted with at most the last one still in flight: its CQE (which
  // comes with the peer's ACK) may not have been reaped when the reply arrived.
  for (uint64_t id = 1; id <= 20; ++id) {
    REQUIRE(q.next_signaled());
    const uint64_t seq = q.next_seq();
    q.commit(id, OpKind::write, 8, true);
    CHECK_FALSE(q.needs_flush());
    if (id == 1) continue;
    CHECK(q.reap(seq - 1, true, 0).entries == 1);  // the last one's, late
    const WorkRecord* w = q.pop();
    REQUIRE(w != nullptr);
    CHECK(w->wr_id == id - 1);
  }
}

TEST_CASE("verbs: a signaled completion completes the unsignaled WRs before it, in post order", "[unit][verbs]") {
  WorkQueue q(16, 4, true);
  for (uint64_t id = 1; id <= 6; ++id) q.commit(id, OpKind::write, id * 100, id == 1 || id == 4);
  // CQE for #1 (seq 0), then for #4 (seq 3): 1, then 2..4 come out.
  auto r = q.reap(0, true, 0);
  CHECK(r.entries == 1);
  r = q.reap(3, true, 0);
  CHECK(r.entries == 3);
  std::vector<uint64_t> ids;
  while (const WorkRecord* w = q.pop()) {
    CHECK(w->status == Status::ok);
    ids.push_back(w->wr_id);
  }
  CHECK(ids == std::vector<uint64_t>{1, 2, 3, 4});
  // #5 and #6 are uncovered: a flush covers them and reports nothing itself.
  CHECK(q.needs_flush());
  const uint64_t flush_seq = q.next_seq();
  q.commit_flush();
  CHECK_FALSE(q.needs_flush());
  CHECK(q.reap(flush_seq, true, 0).entries == 3);
  ids.clear();
  while (const WorkRecord* w = q.pop()) ids.push_back(w->wr_id);
  CHECK(ids == std::vector<uint64_t>{5, 6});
  CHECK_FALSE(q.has_ready());
  CHECK(q.in_flight() == 0);
  // 40-bit wire sequence numbers expand back to the one in flight.
  CHECK(q.expand(q.next_seq() & WorkQueue::kSeqMask) == q.next_seq());
}

TEST_CASE("verbs: a batch holds its slots until its one signaled WR completes, and reports once", "[unit][verbs]") {
  WorkQueue q(8, 4, true);
  // 8 slots, one kept for a flush: a batch of 7 fits an empty queue, 8 does not.
  CHECK(q.can_post_batch(7));
  CHECK_FALSE(q.can_post_batch(8));
  for (int i = 0; i < 4; ++i) q.commit_batch_part(42, 10);
  q.commit(42, OpKind::write, 50, true);
  CHECK_FALSE(q.needs_flush());  // the batch ended in a signaled WR
  // Five slots taken: two more fit, three do not, until the CQE covers the batch.
  CHECK(q.can_post_batch(2));
  CHECK_FALSE(q.can_post_batch(3));
  CHECK(q.reap(4, true, 0).entries == 5);
  const WorkRecord* w = q.pop();
  REQUIRE(w != nullptr);
  CHECK(w->wr_id == 42);
  CHECK(w->bytes == 50);
  CHECK(q.pop() == nullptr);  // one Completion for the batch
  CHECK(q.can_post_batch(7));
  // A failed part fails the batch: its own CQE reports nothing, the last WR's flush does.
  for (int i = 0; i < 2; ++i) q.commit_batch_part(43, 10);
  q.commit(43, OpKind::write, 30, true);
  const uint64_t first = q.next_seq() - 3;
  CHECK(q.reap(first, false, 0).record->batch_part);
  CHECK(q.pop() == nullptr);
  q.reap(first + 2, false, 0);
  w = q.pop();
  REQUIRE(w != nullptr);
  CHECK(w->wr_id == 43);
  CHECK(w->status == Status::error);
}

TEST_CASE("verbs: after a failed WR, the ones before succeed and the rest fail", "[unit][verbs]") {
  WorkQueue q(16, 8, true);
  for (uint64_t id = 1; id <= 5; ++id) q.commit(id, OpKind::send, 8, id == 1);
  // #3 fails (an unsignaled WR still gets its error CQE): #1 and #2 succeeded.
  auto r = q.reap(2, false, 0);
  REQUIRE(r.record != nullptr);
  CHECK(r.record->wr_id == 3);
  CHECK(r.entries == 3);
  CHECK(q.broken());
  CHECK_FALSE(q.needs_flush());
  // The driver flushes nothing more; the transport fails the rest.
  CHECK(q.fail_rest() == 2);
  std::vector<std::pair<uint64_t, Status>> seen;
  while (const WorkRecord* w = q.pop()) seen.emplace_back(w->wr_id, w->status);
  CHECK(seen == std::vector<std::pair<uint64_t, Status>>{
                    {1, Status::ok}, {2, Status::ok}, {3, Status::error}, {4, Status::error}, {5, Status::error}});
  // A flush CQE arriving afterwards is stale.
  CHECK(q.reap(4, false, 0).record == nullptr);
}

TEST_CASE("verbs: a receive queue completes each WR with its delivered length", "[unit][verbs]") {
  WorkQueue q(4, 16, false);
  CHECK(q.next_signaled());
  for (uint64_t id = 1; id <= 4; ++id) q.commit(id, OpKind::recv, 4096, true);
  CHECK_FALSE(q.can_post());  // receive queues keep no flush slot
  q.reap(0, true, 100);
  q.reap(1, true, 200);
  const WorkRecord* w = q.pop();
  REQUIRE(w != nullptr);
  CHECK(w->bytes == 100);
  w = q.pop();
  REQUIRE(w != nullptr);
  CHECK(w->bytes == 200);
  CHECK(q.pop() == nullptr);
  CHECK(q.can_post());
}

TEST_CASE("verbs: a RoCE v2 queue pair's UDP source port from its flow label", "[unit][verbs]") {
  // Small QP numbers: the product is the label (17 * 18 = 0x132), and a label under
  // 0x4000 is the port's low 14 bits.
  CHECK(roce_flow_label(17, 18) == 0x132);
  CHECK(roce_udp_source_port(0x132) == 0xC132);
  // Bits past the 20th fold back in: 0x123456 * 0xABCDEF = 0xC379A59BA4A, XORed with
  // itself shifted by 20 and then by 40, low 20 bits kept.
  CHECK(roce_flow_label(0x123456, 0xABCDEF) == 0xAC3E3);
  // 0xAC3E3: low 14 bits 0x03E3 XOR the high 6 (0x2B) = 0x03C8, in the 0xC000 range.
  CHECK(roce_udp_source_port(0xAC3E3) == 0xC3C8);
  CHECK(roce_udp_source_port(0) == 0xC000);
  CHECK(roce_udp_source_port(0xFFFFF) == 0xFFC0);  // 0x3FFF XOR 0x3F
}
