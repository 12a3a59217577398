#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "bench/commands/validate/drain_list.h"
#include "bench/commands/validate/reason_codes.h"
#include "bench/commands/validate/verdict.h"

using namespace railbench;

namespace {

constexpr FindingKind kEveryKind[] = {FindingKind::inventory,     FindingKind::unreachable,  FindingKind::bandwidth,
                                      FindingKind::bidirectional, FindingKind::latency,      FindingKind::cross_rail,
                                      FindingKind::collective,    FindingKind::intermittent, FindingKind::baseline,
                                      FindingKind::counters,      FindingKind::cabling,      FindingKind::isolation,
                                      FindingKind::interference,  FindingKind::bisection,    FindingKind::fabric};

// The codes in the validate guide's "Reason codes" table (its rows' first cell), in order.
std::vector<std::string> guide_codes() {
  std::ifstream in(RAILBENCH_VALIDATE_GUIDE);
  REQUIRE(in);
  std::vector<std::string> out;
  const std::regex row(R"(^\| `(RB-[^`]*)` \|)");
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Reason codes";
    std::smatch m;
    if (inside && std::regex_search(line, m, row)) out.push_back(m[1]);
  }
  return out;
}

}  // namespace

TEST_CASE("reason codes: every finding kind has one, of its own kind, and every code parses", "[validate]") {
  // Every kind listed here is every kind parse_finding_kind knows.
  for (FindingKind k : kEveryKind) CHECK(parse_finding_kind(to_string(k), "kind") == k);
  std::set<std::string> codes;
  const std::regex shape("^RB-[A-Z0-9]+(-[A-Z0-9]+)+$");
  for (const ReasonCode& c : all_reason_codes()) {
    INFO(c.code);
    CHECK(std::regex_match(c.code, shape));
    CHECK(codes.insert(c.code).second);  // once each: one code, one meaning
  }
  for (FindingKind k : kEveryKind) {
    INFO(to_string(k));
    const auto it = std::find_if(all_reason_codes().begin(), all_reason_codes().end(),
                                 [&](const ReasonCode& c) { return std::string(c.code) == reason_code(k); });
    REQUIRE(it != all_reason_codes().end());
    CHECK(it->kind == k);
  }
  std::set<std::string> defaults;
  for (FindingKind k : kEveryKind) defaults.insert(reason_code(k));
  CHECK(defaults.size() == std::size(kEveryKind));  // no two kinds share one
}

TEST_CASE("reason codes: the validate guide's table lists exactly the codes validate writes", "[validate]") {
  const std::vector<std::string> documented = guide_codes();
  std::vector<std::string> emitted;
  for (const ReasonCode& c : all_reason_codes()) emitted.push_back(c.code);
  const std::set<std::string> doc_set(documented.begin(), documented.end());
  CHECK(doc_set.size() == documented.size());  // no row twice
  for (const auto& c : emitted) {
    INFO(c << ": add a row for it to the Reason codes table in bench/commands/validate/README.md");
    CHECK(doc_set.count(c));
  }
  const std::set<std::string> emitted_set(emitted.begin(), emitted.end());
  for (const auto& c : documented) {
    INFO(c << ": documented in the validate guide, but validate never writes it");
    CHECK(emitted_set.count(c));
  }
}

TEST_CASE("reason codes: a finding writes its code, and one read back without a code gets its kind's", "[validate]") {
  Finding f;
  f.kind = FindingKind::bandwidth;
  f.subject = "node03 rail1 (leaf1)";
  CHECK(nlohmann::json(f)["code"] == "RB-LINK-BW-LOW");  // none set: the kind's
  f.code = reason::kLinkBwLowTx;
  nlohmann::json j = f;
  CHECK(j["code"] == "RB-LINK-BW-LOW-TX");
  CHECK(j.get<Finding>().code == "RB-LINK-BW-LOW-TX");

  // A results file written before codes existed.
  j.erase("code");
  const Finding old = j.get<Finding>();
  CHECK(old.kind == FindingKind::bandwidth);
  CHECK(old.code == "RB-LINK-BW-LOW");
  CHECK(old.subject == "node03 rail1 (leaf1)");
  const auto cabling = nlohmann::json::parse(R"({"severity": "FAIL", "kind": "cabling", "subject": "node03",
      "reason": "rail0 and rail1 appear swapped", "measured": 0, "expected": 1, "unit": "", "node": 2, "rail": 0})");
  CHECK(code_of(cabling.get<Finding>()) == "RB-CABLE-MISCABLED");
  CHECK(cabling.get<Finding>().node == 2);
}

TEST_CASE("reason codes: the drain list carries each entry's code", "[validate][drain]") {
  const std::vector<std::string> nodes{"node01", "node02", "node03"};
  Finding bad;
  bad.kind = FindingKind::bandwidth;
  bad.code = reason::kLinkBwLowRx;
  bad.subject = "node02 rail0 (leaf0)";
  bad.node = 1, bad.rail = 0;
  Finding cross;
  cross.kind = FindingKind::cross_rail;
  cross.code = reason::kCrossRailUnreachable;
  cross.subject = "node01 rail0 -> node03 rail1";
  cross.ends = {0, 2};
  Finding fabric;
  fabric.kind = FindingKind::fabric;
  fabric.code = reason::kFabricLinkLossy;
  fabric.subject = "su1-leaf0 port spine2 <-> spine2 port s1l0 (su1-leaf0-spine2)";
  const BadNodes b = find_bad_nodes({bad, cross, fabric}, nodes);
  const nlohmann::json j = b;
  CHECK(j["codes"] == nlohmann::json::parse(R"({"node02": ["RB-LINK-BW-LOW-RX"]})"));
  REQUIRE(j["suspect_links"].size() == 1);
  CHECK(j["suspect_links"][0]["code"] == "RB-CROSS-RAIL-UNREACHABLE");
  CHECK(j["switch_port_codes"] == nlohmann::json::parse(R"(["RB-FABRIC-LINK-LOSSY"])"));
  CHECK(j["reasons"]["node02"].size() == j["codes"]["node02"].size());
}
