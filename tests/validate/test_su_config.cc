#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "bench/commands/validate/su_config.h"
#include "lib/core/errors.h"

using namespace railbench;

namespace {

// A valid two-rail config with one field replaced (or added) by `patch`.
std::string config_with(const std::string& rails, const std::string& extra = "") {
  return fmt::format(R"({{
  // comments are allowed
  "name": "t", "nodes": "n[1-4]", "gpus_per_node": 2, "transport": "ofi:tcp",
  "rails": {} {}
}})",
                     rails, extra);
}

const char* kRails =
    R"([{"gpu": 0, "nic": "eth0", "speed_gbps": 400, "mtu": 9000},
        {"gpu": 1, "nic": "eth1", "speed_gbps": 400, "mtu": 9000, "leaf": "leafB", "line_rate_gbps": 200}])";

}  // namespace

TEST_CASE("su config: a valid config and its defaults", "[su_config]") {
  SuConfig c = parse_su_config(config_with(kRails), "t.json");
  CHECK(c.nodes == std::vector<std::string>{"n1", "n2", "n3", "n4"});
  CHECK(c.num_rails() == 2);
  CHECK(c.rails[0].leaf == "leaf0");
  CHECK(c.rails[0].line_rate_gbps == 400);
  CHECK(c.rails[1].line_rate_gbps == 200);
  CHECK(c.rails[1].leaf == "leafB");
  CHECK_FALSE(c.rdma_nics());
  CHECK(c.thresholds.bw_min_fraction == Approx(0.85));
  CHECK(c.tests.bw_bytes == 8u << 20);
  CHECK(c.thresholds.spread_above_median == Approx(0.5));
  CHECK(c.thresholds.link_downs_fail == 2);
  SuConfig t = parse_su_config(
      config_with(kRails, R"(, "thresholds": {"spread_above_median": 0.3, "link_downs_fail": 5})"), "t.json");
  CHECK(t.thresholds.spread_above_median == Approx(0.3));
  CHECK(t.thresholds.link_downs_fail == 5);
}

