// validate --db's judgement: a store of earlier validate runs of one SU (real SQLite, made
// by the store's own ingest), the references drawn from it, and today's links judged
// against them: a link under its own history, a link that has always sat under the fleet,
// and the links that are neither.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "bench/commands/validate/fleet_history.h"
#include "bench/commands/validate/reason_codes.h"
#include "lib/store/store.h"

using namespace railbench;

namespace {

struct StoreDir {
  std::filesystem::path path;
  StoreDir() {
    path = std::filesystem::temp_directory_path() / fmt::format("rb-fleet-{}", getpid());
    std::filesystem::create_directories(path);
  }
  ~StoreDir() { std::filesystem::remove_all(path); }
  std::string db() const { return (path / "fleet.db").string(); }
};

const std::vector<std::string> kNodes{"node01", "node02", "node03", "node04"};

// Each NIC's fraction of its rail's median in run `i`: about 1 with a little noise;
// node02:rail0 has always been 15% under its rail.
double usual(int node, int rail, int i) {
  const double noise = 0.01 * std::sin(1.7 * i + 3.1 * node + 0.7 * rail);
  return (node == 1 && rail == 0 ? 0.85 : 1.0) + noise;
}

void ingest_runs(const std::string& db, const std::string& su, int runs) {
  store::Store s(db, store::Store::Mode::write);
  for (int i = 0; i < runs; ++i) {
    store::RunRows rows;
    rows.run = {fmt::format("{}-{:02}", su, i),
                "validate",
                fmt::format("2026-11-{:02}T10:00:00Z", i + 1),
                "",
                "complete",
                "PASS",
                "ofi",
                su,
                "",
                "",
                "{}"};
    for (int n = 0; n < 4; ++n)
      for (int r = 0; r < 2; ++r)
        for (const char* m : {"tx/rail", "rx/rail"})
          rows.figures.push_back({"nic", fmt::format("{}:rail{}", kNodes[n], r), m, "of rail median", usual(n, r, i)});
    s.ingest(rows, "test");
  }
}

SuConfig su_of(const std::string& name) {
  SuConfig c;
  c.name = name;
  c.nodes = kNodes;
  c.gpus_per_node = 2;
  for (int r = 0; r < 2; ++r)
    c.rails.push_back({r, "rail" + std::to_string(r), "leaf" + std::to_string(r), 10, 0.4, 1500});
  return c;
}

// Today's links: GB/s = 0.05 x the fraction, with node03:rail1 at `n03r1`.
std::vector<std::vector<LinkStats>> today(double n03r1) {
  std::vector<std::vector<LinkStats>> stats(2);
  for (int r = 0; r < 2; ++r)
    for (int n = 0; n < 4; ++n) {
      LinkStats l;
      l.link = {n, r};
      l.pairs = 3;
      const double f = n == 2 && r == 1 ? n03r1 : usual(n, r, 99);
      l.tx = l.rx = 0.05 * f;
      stats[r].push_back(l);
    }
  return stats;
}

}  // namespace

TEST_CASE("validate --db: a link under its own history, a link always under the fleet, nobody else", "[validate][db]") {
  StoreDir dir;
  ingest_runs(dir.db(), "su-a", 8);
  ingest_runs(dir.db(), "su-b", 3);  // another SU's runs are not this one's history
  const FleetHistory h = fleet_history_from_json(to_json(load_fleet_history(dir.db(), "su-a")));
  CHECK(h.runs == 8);
  CHECK(h.own.at("node03:rail1").at("tx").values == 8);
  CHECK(h.fleet.at("rx").values == 64);

  std::vector<Finding> findings;
  CHECK(judge_against_history(su_of("su-a"), kNodes, today(0.80), h, findings) == 8);
  REQUIRE(findings.size() == 2);
  std::map<std::string, const Finding*> by_code;
  for (const auto& f : findings) {
    CHECK(f.severity == Severity::warn);
    CHECK(f.kind == FindingKind::history);
    by_code[f.code] = &f;
  }
  // node03:rail1 at 0.80 of its rail: 20% under its own ~1.00; the fleet sees it too.
  const Finding* own = by_code.at(reason::kLinkBelowHistory);
  CHECK(own->node == 2);
  CHECK(own->rail == 1);
  CHECK_THAT(own->reason, Catch::Contains("history: sending") && Catch::Contains("fleet:"));
  // node02:rail0 is where it always was, so its own history says nothing; the fleet does.
  const Finding* fleet = by_code.at(reason::kLinkBelowFleet);
  CHECK(fleet->node == 1);
  CHECK(fleet->rail == 0);
  CHECK_THAT(fleet->reason, Catch::Contains("fleet: ") && !Catch::Contains("history:"));

  SECTION("within the noise and the minimum drop, nothing") {
    findings.clear();
    judge_against_history(su_of("su-a"), kNodes, today(0.97), h, findings);
    CHECK(findings.size() == 1);  // node02:rail0 under the fleet only
  }
  SECTION("fewer runs than a judgement needs: no link judged") {
    findings.clear();
    const FleetHistory few = load_fleet_history(dir.db(), "su-b");
    CHECK(few.runs == 3);
    CHECK(judge_against_history(su_of("su-b"), kNodes, today(0.5), few, findings) == 0);
    CHECK(findings.empty());
  }
  SECTION("a link that has a finding already gets the comparison added") {
    findings.clear();
    findings.push_back({Severity::fail, FindingKind::bandwidth, "node03 rail1", "slow", 0, 0, "GB/s", 2, 1});
    judge_against_history(su_of("su-a"), kNodes, today(0.80), h, findings);
    CHECK(findings.size() == 2);
    CHECK_THAT(findings.front().reason, Catch::StartsWith("slow; also history: "));
  }
}
