// Tenants in validate (bench/commands/validate/tenants.h, su_config's `tenants`): the config's
// checks, which pairs run and which are probed, and the isolation, P_Key and
// interference judgements.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "bench/commands/validate/inventory.h"
#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/tenants.h"
#include "lib/core/errors.h"

using namespace railbench;
namespace fs = std::filesystem;

namespace {

std::string config(const std::string& tenants, const std::string& transport = "ofi:tcp",
                   const std::string& nodes = "n[1-6]") {
  const bool ib = transport == "verbs";
  return fmt::format(R"({{"name": "t", "nodes": "{}", "gpus_per_node": 2, "transport": "{}",
  "rails": [{{"gpu": 0, "nic": "{}", "speed_gbps": 400, "mtu": {}}},
            {{"gpu": 1, "nic": "{}", "speed_gbps": 400, "mtu": {}}}],
  "tenants": {}}})",
                     nodes, transport, ib ? "mlx5_0" : "eth0", ib ? 4096 : 9000, ib ? "mlx5_1" : "eth1",
                     ib ? 4096 : 9000, tenants);
}

const std::vector<std::string> kSixNodes{"n1", "n2", "n3", "n4", "n5", "n6"};

}  // namespace

TEST_CASE("tenants: a config with tenants, shorthand and full forms", "[tenants]") {
  const SuConfig c = parse_su_config(
      config(R"({"a": "n[1-2]", "b": {"nodes": "n[3-6]", "pkey": "0x8002", "membership": "limited"}})"));
  REQUIRE(c.tenants.size() == 2);
  CHECK(c.tenants[0].name == "a");
  CHECK(c.tenants[0].pkey == -1);
  CHECK(c.tenants[1].nodes == std::vector<std::string>{"n3", "n4", "n5", "n6"});
  CHECK(c.tenants[1].pkey == 2);
  CHECK_FALSE(c.tenants[1].full_member);
  CHECK(c.tenant_of({"n5", "n1"}) == std::vector<int>{1, 0});
  CHECK(c.tests.isolation);
  CHECK(c.tests.isolation_timeout_s == Approx(2));
  CHECK(c.thresholds.tenant_busbw_min_ratio == Approx(0.8));
  // No tenants: none, and tenant_of says so.
  const SuConfig none = parse_su_config(
      R"({"nodes": "n[1-2]", "gpus_per_node": 1, "transport": "ofi:tcp", "rails": [{"nic": "eth0", "speed_gbps": 1, "mtu": 1500}]})");
  CHECK(none.tenants.empty());
  CHECK(none.tenant_of({"n1"}).empty());
}

TEST_CASE("tenants: config mistakes name the field and the fix", "[tenants]") {
  auto fails_with = [](const std::string& tenants, const std::string& words) {
    CHECK_THROWS_WITH(parse_su_config(config(tenants)), Catch::Contains(words));
  };
  fails_with(R"({"a": "n[1-6]"})", "2 or more tenants");
  fails_with(R"({"a": "n[1-3]", "b": "n[3-6]"})", "node 'n3' is also in tenant 'a'");
  fails_with(R"({"a": "n[1-2]", "b": "n[3-5]"})", "node 'n6' is in no tenant");
  fails_with(R"({"a": "n[1-2]", "b": "n[3-7]"})", "node 'n7' is not in the SU's nodes");
  fails_with(R"({"a": "n1", "b": "n[2-6]"})", "has one node");
  fails_with(R"({"a": "n[1-2]", "b": {"nodes": "n[3-6]", "pkey": "0x7fff"}})", "0x7fff is the default partition");
  fails_with(R"({"a": "n[1-2]", "b": {"nodes": "n[3-6]", "pkey": "bogus"}})", "expected a partition key");
  fails_with(R"({"a": "n[1-2]", "b": {"nodes": "n[3-6]", "membership": "limited"}})", "needs a pkey");
  fails_with(R"({"a": {"nodes": "n[1-2]", "pkey": 2}, "b": {"nodes": "n[3-6]", "pkey": "0x8002"}})",
             "another tenant's partition key");
  fails_with(R"({"a": "n[1-2]", "b": {"nodes": "n[3-6]", "vlan": 7}})", "unknown field");
}