TEST_CASE("su config: every error names the field and what was expected", "[su_config]") {
  auto err = [](const std::string& text) {
    try {
      parse_su_config(text, "t.json");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(err("{"), Catch::Contains("not valid JSON"));
  CHECK_THAT(err(config_with(kRails, R"(, "thresholds": {"bw_min_fraction": 2})")),
             Catch::Contains("thresholds.bw_min_fraction") && Catch::Contains("outside [0, 1]"));
  CHECK_THAT(err(config_with(kRails, R"(, "thresholds": {"link_downs_fail": 0})")),
             Catch::Contains("thresholds.link_downs_fail") && Catch::Contains("outside"));
  CHECK_THAT(err(config_with(kRails, R"(, "thresholds": {"link_downs_fail": 1.5})")),
             Catch::Contains("thresholds.link_downs_fail") && Catch::Contains("whole number"));
  CHECK_THAT(err(config_with(kRails, R"(, "tresholds": {})")),
             Catch::Contains("tresholds: unknown field") && Catch::Contains("thresholds"));
  CHECK_THAT(err(config_with(R"([{"gpu": 0, "nic": "eth0", "speed_gbps": 400, "mtu": 9000}])")),
             Catch::Contains("rails: has 1 entries but gpus_per_node is 2"));
  CHECK_THAT(err(config_with(R"([{"gpu": 0, "nic": "eth0", "speed_gbps": 400, "mtu": 9000},
                                {"gpu": 0, "nic": "eth1", "speed_gbps": 400, "mtu": 9000}])")),
             Catch::Contains("rails[1].gpu") && Catch::Contains("two rails"));
  CHECK_THAT(err(config_with(R"([{"gpu": 0, "nic": "eth0", "mtu": 9000},
                                {"gpu": 1, "nic": "eth1", "speed_gbps": 400, "mtu": 9000}])")),
             Catch::Contains("rails[0].speed_gbps: missing"));
  CHECK_THAT(err(config_with(kRails, R"(, "tests": {"bw_bytes": "lots"})")), Catch::Contains("tests.bw_bytes"));
  CHECK_THAT(err(R"({"nodes": "n[1-", "gpus_per_node": 1, "rails": []})"), Catch::Contains("nodes:"));
  CHECK_THAT(err(R"({"nodes": "n1,n1", "gpus_per_node": 1, "rails": []})"), Catch::Contains("listed twice"));
  CHECK_THAT(err(R"({"nodes": "n[1-2]", "gpus_per_node": 1, "transport": "carrier-pigeon",
                     "rails": [{"nic": "x", "speed_gbps": 1, "mtu": 1500}]})"),
             Catch::Contains("transport: 'carrier-pigeon' is not a transport: use ofi") && Catch::Contains("verbs") &&
                 Catch::Contains("ucx"));  // registered, built here or not
  // verbs ports are judged by their active IB MTU, which has five possible values.
  CHECK_THAT(err(R"({"nodes": "n[1-2]", "gpus_per_node": 1, "transport": "verbs",
                     "rails": [{"nic": "mlx5_0", "speed_gbps": 400, "mtu": 9000}]})"),
             Catch::Contains("rails[0].mtu") && Catch::Contains("4096"));
}

// What validate needs to know of a transport comes from its registry entry
// (transports/<name>/<name>_traits.h), for every -t form a run takes.
TEST_CASE("su config: any registered transport, and its traits from the registry", "[su_config]") {
  auto with = [](const std::string& transport, const std::string& nic, int mtu = 4096) {
    return parse_su_config(fmt::format(R"({{"nodes": "n[1-2]", "gpus_per_node": 1, "transport": "{}",
                                           "rails": [{{"nic": "{}", "speed_gbps": 400, "mtu": {}}}]}})",
                                       transport, nic, mtu),
                           "t.json");
  };
  struct Case {
    const char* transport;
    const char* nic;
    bool rdma;
    bool binds;
    double latency_s;
  };
  for (const Case& k : {Case{"verbs", "mlx5_0", true, true, 5e-6}, Case{"ofi:verbs", "mlx5_0", true, true, 5e-6},
                        Case{"ofi:tcp", "eth0", false, true, 50e-6}, Case{"ofi:efa", "efa_0", false, true, 5e-6},
                        Case{"ofi", "eth0", false, true, 50e-6}, Case{"ucx:rc_verbs", "mlx5_0:1", true, true, 5e-6},
                        Case{"ucx:rc_x,sm", "mlx5_0:1", true, true, 5e-6}, Case{"ucx:tcp", "eth0", false, false, 50e-6},
                        Case{"ucx", "mlx5_0:1", true, true, 5e-6}, Case{"ucx", "eth0", false, false, 50e-6},
                        Case{"ucx:cuda_copy,tcp", "eth0", false, false, 50e-6}}) {
    INFO(k.transport << " over " << k.nic);
    const SuConfig c = with(k.transport, k.nic);
    const TransportTraits t = c.traits();
    CHECK(t.rdma_nics == k.rdma);
    CHECK(c.rdma_nics() == k.rdma);
    CHECK(t.binds_rail_address == k.binds);
    CHECK(t.one_way_latency_s == Approx(k.latency_s));
  }
  // RDMA NICs are judged by their active IB MTU, through ucx's verbs as through verbs.
  CHECK_THROWS_WITH(with("ucx:rc_verbs", "mlx5_0:1", 9000), Catch::Contains("rails[0].mtu"));
  CHECK_NOTHROW(with("ucx:tcp", "eth0", 9000));
}

TEST_CASE("su config: the shipped configs parse", "[su_config]") {
  for (const char* name : {"su-h200-32x8-400g", "netns-4x2", "netns-4x3"}) {
    INFO(name);
    SuConfig c = load_su_config(name);
    CHECK(c.num_rails() == c.gpus_per_node);
  }
  SuConfig h200 = load_su_config("su-h200-32x8-400g");
  CHECK(h200.nodes.size() == 32);
  CHECK(h200.nodes.front() == "gpu001");
  CHECK(h200.gpus_per_node == 8);
  CHECK(h200.rails[7].nic == "mlx5_7");
  CHECK(h200.rails[7].speed_gbps == 400);
  CHECK(h200.rdma_nics());
  CHECK_THROWS_WITH(load_su_config("no-such-su"), Catch::Contains("cannot read"));
}

namespace {

std::string nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
}

