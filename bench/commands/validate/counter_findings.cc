#include "bench/commands/validate/counter_findings.h"

#include <algorithm>

#include <fmt/format.h>

#include "lib/core/stats.h"
#include "lib/observe/counters.h"

namespace railbench {

namespace {

// "4180" -> "4,180": counts an operator reads at a glance.
std::string grouped(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

void add_side(const nlohmann::json& side, std::map<std::string, uint64_t>& kinds,
              std::map<std::string, uint64_t>& deltas) {
  if (!side.is_object()) return;
  if (const auto k = side.find("kinds"); k != side.end() && k->is_object())
    for (const auto& [name, v] : k->items())
      if (v.is_number_integer() && v.get<int64_t>() >= 0) kinds[name] += v.get<uint64_t>();
  if (const auto d = side.find("deltas"); d != side.end() && d->is_object())
    for (const auto& [name, v] : d->items())
      if (v.is_number_integer() && v.get<int64_t>() >= 0) deltas[name] += v.get<uint64_t>();
}

uint64_t kind_of(const std::map<std::string, uint64_t>& kinds, const char* k) {
  const auto it = kinds.find(k);
  return it == kinds.end() ? 0 : it->second;
}

}  // namespace

std::vector<std::vector<LinkCounterDeltas>> link_counters(int rails, int nodes, const std::vector<PairResult>& pairs) {
  std::vector<std::vector<LinkCounterDeltas>> out(static_cast<size_t>(rails), std::vector<LinkCounterDeltas>(nodes));
  auto at = [&](int rail, int node) -> LinkCounterDeltas* {
    if (rail < 0 || rail >= rails || node < 0 || node >= nodes) return nullptr;
    return &out[static_cast<size_t>(rail)][static_cast<size_t>(node)];
  };
  for (const auto& p : pairs) {
    LinkCounterDeltas* a = at(p.rail_a, p.node_a);
    LinkCounterDeltas* b = at(p.rail_b, p.node_b);
    if (a != nullptr && !p.counters_a.is_null()) {
      a->read = true, ++a->tests;
      add_side(p.counters_a, a->kinds, a->deltas);
      add_side(p.counters_b, a->partner_kinds, a->partner_deltas);
    }
    if (b != nullptr && !p.counters_b.is_null()) {
      b->read = true, ++b->tests;
      add_side(p.counters_b, b->kinds, b->deltas);
      add_side(p.counters_a, b->partner_kinds, b->partner_deltas);
    }
  }
  return out;
}

std::string describe_counters(const std::map<std::string, uint64_t>& kinds,
                              const std::map<std::string, uint64_t>& deltas) {
  std::string out;
  // The kinds that say why, worst first; data and "other" say nothing about a fault.
  for (const char* k : {"error", "drop", "retransmit", "pause", "congestion"}) {
    const uint64_t total = kind_of(kinds, k);
    if (total == 0) continue;
    std::string names;
    for (const auto& [name, v] : deltas) {
      const std::string_view dev = std::string_view(name).substr(name.find('/') + 1);
      if (to_string(counter_kind(dev)) != std::string_view(k)) continue;
      names += fmt::format("{}{} {}", names.empty() ? "" : ", ", name, grouped(v));
    }
    out += fmt::format("{}{} {}{}", out.empty() ? "" : ", ", grouped(total), k,
                       names.empty() ? "" : fmt::format(" ({})", names));
  }
  return out.empty() ? "none" : out;
}

void judge_counters(const SuConfig& config, const std::vector<std::string>& node_names,
                    const std::vector<std::vector<LinkCounterDeltas>>& counters, std::vector<Finding>& findings) {
  const SuThresholds& t = config.thresholds;
  auto counters_of = [&](int node, int rail) -> const LinkCounterDeltas* {
    if (rail < 0 || static_cast<size_t>(rail) >= counters.size() || node < 0 ||
        static_cast<size_t>(node) >= counters[static_cast<size_t>(rail)].size())
      return nullptr;
    const LinkCounterDeltas& c = counters[static_cast<size_t>(rail)][static_cast<size_t>(node)];
    return c.read ? &c : nullptr;
  };
  auto own_and_partners = [](const LinkCounterDeltas& c) {
    return fmt::format("{}; partners: {}", describe_counters(c.kinds, c.deltas),
                       describe_counters(c.partner_kinds, c.partner_deltas));
  };
  // What the findings found so far showed: said on each of them.
  for (Finding& f : findings) {
    // A port in the wrong VLAN or partition is configuration: its counters say nothing.
    if (f.node < 0 || f.rail < 0 || f.kind == FindingKind::isolation) continue;
    if (const LinkCounterDeltas* c = counters_of(f.node, f.rail))
      f.reason += fmt::format("; counters during its tests: {}", own_and_partners(*c));
  }
  for (size_t r = 0; r < counters.size(); ++r) {
    // A rail's usual drops and retransmits: the median over its links.
    std::vector<double> drops, retransmits;
    for (const auto& c : counters[r]) {
      if (!c.read) continue;
      drops.push_back(static_cast<double>(kind_of(c.kinds, "drop")));
      retransmits.push_back(static_cast<double>(kind_of(c.kinds, "retransmit")));
    }
    if (drops.empty()) continue;
    const double drop_median = median(drops), retransmit_median = median(retransmits);
    for (size_t n = 0; n < counters[r].size(); ++n) {
      const LinkCounterDeltas& c = counters[r][n];
      if (!c.read) continue;
      const LinkId link{static_cast<int>(n), static_cast<int>(r)};
      const std::string subject = link_name(config, node_names, link);
      const uint64_t errors = kind_of(c.kinds, "error");
      if (t.counter_errors_fail > 0 && errors >= static_cast<uint64_t>(t.counter_errors_fail)) {
        findings.push_back(coded(
            {Severity::fail, FindingKind::counters, subject,
             fmt::format("its NIC counted {} error(s) during its pair tests (limit {}): {}", grouped(errors),
                         t.counter_errors_fail, own_and_partners(c)),
             static_cast<double>(errors), static_cast<double>(t.counter_errors_fail), "errors", link.node, link.rail},
            reason::kCountersErrors));
        continue;
      }
      const bool already = std::any_of(findings.begin(), findings.end(),
                                       [&](const Finding& f) { return f.node == link.node && f.rail == link.rail; });
      if (already) continue;  // its finding says what the counters showed
      auto far_above = [&](uint64_t v, int limit, double rail_median) {
        return limit > 0 && v >= static_cast<uint64_t>(limit) &&
               static_cast<double>(v) > t.counter_rail_factor * rail_median;
      };
      const uint64_t d = kind_of(c.kinds, "drop"), rt = kind_of(c.kinds, "retransmit");
      const bool many_drops = far_above(d, t.counter_drops_warn, drop_median);
      if (many_drops || far_above(rt, t.counter_retransmits_warn, retransmit_median)) {
        findings.push_back(coded(
            {Severity::warn, FindingKind::counters, subject,
             fmt::format("{} during its pair tests (rail median {:.0f}): {}",
                         many_drops ? fmt::format("{} drops", grouped(d)) : fmt::format("{} retransmits", grouped(rt)),
                         many_drops ? drop_median : retransmit_median, own_and_partners(c)),
             static_cast<double>(many_drops ? d : rt),
             static_cast<double>(many_drops ? t.counter_drops_warn : t.counter_retransmits_warn),
             many_drops ? "drops" : "retransmits", link.node, link.rail},
            many_drops ? reason::kCountersDrops : reason::kCountersRetransmits));
      }
    }
  }
}

}  // namespace railbench