TEST_CASE("tenants: pair tests stay inside a tenant, probes cover every cross-tenant pair once", "[tenants]") {
  const SuConfig cfg = parse_su_config(config(R"({"a": "n[1-2]", "b": "n[3-6]"})"));
  const TenantMap m = make_tenant_map(cfg, kSixNodes);
  REQUIRE(m.on());
  CHECK(m.members[0] == std::vector<int>{0, 1});
  CHECK(m.members[1] == std::vector<int>{2, 3, 4, 5});
  CHECK(m.who(kSixNodes, 3) == "n4 (tenant b)");
  // Phase 3 pairs consecutive nodes of a tenant.
  CHECK(cross_rail_partner(m, 0).node == 1);
  CHECK(cross_rail_partner(m, 0).first);
  CHECK(cross_rail_partner(m, 3).node == 2);
  CHECK_FALSE(cross_rail_partner(m, 3).first);
  CHECK(cross_rail_partner(m, 4).node == 5);
  // Every cross-tenant pair exactly once, never a same-tenant pair, no node twice a round.
  std::set<std::pair<int, int>> seen;
  for (const Round& round : isolation_rounds(m, 6)) {
    REQUIRE_FALSE(round.empty());
    std::set<int> busy;
    for (const Pair& p : round) {
      CHECK_FALSE(m.same(p.a, p.b));
      CHECK(busy.insert(p.a).second);
      CHECK(busy.insert(p.b).second);
      CHECK(seen.insert({std::min(p.a, p.b), std::max(p.a, p.b)}).second);
    }
  }
  CHECK(seen.size() == 2 * 4);
  // Without tenants, phase 3 is node 2m with 2m+1 as before, and nothing is probed.
  SuConfig plain = cfg;
  plain.tenants.clear();
  const TenantMap one = make_tenant_map(plain, kSixNodes);
  CHECK_FALSE(one.on());
  CHECK(cross_rail_partner(one, 2).node == 3);
  CHECK(cross_rail_partner(one, 5).node == 4);
  CHECK(isolation_rounds(one, 6).empty());
  CHECK(one.who(kSixNodes, 0) == "n1");
}

TEST_CASE("tenants: re-test partners come from the suspect's tenant", "[tenants]") {
  // Rail 0, 6 nodes: n1 (tenant a) is slow; the fastest other node is n3 (tenant b).
  std::vector<std::vector<LinkStats>> stats(1, std::vector<LinkStats>(6));
  for (int n = 0; n < 6; ++n) {
    stats[0][n].link = {n, 0};
    stats[0][n].pairs = 3;
    stats[0][n].tx = n == 2 ? 9 : 5;
  }
  const std::vector<Suspect> suspects{{{0, 0}, FindingKind::bandwidth, "slow", 1, 5, "GB/s"}};
  CHECK(plan_retests(suspects, stats).at(0).at(0).partner == 2);
  const std::vector<int> tenant_of{0, 0, 1, 1, 1, 1};
  CHECK(plan_retests(suspects, stats, tenant_of).at(0).at(0).partner == 1);
  // No partner in its tenant: no re-test.
  const std::vector<int> alone{0, 1, 1, 1, 1, 1};
  CHECK(plan_retests(suspects, stats, alone).empty());
}

TEST_CASE("tenants: a probe that got through is a breach naming both ends", "[tenants]") {
  const SuConfig cfg = parse_su_config(config(R"({"a": "n[1-2]", "b": "n[3-6]"})"));
  const TenantMap m = make_tenant_map(cfg, kSixNodes);
  std::vector<IsolationProbe> probes{
      {0, 2, 1, 1, false, false, 2.0}, {1, 2, 1, 1, true, true, 0.01}, {1, 3, 0, 1, false, true, 2.0}};
  const auto found = judge_isolation(cfg, kSixNodes, m, probes);
  REQUIRE(found.size() == 2);
  CHECK(found[0].kind == FindingKind::isolation);
  CHECK(found[0].severity == Severity::fail);
  CHECK(found[0].subject == "n2 -> n3 rail1");
  CHECK_THAT(found[0].reason,
             Catch::Contains("isolation breached: n2 (tenant a) reached n3 (tenant b) on rail1, both ways"));
  CHECK(found[0].ends == std::vector<int>{1, 2});
  CHECK(found[1].subject == "n2 -> n4 rail0 -> rail1");
  CHECK_THAT(found[1].reason, Catch::Contains("one way (a to b)"));
  // All timed out: isolated, nothing to say.
  CHECK(judge_isolation(cfg, kSixNodes, m, {probes[0]}).empty());
}