std::string su_error(const std::string& text) {
  try {
    parse_su_config(text, "t.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("su config: deep nesting is refused on parse, with a short line", "[su_config][robustness]") {
  // 100,000 deep crashed (stack overflow printing the value), 50,000 deep gave a 100 KB line.
  for (int depth : {100000, 50000, 65}) {
    const std::string what = su_error(config_with(kRails, R"(, "description": )" + nested(depth)));
    CHECK_THAT(what, Catch::Contains("nested more than 64 levels"));
    CHECK(what.size() < 400);
  }
  // 64 levels parse (and are then a type error, quoted in part).
  const std::string what = su_error(R"({"name": "t", "nodes": )" + nested(63) + "}");
  CHECK_THAT(what, Catch::Contains("nodes") && Catch::Contains("more characters"));
  CHECK(what.size() < 400);
}

TEST_CASE("su config: long values are cut in error lines", "[su_config][robustness]") {
  const std::string big(100000, 'x');
  for (const std::string& extra :
       {R"(, "gpus_per_node": ")" + big + "\"", R"(, ")" + big + "\": 1", R"(, "gid_index": [")" + big + "\"]"}) {
    const std::string what = su_error(config_with(kRails, extra));
    CHECK(what.size() < 700);
    CHECK(what != "(no error)");
  }
  const std::string what = su_error(R"({"name": "t", "nodes": "n[1-2],)" + big + R"([", "gpus_per_node": 1})");
  CHECK_THAT(what, Catch::Contains("hostlist"));
  CHECK(what.size() < 700);
}

TEST_CASE("su config: nodes are capped, and a huge range is refused before it is expanded", "[su_config][robustness]") {
  const auto with_nodes = [](const std::string& nodes) {
    return fmt::format(R"({{"nodes": "{}", "gpus_per_node": 2, "transport": "ofi:tcp", "rails": {}}})", nodes, kRails);
  };
  CHECK_THAT(su_error(with_nodes("node[0-999999999]")), Catch::Contains("more than 4096 names"));
  CHECK_THAT(su_error(with_nodes("node[1-100000]")), Catch::Contains("more than 4096 names"));
  CHECK(parse_su_config(with_nodes("node[0001-4096]"), "t.json").nodes.size() == 4096);
}

TEST_CASE("su config: a rail over several leaves puts every node under exactly one", "[su_config]") {
  const char* rails = R"([{"gpu": 0, "nic": "eth0", "speed_gbps": 400, "mtu": 9000,
                           "leaves": {"r0-leafA": "n[1-2]", "r0-leafB": "n[3-4]"}},
                          {"gpu": 1, "nic": "eth1", "speed_gbps": 400, "mtu": 9000}])";
  const SuConfig c = parse_su_config(config_with(rails), "t.json");
  CHECK(c.rails[0].leaf_of("n1") == "r0-leafA");
  CHECK(c.rails[0].leaf_of("n4") == "r0-leafB");
  CHECK(c.rails[0].leaf == "r0-leafA..r0-leafB");
  CHECK(c.rails[0].leaf_names == std::vector<std::string>{"r0-leafA", "r0-leafB"});
  CHECK(c.rails[1].node_leaf.empty());
  CHECK(c.rails[1].leaf_of("n1") == "leaf1");
  auto err = [](const std::string& leaves) {
    try {
      parse_su_config(config_with(fmt::format(R"([{{"gpu": 0, "nic": "eth0", "speed_gbps": 400, "mtu": 9000, {}}},
        {{"gpu": 1, "nic": "eth1", "speed_gbps": 400, "mtu": 9000}}])",
                                              leaves)),
                      "t.json");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(err(R"("leaves": {"a": "n[1-2]", "b": "n[2-4]"})"),
             Catch::Contains("rails[0].leaves") && Catch::Contains("node 'n2' is under two leaves (a and b)"));
  CHECK_THAT(err(R"("leaves": {"a": "n[1-3]"})"), Catch::Contains("node 'n4' has no leaf: list it under one of a"));
  CHECK_THAT(err(R"("leaves": {"a": "n[1-4],x9"})"), Catch::Contains("rails[0].leaves.a: node 'x9' is not in nodes"));
  CHECK_THAT(err(R"("leaves": {"a": 3})"), Catch::Contains("rails[0].leaves.a: expected a hostlist"));
  CHECK_THAT(err(R"("leaves": {})"), Catch::Contains("rails[0].leaves: expected an object"));
  CHECK_THAT(err(R"("leaf": "x", "leaves": {"a": "n[1-4]"})"), Catch::Contains("and leaf both given"));
}
