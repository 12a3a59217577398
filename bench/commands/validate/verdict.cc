#include "bench/commands/validate/verdict.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/core/stats.h"

namespace railbench {
namespace {

// The enum whose to_string is `word`; every value is listed once so a new one is parsed
// as soon as it is written.
template <class Enum, size_t N>
Enum parse_word(const std::string& word, const std::string& field, const Enum (&all)[N]) {
  std::string known;
  for (Enum e : all) {
    if (word == to_string(e)) return e;
    known += fmt::format("{}{}", known.empty() ? "" : ", ", to_string(e));
  }
  throw IoError(
      fmt::format("validate: {}: unknown value \"{}\", expected one of {} (results written by another "
                  "railbench version?)",
                  field, word, known));
}

struct RailBaseline {
  double tx = 0, rx = 0, bidir = 0, lat = 0, spread = 0;
  double tx_mad = 0, rx_mad = 0, bidir_mad = 0, lat_mad = 0, spread_mad = 0;
};

RailBaseline baseline(const std::vector<LinkStats>& links) {
  std::vector<double> tx, rx, bidir, lat, spread;
  for (const auto& l : links) {
    if (l.pairs - l.failed <= 0) continue;
    tx.push_back(l.tx);
    rx.push_back(l.rx);
    bidir.push_back(l.bidir);
    lat.push_back(l.lat_p50);
    spread.push_back(l.spread);
  }
  RailBaseline b;
  b.tx = median(tx), b.rx = median(rx), b.bidir = median(bidir), b.lat = median(lat), b.spread = median(spread);
  b.tx_mad = scaled_mad(tx), b.rx_mad = scaled_mad(rx), b.bidir_mad = scaled_mad(bidir), b.lat_mad = scaled_mad(lat);
  b.spread_mad = scaled_mad(spread);
  return b;
}

// Windows far less steady than the rail's: above its median spread by the margin AND
// (when the rail has spread at all) by more than k MADs, as the other relative checks.
bool unsteady(double v, double med, double spread, const SuThresholds& t) {
  if (v <= med + t.spread_above_median) return false;
  return spread == 0 || v > med + t.mad_k * spread;
}

bool unreachable(const LinkStats& l) {
  return l.failed > 0 && 2 * l.failed >= l.pairs;
}

// Below the rail's median by the relative margin AND (when the rail has spread at all)
// by more than k MADs: both, so neither a tight rail nor a noisy one raises false alarms.
bool low_outlier(double v, double med, double spread, const SuThresholds& t) {
  if (med <= 0) return false;
  if (v >= med * (1 - t.rel_bw_below_median)) return false;
  return spread == 0 || v < med - t.mad_k * spread;
}

bool high_latency(double v, double med, double spread, const SuThresholds& t) {
  if (med <= 0) return false;
  if (v <= med * (1 + t.rel_lat_above_median) || v - med < t.rel_lat_min_us) return false;
  return spread == 0 || v > med + t.mad_k * spread;
}

// The checks of one set of figures against the rail's thresholds and baseline; used
// for the full schedule (link medians) and for a re-test (one pair) alike.
std::vector<Suspect> check(const SuConfig& c, LinkId link, double tx, double rx, double bidir, double lat_p50,
                           double lat_p99, const RailBaseline& b) {
  std::vector<Suspect> out;
  const SuThresholds& t = c.thresholds;
  const double line = line_gbytes(c.rails[link.rail]);
  const double need = t.bw_min_fraction * line;
  for (auto [v, dir, med, spread, code] : {std::tuple{tx, "sending", b.tx, b.tx_mad, reason::kLinkBwLowTx},
                                           std::tuple{rx, "receiving", b.rx, b.rx_mad, reason::kLinkBwLowRx}}) {
    if (v < need) {
      out.push_back(
          {link, FindingKind::bandwidth,
           fmt::format("{} {:.3f} GB/s < {:.0f}% of line rate {:.3f} GB/s", dir, v, t.bw_min_fraction * 100, line), v,
           need, "GB/s", code});
    } else if (low_outlier(v, med, spread, t)) {
      out.push_back(
          {link, FindingKind::bandwidth,
           fmt::format("{} {:.3f} GB/s, {:.0f}% below the rail's median {:.3f} GB/s", dir, v, (1 - v / med) * 100, med),
           v, med, "GB/s", code});
    }
  }
  // Slow both ways (the cable, optic or port speed) is another fault than one way only
  // (one fibre or lane, a pause storm one way).
  if (out.size() == 2)
    for (Suspect& x : out) x.code = reason::kLinkBwLowBoth;
  const double need_bidir = t.bidir_min_fraction * 2 * line;
  if (out.empty() && bidir > 0 && (bidir < need_bidir || low_outlier(bidir, b.bidir, b.bidir_mad, t))) {
    out.push_back(
        {link, FindingKind::bidirectional,
         fmt::format("both directions {:.3f} GB/s (need {:.3f}, rail median {:.3f})", bidir, need_bidir, b.bidir),
         bidir, std::max(need_bidir, b.bidir), "GB/s", reason::kLinkBidirLow});
  }
  if (t.lat_p50_max_us > 0 && lat_p50 > t.lat_p50_max_us) {
    out.push_back({link, FindingKind::latency,
                   fmt::format("p50 {:.1f} us > limit {:.1f} us", lat_p50, t.lat_p50_max_us), lat_p50, t.lat_p50_max_us,
                   "us", reason::kLinkLatP50High});
  } else if (high_latency(lat_p50, b.lat, b.lat_mad, t)) {
    out.push_back({link, FindingKind::latency,
                   fmt::format("p50 {:.1f} us, {:.1f}x the rail's median {:.1f} us", lat_p50, lat_p50 / b.lat, b.lat),
                   lat_p50, b.lat, "us", reason::kLinkLatP50High});
  } else if (t.lat_p99_max_us > 0 && lat_p99 > t.lat_p99_max_us) {
    out.push_back({link, FindingKind::latency,
                   fmt::format("p99 {:.1f} us > limit {:.1f} us", lat_p99, t.lat_p99_max_us), lat_p99, t.lat_p99_max_us,
                   "us", reason::kLinkLatP99High});
  }
  return out;
}

// A link's window spread without its pair tests with partners whose links went down:
// those stalls are the partner's (its own link going down keeps them all).
double own_spread(const LinkStats& l, const std::vector<LinkStats>& rail) {
  if (l.downs > 0) return l.spread;
  std::vector<double> kept;
  for (const auto& [partner, spread] : l.spreads)
    if (rail.at(partner).downs == 0) kept.push_back(spread);
  return kept.empty() ? l.spread : median(kept);
}

// Trouble a link shows in its own figures, whoever its partners were: it went down, most
// partners could not reach it, its bandwidth or latency fails a check, or its windows are
// far less steady than the rail's. Such a link explains a pair test with it that did
// not finish; its partner in that test is not to blame for it.
bool own_trouble(const SuConfig& c, const std::vector<LinkStats>& rail, const LinkStats& l, const RailBaseline& b) {
  if (l.pairs == 0) return false;
  if (l.downs > 0 || unreachable(l)) return true;
  if (!check(c, l.link, l.tx, l.rx, l.bidir, l.lat_p50, l.lat_p99, b).empty()) return true;
  return unsteady(own_spread(l, rail), b.spread, b.spread_mad, c.thresholds);
}

// The signs of an intermittent link in its pair tests (its counters aside): pair tests
// cut off with some partners (fewer than half: more is unreachable), unless the partner
// explains it (trouble of its own, see own_trouble, or cut off with more partners than
// this link); and windows far less steady than the rail's.
std::vector<Suspect> intermittent(const SuConfig& c, const std::vector<LinkStats>& rail, const LinkStats& l,
                                  const RailBaseline& b, const std::vector<bool>& troubled) {
  std::vector<Suspect> out;
  int unexplained = 0;
  for (int p : l.failed_with) {
    const LinkStats& o = rail.at(p);
    if (!troubled.at(p) && o.failed <= l.failed) ++unexplained;
  }
  if (unexplained > 0) {
    out.push_back({l.link, FindingKind::intermittent,
                   fmt::format("pair tests with {} of {} partners did not finish while the others did: reachable in "
                               "one round, not in another",
                               l.failed, l.pairs),
                   static_cast<double>(l.pairs - l.failed), static_cast<double>(l.pairs), "partners",
                   reason::kLinkCutOff});
  }
  if (const double spread = own_spread(l, rail); unsteady(spread, b.spread, b.spread_mad, c.thresholds)) {
    out.push_back({l.link, FindingKind::intermittent,
                   fmt::format("unsteady: its slowest timed windows ran {:.0f}% below their median (the rail's "
                               "median link: {:.0f}%)",
                               spread * 100, b.spread * 100),
                   spread, b.spread, "spread", reason::kLinkUnsteady});
  }
  return out;
}

}  // namespace

const char* to_string(Severity s) {
  switch (s) {
    case Severity::fail: return "FAIL";
    case Severity::warn: return "WARN";
  }
  return "?";
}

const char* to_string(FindingKind k) {
  switch (k) {
    case FindingKind::inventory: return "inventory";
    case FindingKind::unreachable: return "unreachable";
    case FindingKind::bandwidth: return "bandwidth";
    case FindingKind::bidirectional: return "bidirectional";
    case FindingKind::latency: return "latency";
    case FindingKind::cross_rail: return "cross-rail";
    case FindingKind::collective: return "collective";
    case FindingKind::intermittent: return "intermittent";
    case FindingKind::baseline: return "baseline";
    case FindingKind::counters: return "counters";
    case FindingKind::cabling: return "cabling";
    case FindingKind::isolation: return "isolation";
    case FindingKind::interference: return "interference";
    case FindingKind::bisection: return "bisection";
    case FindingKind::fabric: return "fabric";
    case FindingKind::history: return "history";
  }
  return "?";
}

const char* to_string(PairPhase p) {
  switch (p) {
    case PairPhase::rail: return "rail";
    case PairPhase::cross: return "cross";
    case PairPhase::retest: return "retest";
  }
  return "?";
}

Severity parse_severity(const std::string& word, const std::string& field) {
  return parse_word(word, field, {Severity::fail, Severity::warn});
}

FindingKind parse_finding_kind(const std::string& word, const std::string& field) {
  return parse_word(
      word, field,
      {FindingKind::inventory, FindingKind::unreachable, FindingKind::bandwidth, FindingKind::bidirectional,
       FindingKind::latency, FindingKind::cross_rail, FindingKind::collective, FindingKind::intermittent,
       FindingKind::baseline, FindingKind::counters, FindingKind::cabling, FindingKind::isolation,
       FindingKind::interference, FindingKind::bisection, FindingKind::fabric, FindingKind::history});
}

PairPhase parse_pair_phase(const std::string& word, const std::string& field) {
  return parse_word(word, field, {PairPhase::rail, PairPhase::cross, PairPhase::retest});
}

void to_json(nlohmann::json& j, Severity s) {
  j = to_string(s);
}

void to_json(nlohmann::json& j, FindingKind k) {
  j = to_string(k);
}

void to_json(nlohmann::json& j, PairPhase p) {
  j = to_string(p);
}

void to_json(nlohmann::json& j, const PairResult& p) {
  j = nlohmann::json{{"phase", to_string(p.phase)},
                     {"node_a", p.node_a},
                     {"node_b", p.node_b},
                     {"rail_a", p.rail_a},
                     {"rail_b", p.rail_b},
                     {"ok", p.ok},
                     {"error", p.error},
                     {"bw_ab", p.bw_ab},
                     {"bw_ba", p.bw_ba},
                     {"bidir", p.bidir},
                     {"lat_p50", p.lat_p50},
                     {"lat_p99", p.lat_p99},
                     {"lat_p999", p.lat_p999},
                     {"bw_spread", p.bw_spread},
                     {"test_s", p.test_s}};
  if (!p.counters_a.is_null()) j["counters_a"] = p.counters_a;
  if (!p.counters_b.is_null()) j["counters_b"] = p.counters_b;
}

void from_json(const nlohmann::json& j, PairResult& p) {
  p.phase = parse_pair_phase(j.at("phase").get<std::string>(), "phase");
  p.node_a = j.at("node_a"), p.node_b = j.at("node_b");
  p.rail_a = j.at("rail_a"), p.rail_b = j.at("rail_b");
  p.ok = j.at("ok"), p.error = j.at("error");
  p.bw_ab = j.at("bw_ab"), p.bw_ba = j.at("bw_ba"), p.bidir = j.at("bidir");
  p.lat_p50 = j.at("lat_p50"), p.lat_p99 = j.at("lat_p99"), p.lat_p999 = j.at("lat_p999");
  p.bw_spread = j.value("bw_spread", 0.0);  // absent from results written before it existed
  p.counters_a = j.value("counters_a", nlohmann::json());
  p.counters_b = j.value("counters_b", nlohmann::json());
  p.test_s = j.value("test_s", 0.0);  // likewise
}

double window_spread(const std::vector<double>& gbps) {
  if (gbps.size() < 2) return 0;
  const double med = median(gbps);
  if (med <= 0) return 0;
  return std::clamp(1 - *std::min_element(gbps.begin(), gbps.end()) / med, 0.0, 1.0);
}

std::string code_of(const Finding& f) {
  return f.code.empty() ? reason_code(f.kind) : f.code;
}

void to_json(nlohmann::json& j, const Finding& f) {
  j = nlohmann::json{{"severity", to_string(f.severity)},
                     {"kind", to_string(f.kind)},
                     {"code", code_of(f)},
                     {"subject", f.subject},
                     {"reason", f.reason},
                     {"measured", f.measured},
                     {"expected", f.expected},
                     {"unit", f.unit}};
  if (f.node >= 0) j["node"] = f.node;
  if (f.rail >= 0) j["rail"] = f.rail;
  if (!f.fabric_link.empty()) j["fabric_link"] = f.fabric_link;
}

void from_json(const nlohmann::json& j, Finding& f) {
  f.severity = parse_severity(j.at("severity").get<std::string>(), "severity");
  f.kind = parse_finding_kind(j.at("kind").get<std::string>(), "kind");
  f.code = j.value("code", std::string(reason_code(f.kind)));  // absent before codes existed
  f.subject = j.value("subject", std::string());
  f.reason = j.value("reason", std::string());
  f.measured = j.value("measured", 0.0), f.expected = j.value("expected", 0.0);
  f.unit = j.value("unit", std::string());
  f.node = j.value("node", -1), f.rail = j.value("rail", -1);
  f.fabric_link = j.value("fabric_link", std::string());
}

std::string link_name(const SuConfig& config, const std::vector<std::string>& node_names, LinkId link) {
  const std::string& node = node_names.at(link.node);
  return fmt::format("{} rail{} ({})", node, link.rail, config.rails.at(link.rail).leaf_of(node));
}

std::vector<std::vector<LinkStats>> link_stats(const SuConfig& config, int nodes, const std::vector<PairResult>& rail) {
  std::vector<std::vector<LinkStats>> out(config.num_rails(), std::vector<LinkStats>(nodes));
  struct Acc {
    std::vector<double> tx, rx, bidir, p50, p99, spread;
  };
  std::vector<std::vector<Acc>> acc(config.num_rails(), std::vector<Acc>(nodes));
  for (const auto& p : rail) {
    if (p.rail_a != p.rail_b) continue;
    for (int side = 0; side < 2; ++side) {
      const int node = side == 0 ? p.node_a : p.node_b;
      LinkStats& s = out[p.rail_a][node];
      s.link = {node, p.rail_a};
      ++s.pairs;
      if (!p.ok) {
        ++s.failed;
        s.failed_with.push_back(side == 0 ? p.node_b : p.node_a);
        continue;
      }
      Acc& a = acc[p.rail_a][node];
      s.spreads.emplace_back(side == 0 ? p.node_b : p.node_a, p.bw_spread);
      a.tx.push_back(side == 0 ? p.bw_ab : p.bw_ba);
      a.rx.push_back(side == 0 ? p.bw_ba : p.bw_ab);
      a.bidir.push_back(p.bidir);
      a.p50.push_back(p.lat_p50);
      a.p99.push_back(p.lat_p99);
      a.spread.push_back(p.bw_spread);
    }
  }
  for (int r = 0; r < config.num_rails(); ++r) {
    for (int n = 0; n < nodes; ++n) {
      LinkStats& s = out[r][n];
      s.link = {n, r};
      const Acc& a = acc[r][n];
      s.tx = median(a.tx), s.rx = median(a.rx), s.bidir = median(a.bidir);
      s.lat_p50 = median(a.p50), s.lat_p99 = median(a.p99);
      s.spread = median(a.spread);
    }
  }
  return out;
}

std::vector<Suspect> find_suspects(const SuConfig& config, const std::vector<std::vector<LinkStats>>& stats) {
  std::vector<Suspect> out;
  for (size_t r = 0; r < stats.size(); ++r) {
    const RailBaseline b = baseline(stats[r]);
    std::vector<bool> troubled;
    for (const auto& l : stats[r]) troubled.push_back(own_trouble(config, stats[r], l, b));
    for (const auto& l : stats[r]) {
      if (l.pairs == 0) continue;
      // Most of its partners could not be reached: the link, not the partners. Exactly
      // half (two nodes, one pair) also counts: the re-test decides which end.
      if (unreachable(l)) {
        out.push_back(
            {l.link, FindingKind::unreachable,
             fmt::format("no traffic with {} of {} partners within the deadline{}", l.failed, l.pairs,
                         l.downs > 0 ? fmt::format("; its link went down {} time(s) meanwhile", l.downs) : ""),
             static_cast<double>(l.pairs - l.failed), static_cast<double>(l.pairs), "partners",
             reason::kLinkUnreachable});
        continue;
      }
      std::vector<Suspect> found;
      if (l.downs > 0) {
        found.push_back({l.link, FindingKind::intermittent,
                         fmt::format("the link went down {} time(s) during its pair tests (the NIC's carrier_changes / "
                                     "link_downed counters)",
                                     l.downs),
                         static_cast<double>(l.downs), 0, "link downs", reason::kLinkFlapping});
      }
      const auto checked = check(config, l.link, l.tx, l.rx, l.bidir, l.lat_p50, l.lat_p99, b);
      found.insert(found.end(), checked.begin(), checked.end());
      const auto flaky = intermittent(config, stats[r], l, b, troubled);
      found.insert(found.end(), flaky.begin(), flaky.end());
      if (found.empty()) continue;
      // One suspect per link. A link that went down leads: that explains the rest. Then
      // added latency: over a window-limited protocol it also costs bandwidth, so it is
      // the likelier cause.
      const auto lead =
          std::find_if(found.begin(), found.end(), [](const Suspect& x) { return x.kind == FindingKind::latency; });
      const size_t first = l.downs > 0 || lead == found.end() ? 0 : static_cast<size_t>(lead - found.begin());
      Suspect s = found[first];
      for (size_t i = 0; i < found.size(); ++i)
        if (i != first) s.reason += "; also " + found[i].reason;
      out.push_back(s);
    }
  }
  return out;
}

std::vector<std::vector<Retest>> plan_retests(const std::vector<Suspect>& suspects,
                                              const std::vector<std::vector<LinkStats>>& stats,
                                              const std::vector<int>& tenant_of, const std::vector<int>& su_of) {
  auto same_tenant = [&](int a, int b) { return tenant_of.empty() || tenant_of.at(a) == tenant_of.at(b); };
  auto same_su = [&](int a, int b) { return !su_of.empty() && su_of.at(a) >= 0 && su_of.at(a) == su_of.at(b); };
  std::vector<std::vector<Retest>> rounds;
  std::set<std::pair<int, int>> bad;  // (rail, node)
  for (const auto& s : suspects) bad.insert({s.link.rail, s.link.node});
  for (const auto& s : suspects) {
    // An unreachable link was already tried against every partner, each of which
    // reached its other partners: another attempt would only wait out the deadline.
    if (s.kind == FindingKind::unreachable) continue;
    // Good partners on the suspect's rail, best sender first.
    std::vector<const LinkStats*> good;
    for (const auto& l : stats[s.link.rail]) {
      if (l.link.node != s.link.node && l.pairs > 0 && 2 * l.failed < l.pairs &&
          !bad.count({s.link.rail, l.link.node}) && same_tenant(l.link.node, s.link.node)) {
        good.push_back(&l);
      }
    }
    if (good.empty()) continue;
    // On a fabric, a partner in the suspect's own SU first: on its rail that is its own
    // leaf, so the re-test crosses no spine and a fabric link's fault cannot confirm a
    // host's suspicion (the fabric phase names such a link).
    const int me = s.link.node;
    std::sort(good.begin(), good.end(), [&](const LinkStats* a, const LinkStats* b) {
      const bool sa = same_su(me, a->link.node), sb = same_su(me, b->link.node);
      return sa != sb ? sa : a->tx > b->tx;
    });
    // First round where neither node is busy (every rank takes one pair per round).
    const int partner = good.front()->link.node;
    size_t k = 0;
    for (; k < rounds.size(); ++k) {
      bool busy = false;
      for (const auto& t : rounds[k]) {
        for (int n : {t.suspect.node, t.partner}) {
          if ((n == s.link.node || n == partner) && t.suspect.rail == s.link.rail) busy = true;
        }
      }
      if (!busy) break;
    }
    if (k == rounds.size()) rounds.emplace_back();
    rounds[k].push_back({s.link, partner});
  }
  return rounds;
}

namespace {

// The leaf-spine links at fault (indices into config.fabric.links) on the way from
// node_a's NIC on rail_a to node_b's on rail_b: those of either end's leaf, when the
// two leaves differ (the way crosses a spine). "" when none, or no fabric.
std::string fabric_fault_between(const SuConfig& config, const std::string& node_a, int rail_a,
                                 const std::string& node_b, int rail_b, const std::vector<int>& at_fault) {
  const SuFabric& f = config.fabric;
  if (at_fault.empty() || !f.present()) return "";
  const int leaf_a = f.leaf_index(f.su_of(node_a), rail_a), leaf_b = f.leaf_index(f.su_of(node_b), rail_b);
  if (leaf_a < 0 || leaf_b < 0 || leaf_a == leaf_b) return "";
  std::string out;
  for (int link : at_fault) {
    const FabricLink& l = f.links.at(link);
    if (l.leaf == f.leaves[leaf_a].name || l.leaf == f.leaves[leaf_b].name) out += (out.empty() ? "" : ", ") + l.name;
  }
  return out;
}

// What the re-test of suspect `s` (`rt`, against a good partner) says: the finding
// keeps FAIL when it confirms the suspicion, becomes WARN when the link passed, or
// when it crossed a leaf-spine link the fabric phase found bad (`at_fault`): then the
// re-test cannot tell the NIC from that link, and no host is drained for a switch's fault.
void judge_retest(const SuConfig& config, const std::vector<std::string>& node_names, const LinkStats& mine,
                  const std::vector<LinkStats>& rail, const Suspect& s, const PairResult& rt,
                  const std::vector<int>& at_fault, Finding& f) {
  const std::string partner = node_names.at(rt.node_b);
  const RailBaseline b = baseline(rail);
  // A re-test confirms the suspicion it was for: a link suspected for its bandwidth by its
  // bandwidth again, not by a latency that a shared host's scheduler made (16 ranks on 2
  // cores: a lone re-test pair's p50 went from the rail's 15 us to 4-5 ms while its
  // bandwidth was the rail's). Another problem in the re-test is noted on the finding.
  std::vector<Suspect> again, besides;
  if (rt.ok)
    for (auto& x : check(config, s.link, rt.bw_ab, rt.bw_ba, rt.bidir, rt.lat_p50, rt.lat_p99, b))
      (s.kind == FindingKind::intermittent || x.kind == s.kind ? again : besides).push_back(std::move(x));
  const bool unsteady_again = rt.ok && unsteady(rt.bw_spread, b.spread, b.spread_mad, config.thresholds);
  const bool confirmed = !rt.ok || !again.empty() || unsteady_again;
  const std::string noted =
      besides.empty()
          ? ""
          : fmt::format("; its re-test showed another problem, not confirming this one: {}", besides.front().reason);
  if (confirmed && mine.retest_downs == 0) {
    const std::string past =
        fabric_fault_between(config, node_names.at(rt.node_a), rt.rail_a, partner, rt.rail_b, at_fault);
    if (!past.empty()) {
      f.severity = Severity::warn;
      f.reason += fmt::format(
          "; not confirmed: its re-test against {} crossed the spines, and the fabric phase found {} bad on the way "
          "between their leaves; the re-test was {}: re-test it once the fabric link is mended",
          partner, past, rt.ok ? "slow too" : "cut");
      return;
    }
  }
  if (!rt.ok) {
    f.reason += fmt::format("; confirmed: re-test against {} failed too ({})", partner, rt.error);
    return;
  }
  if (!again.empty()) {
    f.reason += fmt::format("; confirmed against {}: {}", partner, again.front().reason);
  } else if (mine.retest_downs > 0) {
    f.reason += fmt::format("; confirmed: the link went down {} time(s) during its re-test against {}",
                            mine.retest_downs, partner);
  } else if (unsteady_again) {
    f.reason += fmt::format("; confirmed: unsteady again against {} (slowest window {:.0f}% below the median)", partner,
                            rt.bw_spread * 100);
  } else if (s.kind == FindingKind::intermittent) {
    f.severity = Severity::warn;
    f.reason += fmt::format("; passed a re-test against {}", partner);
  } else if (const int su = config.fabric.su_of(node_names.at(rt.node_a));
             su >= 0 && su == config.fabric.su_of(partner)) {
    // Its pairs across the spines were slow, its leaf's own pair is fine: the fabric. Its
    // pairs left its leaf for the rail's leaves in other SUs: a link at fault on any of
    // those leaves' uplinks may have been on their way.
    f.severity = Severity::warn;
    std::string on_rail;
    for (int link : at_fault) {
      const FabricLink& l = config.fabric.links.at(link);
      const auto& rails = config.fabric.leaves.at(config.fabric.leaf_named(l.leaf)).rails;
      if (std::find(rails.begin(), rails.end(), rt.rail_a) != rails.end())
        on_rail += (on_rail.empty() ? "" : ", ") + l.name;
    }
    f.reason += on_rail.empty()
                    ? fmt::format(
                          "; not confirmed: passed a re-test against {} on its own leaf (no spine crossed): its "
                          "slow pairs crossed the spines, where the fabric phase found no link bad: "
                          "intermittent, or a fault its flows missed",
                          partner)
                    : fmt::format(
                          "; not confirmed: passed a re-test against {} on its own leaf (no spine crossed): "
                          "its slow pairs crossed the spines, where the fabric phase found {} bad: most "
                          "likely that",
                          partner, on_rail);
  } else {
    f.severity = Severity::warn;
    f.reason += fmt::format("; not confirmed: passed a re-test against {} (intermittent?)", partner);
  }
  if (f.severity == Severity::warn) f.reason += noted;
}

// The nodes a suspect's fault may lie with when no good partner could re-test it: its
// own, and the partners whose pair tests with it failed (unreachable) or, for a slow
// link, every partner it was measured against.
std::vector<int> either_end(const std::vector<LinkStats>& rail, const Suspect& s) {
  std::set<int> ends{s.link.node};
  const LinkStats& mine = rail[s.link.node];
  if (s.kind == FindingKind::unreachable && !mine.failed_with.empty()) {
    ends.insert(mine.failed_with.begin(), mine.failed_with.end());
  } else {
    for (const auto& l : rail)
      if (l.pairs > 0) ends.insert(l.link.node);
  }
  return {ends.begin(), ends.end()};
}

// A link that went down this often is flapping, whatever its re-test showed.
bool flapping(const SuConfig& config, int downs) {
  return downs > 0 && downs >= config.thresholds.link_downs_fail;
}

// Cross-rail spot checks: the path through the spine. A pair explained by a link
// already blamed (`blamed`: (rail, node)) is not a second finding.
void judge_cross(const SuConfig& config, const std::vector<std::string>& node_names,
                 const std::vector<PairResult>& cross, const std::set<std::pair<int, int>>& blamed,
                 const std::vector<int>& fabric_at_fault, std::vector<Finding>& out) {
  std::vector<double> xs;
  for (const auto& p : cross)
    if (p.ok) xs.push_back(std::min(p.bw_ab, p.bw_ba));
  const double xmed = median(xs);
  const double xspread = scaled_mad(xs);
  for (const auto& p : cross) {
    if (blamed.count({p.rail_a, p.node_a}) || blamed.count({p.rail_b, p.node_b})) continue;
    const std::string subject =
        fmt::format("{} rail{} -> {} rail{} ({} -> spine -> {})", node_names.at(p.node_a), p.rail_a,
                    node_names.at(p.node_b), p.rail_b, config.rails[p.rail_a].leaf_of(node_names.at(p.node_a)),
                    config.rails[p.rail_b].leaf_of(node_names.at(p.node_b)));
    const double line = std::min(line_gbytes(config.rails[p.rail_a]), line_gbytes(config.rails[p.rail_b]));
    const double need = cross_rail_need(config, p);
    const double v = std::min(p.bw_ab, p.bw_ba);
    // Either end or the spine between: listed with both ends, never one node's.
    const std::vector<int> ends{p.node_a, p.node_b};
    const size_t before = out.size();
    if (!p.ok) {
      out.push_back({Severity::fail, FindingKind::cross_rail, subject, "no traffic within the deadline: " + p.error, 0,
                     need, "GB/s", -1, -1, ends, reason::kCrossRailUnreachable});
    } else if (v < need) {
      out.push_back({Severity::fail, FindingKind::cross_rail, subject,
                     fmt::format("{:.3f} GB/s < {:.0f}% of line rate {:.3f} GB/s", v,
                                 config.thresholds.bw_min_fraction * 100, line),
                     v, need, "GB/s", -1, -1, ends, reason::kCrossRailBwLow});
    } else if (low_outlier(v, xmed, xspread, config.thresholds)) {
      out.push_back(
          {Severity::fail, FindingKind::cross_rail, subject,
           fmt::format("{:.3f} GB/s, {:.0f}% below the cross-rail median {:.3f} GB/s", v, (1 - v / xmed) * 100, xmed),
           v, xmed, "GB/s", -1, -1, ends, reason::kCrossRailBwLow});
    }
    // Its way crossed a leaf-spine link the fabric phase found bad: that link, most likely.
    const std::string past = fabric_fault_between(config, node_names.at(p.node_a), p.rail_a, node_names.at(p.node_b),
                                                  p.rail_b, fabric_at_fault);
    if (out.size() > before && !past.empty()) {
      out.back().severity = Severity::warn;
      out.back().reason +=
          fmt::format("; the fabric phase found {} bad on the way between their leaves: most likely that", past);
    }
  }
}

}  // namespace

std::vector<Finding> judge_links(const SuConfig& config, const std::vector<std::string>& node_names,
                                 const std::vector<std::vector<LinkStats>>& stats, const std::vector<Suspect>& suspects,
                                 const std::vector<PairResult>& retests, const std::vector<PairResult>& cross,
                                 const std::vector<int>& fabric_at_fault) {
  std::vector<Finding> out;
  std::set<std::pair<int, int>> blamed;  // (rail, node) of links found bad or intermittent
  for (const auto& s : suspects) {
    Finding f{Severity::fail, s.kind,      link_name(config, node_names, s.link),
              s.reason,       s.measured,  s.expected,
              s.unit,         s.link.node, s.link.rail};
    f.code = s.code;
    const PairResult* rt = nullptr;
    for (const auto& p : retests)
      if (p.node_a == s.link.node && p.rail_a == s.link.rail) rt = &p;
    const auto& mine = stats[s.link.rail][s.link.node];
    const bool others_fine = std::all_of(stats[s.link.rail].begin(), stats[s.link.rail].end(), [&](const LinkStats& l) {
      return l.link.node == s.link.node || l.pairs == 0 || 2 * l.failed < l.pairs;
    });
    if (s.kind == FindingKind::unreachable && others_fine && mine.pairs > 1) {
      f.reason += "; its partners reached their other partners, so the fault is on this link";
    } else if (rt) {
      judge_retest(config, node_names, mine, stats[s.link.rail], s, *rt, fabric_at_fault, f);
    } else if (mine.downs > 0) {
      // Its own counters say it went down: no doubt which end, only whether it lasts.
      f.severity = Severity::warn;
      f.reason += "; no good partner left to re-test against";
    } else {
      // No good partner on the rail (two nodes, or every partner suspect too).
      f.reason += "; no good partner left to re-test against, so either end may be at fault";
      f.ends = either_end(stats[s.link.rail], s);
    }
    const int downs = mine.downs + mine.retest_downs;
    if (f.severity == Severity::warn && flapping(config, downs)) {
      f.severity = Severity::fail;
      f.reason += fmt::format("; but {} link downs reach link_downs_fail ({}): a flapping link", downs,
                              config.thresholds.link_downs_fail);
    } else if (f.severity == Severity::warn && s.kind == FindingKind::intermittent) {
      f.reason += ": watch it, and run validate again";
    }
    if (f.severity == Severity::fail || s.kind == FindingKind::intermittent) blamed.insert({s.link.rail, s.link.node});
    out.push_back(f);
  }
  judge_cross(config, node_names, cross, blamed, fabric_at_fault, out);
  return out;
}

void judge_link_downs(const SuConfig& config, const std::vector<std::string>& node_names,
                      const std::vector<std::vector<LinkStats>>& stats, std::vector<Finding>& findings) {
  for (const auto& rail : stats) {
    for (const auto& l : rail) {
      const int total = l.total_downs();
      if (total == 0) continue;
      const auto it = std::find_if(findings.begin(), findings.end(), [&](const Finding& f) {
        return f.node == l.link.node && f.rail == l.link.rail && f.kind != FindingKind::inventory;
      });
      if (it != findings.end()) {
        if (it->severity == Severity::warn && flapping(config, total)) {
          it->severity = Severity::fail;
          it->reason += fmt::format("; but {} link downs in the run reach link_downs_fail ({}): a flapping link", total,
                                    config.thresholds.link_downs_fail);
        }
        continue;
      }
      findings.push_back(coded(
          {flapping(config, total) ? Severity::fail : Severity::warn, FindingKind::intermittent,
           link_name(config, node_names, l.link),
           fmt::format("the link went down {} time(s) after its pair tests ({} during the re-tests, {} after them), "
                       "so nothing re-tested it: run validate again",
                       total, l.retest_downs, l.late_downs),
           static_cast<double>(total), 0, "link downs", l.link.node, l.link.rail},
          reason::kLinkFlapping));
    }
  }
}

void sort_findings(std::vector<Finding>& findings) {
  auto badness = [](const Finding& f) {
    if (f.expected <= 0) return 0.0;
    // How far from expected: bandwidth below (ratio < 1) or latency above (ratio > 1).
    const double ratio = f.measured / f.expected;
    return f.unit == "us" ? 1 / std::max(ratio, 1e-9) : ratio;
  };
  std::stable_sort(findings.begin(), findings.end(), [&](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity == Severity::fail;
    return badness(a) < badness(b);
  });
}

}  // namespace railbench
