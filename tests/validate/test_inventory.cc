#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "bench/commands/validate/inventory.h"

using namespace railbench;
namespace fs = std::filesystem;

namespace {

// A throwaway sysfs tree shaped like a real one (only the files the probe reads).
struct FakeSysfs {
  fs::path root;
  FakeSysfs() {
    root = fs::temp_directory_path() / fs::path("railbench-sysfs-" + std::to_string(::getpid()) + "-" +
                                                std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(root);
  }
  ~FakeSysfs() { fs::remove_all(root); }
  void file(const std::string& rel, const std::string& content) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << content << "\n";
  }
  // A ConnectX port over Ethernet: GID 0 link-local RoCE v1, 3 the IPv4 RoCE v2 one.
  void roce_port(const std::string& dev, const std::string& netdev, const std::string& state, const std::string& rate,
                 int mtu) const {
    const std::string p = "class/infiniband/" + dev + "/ports/1/";
    file(p + "state", state);
    file(p + "rate", rate);
    file(p + "link_layer", "Ethernet");
    file(p + "gids/0", "fe80:0000:0000:0000:0a00:27ff:fe00:0001");
    file(p + "gid_attrs/types/0", "IB/RoCE v1");
    file(p + "gid_attrs/ndevs/0", netdev);
    file(p + "gids/3", "0000:0000:0000:0000:0000:ffff:0a00:0001");
    file(p + "gid_attrs/types/3", "RoCE v2");
    file(p + "gid_attrs/ndevs/3", netdev);
    file("class/net/" + netdev + "/mtu", std::to_string(mtu));
  }
};

// A port the probe found: up or not, its state, speed and active MTU as read.
void check_port(const NicReport& r, bool up, const std::string& state, double speed_gbps, int mtu) {
  CHECK(r.found);
  CHECK(r.up == up);
  CHECK(r.state == state);
  CHECK(r.speed_gbps == speed_gbps);
  CHECK(r.mtu == mtu);
}

}  // namespace

TEST_CASE("inventory: a healthy RoCE port: state, speed, active MTU and the RoCE v2 GID", "[inventory]") {
  FakeSysfs s;
  s.roce_port("mlx5_0", "eth2", "4: ACTIVE", "400 Gb/sec (4X NDR)", 9000);
  NicReport r = probe_rdma_nic("mlx5_0", -1, s.root.string());
  check_port(r, true, "ACTIVE", 400, 4096);
  CHECK(r.netdev == "eth2");
  CHECK(r.address == "0000:0000:0000:0000:0000:ffff:0a00:0001");
  // An explicit --gid-index wins.
  CHECK(probe_rdma_nic("mlx5_0:1", 0, s.root.string()).address == "fe80:0000:0000:0000:0a00:27ff:fe00:0001");
}

TEST_CASE("inventory: a down port, a slow port, a missing device", "[inventory]") {
  FakeSysfs s;
  s.roce_port("mlx5_0", "eth2", "1: DOWN", "200 Gb/sec (4X HDR)", 1500);
  NicReport down = probe_rdma_nic("mlx5_0", -1, s.root.string());
  check_port(down, false, "DOWN", 200, 1024);  // 1500-byte Ethernet leaves room for a 1024-byte RoCE MTU
  NicReport missing = probe_rdma_nic("mlx5_7", -1, s.root.string());
  CHECK_FALSE(missing.found);
  CHECK(missing.present == std::vector<std::string>{"mlx5_0"});
}

TEST_CASE("inventory: network interfaces", "[inventory]") {
  FakeSysfs s;
  s.file("class/net/eth0/operstate", "up");
  s.file("class/net/eth0/speed", "100000");
  s.file("class/net/eth0/mtu", "9000");
  s.file("class/net/eth1/operstate", "lowerlayerdown");
  s.file("class/net/eth1/mtu", "1500");
  NicReport up = probe_netdev_nic("eth0", s.root.string());
  CHECK(up.up);
  CHECK(up.speed_gbps == 100);
  CHECK(up.mtu == 9000);
  NicReport down = probe_netdev_nic("eth1", s.root.string());
  CHECK(down.found);
  CHECK_FALSE(down.up);
  CHECK(down.speed_gbps == 0);  // the kernel refuses to read the speed of a link that is down
  CHECK_FALSE(probe_netdev_nic("eth9", s.root.string()).found);
  // The live host: loopback exists everywhere.
  NicReport lo = probe_netdev_nic("lo");
  CHECK(lo.found);
  CHECK(lo.address == "127.0.0.1");
}

TEST_CASE("inventory: link-down counters, read at the start and again later", "[inventory][robustness]") {
  FakeSysfs s;
  s.file("class/net/eth0/operstate", "up");
  s.file("class/net/eth0/carrier_changes", "3");
  s.file("class/net/eth1/operstate", "up");  // a netdev without the counter (old kernel)
  s.roce_port("mlx5_0", "eth2", "4: ACTIVE", "400 Gb/sec (4X NDR)", 4200);
  s.file("class/net/eth2/carrier_changes", "10");
  s.file("class/infiniband/mlx5_0/ports/1/counters/link_downed", "0");
  NicReport eth0 = probe_netdev_nic("eth0", s.root.string());
  CHECK(eth0.counters == LinkCounters{3, -1});
  CHECK(probe_netdev_nic("eth1", s.root.string()).counters == LinkCounters{-1, -1});
  NicReport roce = probe_rdma_nic("mlx5_0", -1, s.root.string());
  CHECK(roce.counters == LinkCounters{10, 0});
  CHECK(nlohmann::json(roce).at("carrier_changes") == 10);
  CHECK(nlohmann::json(roce).get<NicReport>().counters == roce.counters);

  // eth0 went down and came back twice (4 changes), then went down once more.
  s.file("class/net/eth0/carrier_changes", "8");
  const LinkCounters later = read_link_counters(eth0, s.root.string());
  CHECK(later == LinkCounters{8, -1});
  CHECK(link_downs(eth0.counters, later) == 3);
  CHECK(link_downs(eth0.counters, LinkCounters{4, -1}) == 1);  // down, not back yet
  CHECK(link_downs(eth0.counters, eth0.counters) == 0);
  CHECK(link_downs(LinkCounters{}, LinkCounters{}) == 0);  // not kept: nothing known
  // An IB port counts its downs itself.
  s.file("class/infiniband/mlx5_0/ports/1/counters/link_downed", "3");
  CHECK(link_downs(roce.counters, read_link_counters(roce, s.root.string())) == 3);
}

TEST_CASE("inventory: RoCE active MTU from the Ethernet MTU, as the kernel computes it", "[inventory]") {
  CHECK(roce_active_mtu(9000) == 4096);
  CHECK(roce_active_mtu(4200) == 4096);
  CHECK(roce_active_mtu(4191) == 2048);
  CHECK(roce_active_mtu(1500) == 1024);
  CHECK(roce_active_mtu(100) == 0);
}