TEST_CASE("tenants: one port in another tenant's network is singled out, a shared network is not", "[tenants]") {
  const SuConfig cfg = parse_su_config(config(R"({"a": "n[1-2]", "b": "n[3-6]"})"));
  const TenantMap m = make_tenant_map(cfg, kSixNodes);
  // n2 rail1 in tenant b's network: it reaches n3..n6 on rail1 and through b's spine on
  // rail0; each of them reaches only n2.
  std::vector<IsolationProbe> probes;
  for (int b = 2; b < 6; ++b) {
    probes.push_back({1, b, 1, 1, true, true, 0.01});
    probes.push_back({1, b, 1, 0, true, true, 0.01});
    probes.push_back({0, b, 1, 1, false, false, 2.0});
  }
  const auto found = judge_isolation(cfg, kSixNodes, m, probes);
  REQUIRE(found.size() == 8 + 1);
  const Finding& port = found.back();
  CHECK(port.node == 1);
  CHECK(port.rail == 1);
  CHECK(port.ends.empty());
  CHECK_THAT(port.reason, Catch::Contains("n2 (tenant a) reached n3, n4, n5, n6 (tenant b)"));
  CHECK_THAT(port.reason, Catch::Contains("back to tenant a's"));
  // Tenants on one shared network: every port reaches every other tenant's nodes alike.
  std::vector<IsolationProbe> shared;
  for (int a = 0; a < 2; ++a)
    for (int b = 2; b < 6; ++b)
      for (int r = 0; r < 2; ++r) shared.push_back({a, b, r, r, true, true, 0.01});
  const auto all = judge_isolation(cfg, kSixNodes, m, shared);
  CHECK(all.size() == shared.size());
  for (const auto& f : all) CHECK(f.node == -1);
}

TEST_CASE("tenants: InfiniBand P_Key tables read from sysfs and judged", "[tenants]") {
  const fs::path root = fs::temp_directory_path() / fmt::format("railbench-pkeys-{}", ::getpid());
  fs::remove_all(root);
  auto file = [&](const std::string& rel, const std::string& content) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << content << "\n";
  };
  // An IB port: index 0 the default partition (limited), 1 tenant b's key, the rest empty.
  auto ib_port = [&](const std::string& dev, const std::vector<std::string>& keys) {
    const std::string p = "class/infiniband/" + dev + "/ports/1/";
    file(p + "state", "4: ACTIVE");
    file(p + "rate", "400 Gb/sec (4X NDR)");
    file(p + "link_layer", "InfiniBand");
    file(p + "gids/0", "fe80:0000:0000:0000:0a00:27ff:fe00:0001");
    for (size_t i = 0; i < 4; ++i) file(p + "pkeys/" + std::to_string(i), i < keys.size() ? keys[i] : "0x0000");
  };
  ib_port("mlx5_0", {"0x7fff", "0x8002"});
  ib_port("mlx5_1", {"0x7fff", "0x8001", "0x8002"});
  ib_port("mlx5_2", {"0x7fff", "0x0002"});
  ib_port("mlx5_3", {"0x7fff"});
  const NicReport good = probe_rdma_nic("mlx5_0", -1, root.string());
  CHECK(good.pkeys == std::vector<int>{0x7fff, 0x8002});
  const NicReport two = probe_rdma_nic("mlx5_1", -1, root.string());
  const NicReport limited = probe_rdma_nic("mlx5_2", -1, root.string());
  const NicReport none = probe_rdma_nic("mlx5_3", -1, root.string());
  fs::remove_all(root);

  const SuConfig cfg = parse_su_config(
      config(R"({"a": {"nodes": "n[1-2]", "pkey": "0x8001"}, "b": {"nodes": "n[3-6]", "pkey": "0x8002"}})", "verbs"));
  const TenantMap m = make_tenant_map(cfg, kSixNodes);
  // n3 (tenant b): right; n4: also in a's partition; n5: b's key as a limited member; n6: no key.
  std::vector<std::vector<NicReport>> nics(6, std::vector<NicReport>(2));
  nics[2][0] = good;
  nics[3][0] = two;
  nics[4][0] = limited;
  nics[5][0] = none;
  const auto found = judge_pkeys(cfg, kSixNodes, m, nics);
  REQUIRE(found.size() == 3);
  for (const auto& f : found) CHECK(f.kind == FindingKind::isolation);
  CHECK(found[0].node == 3);
  CHECK_THAT(found[0].reason, Catch::Contains("holds tenant a's partition key 0x8001"));
  CHECK(found[1].node == 4);
  CHECK_THAT(found[1].reason, Catch::Contains("the config says full membership"));
  CHECK(found[2].node == 5);
  CHECK_THAT(found[2].reason, Catch::Contains("lacks tenant b's partition key 0x8002"));
  // RoCE and netdev ports have no table read: nothing to judge.
  CHECK(judge_pkeys(cfg, kSixNodes, m, std::vector<std::vector<NicReport>>(6, std::vector<NicReport>(2))).empty());
}

TEST_CASE("tenants: interference below the ratio is a finding for that tenant", "[tenants]") {
  const SuConfig cfg = parse_su_config(config(R"({"a": "n[1-2]", "b": "n[3-6]"})"));
  const TenantMap m = make_tenant_map(cfg, kSixNodes);
  const auto found = judge_interference(cfg, m, {{0, 10, 9.5, true}, {1, 10, 5, true}});
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == FindingKind::interference);
  CHECK(found[0].subject == "tenant b");
  CHECK(found[0].measured == Approx(0.5));
  CHECK_THAT(found[0].reason, Catch::Contains("0.50x, below 0.80"));
}
