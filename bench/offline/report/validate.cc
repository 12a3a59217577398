// validate: the verdict, per-rail lines, findings (each linked to its cells), heatmaps,
// re-tests, the inventory with its mismatches marked, and the collectives against their
// thresholds.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "bench/offline/report/html.h"
#include "bench/offline/report/validate_data.h"
#include "lib/core/stats.h"

namespace railbench::report {

namespace {

std::string banner(const nlohmann::json& doc, const ValidateRun& v) {
  const std::string verdict = text_at(doc, "verdict", "");
  int fails = 0, warns = 0;
  std::vector<std::string> bad, fabric;
  for (const auto& f : v.findings) {
    fails += f.severity == "FAIL";
    warns += f.severity == "WARN";
    if (f.severity == "FAIL" && f.node >= 0) bad.push_back(f.subject);
    // A switch link: "su1-leaf0 port spine2 <-> spine2 port s1l0 (su1-leaf0-spine2)".
    if (f.severity == "FAIL" && f.kind == "fabric" && f.subject.ends_with(")"))
      fabric.push_back(f.subject.substr(f.subject.rfind('(') + 1, f.subject.size() - f.subject.rfind('(') - 2));
  }
  for (auto* list : {&bad, &fabric}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  std::string detail;
  for (const auto& b : bad) detail += (detail.empty() ? "bad links: " : ", ") + b;
  if (!fabric.empty()) detail += detail.empty() ? "" : "; ";
  for (size_t i = 0; i < fabric.size(); ++i) detail += (i == 0 ? "bad fabric links: " : ", ") + fabric[i];
  if (verdict.empty())
    return fmt::format(
        "<div class=\"banner warn\">No verdict: the run ended before it judged the SU ({} finding(s) so far)."
        "<small>{}</small></div>\n",
        v.findings.size(), esc(detail));
  const bool pass = verdict == "PASS";
  return fmt::format(
      "<div class=\"banner {}\">{}: {} failure(s), {} warning(s) over {} node(s) x {} rail(s)"
      "<small>{}</small></div>\n",
      pass ? (warns ? "warn" : "pass") : "fail", esc(verdict), fails, warns, v.nodes.size(), v.rails().size(),
      esc(detail.empty() ? "every link within its thresholds" : detail));
}

std::string rail_table(const ValidateRun& v) {
  Table t({"rail", "leaf", "nic", "links", "tx min<br>(GB/s)", "tx median<br>(GB/s)", "line rate<br>(GB/s)",
           "p50 median<br>(us)", "p99 max<br>(us)", "downs<br>(links)", "verdict"});
  for (const auto& r : v.rails()) {
    const int rail = r.value("rail", 0);
    std::vector<double> tx, p50, p99;
    int measured = 0, downs = 0;
    const auto links = r.value("links", nlohmann::json::array());
    for (const auto& l : links) {
      const double x = number_at(l, "tx_gbs");
      if (number_at(l, "pairs") > number_at(l, "failed")) ++measured;
      if (!std::isnan(x) && number_at(l, "pairs") > 0) tx.push_back(x);
      p50.push_back(number_at(l, "lat_p50_us"));
      p99.push_back(number_at(l, "lat_p99_us"));
      downs += number_at(l, "link_downs") > 0;
    }
    std::sort(tx.begin(), tx.end());
    std::erase_if(p50, [](double x) { return std::isnan(x); });
    std::sort(p50.begin(), p50.end());
    double p99max = NAN;
    for (double x : p99)
      if (!std::isnan(x)) p99max = std::isnan(p99max) ? x : std::max(p99max, x);
    bool fail = false, warn = false;
    for (const auto& f : v.findings)
      if (f.rail == rail) fail = fail || f.severity == "FAIL", warn = warn || f.severity == "WARN";
    t.row({fmt::format("{}", rail), esc(text_at(r, "leaf")), esc(text_at(r, "nic")),
           fmt::format("{}/{}", measured, links.size()), num(tx.empty() ? NAN : tx.front()),
           num(tx.empty() ? NAN : median(tx)), num(number_at(r, "line_rate_gbps") / 8),
           num(p50.empty() ? NAN : median(p50)), num(p99max), fmt::format("{}", downs),
           fail   ? "FAIL"
           : warn ? "WARN"
                  : "PASS"},
          fail   ? "bad"
          : warn ? "warn"
                 : "");
  }
  return t.html();
}

std::string findings_table(const RunContext& ctx, const nlohmann::json& doc, const ValidateRun& v) {
  if (v.findings.empty()) return "<h3>Findings</h3><p class=\"note\">None: every check passed.</p>\n";
  Table t({"#", "verdict", "check", "where", "measured", "expected", "reason"}, "findings");
  const auto raw = doc.value("findings", nlohmann::json::array());
  for (size_t i = 0; i < v.findings.size(); ++i) {
    const auto& f = v.findings[i];
    const auto& j = raw[i];
    std::string where = esc(f.subject);
    if (f.node >= 0 && f.rail >= 0)
      where = fmt::format("<a href=\"#{}\">{}</a>", link_anchor(ctx, v, f.rail, f.node), where);
    const std::string unit = text_at(j, "unit");
    // The reason code a scheduler or a ticket keys on (the validate guide's table); a file
    // from before the codes has none, and its kind says what it was.
    const std::string code = text_at(j, "code");
    const std::string check = code.empty() ? esc(f.kind) : fmt::format("{}<br><code>{}</code>", esc(f.kind), esc(code));
    t.row({fmt::format("{}", f.number), esc(f.severity), check, where, num(number_at(j, "measured")) + " " + esc(unit),
           num(number_at(j, "expected")) + " " + esc(unit), esc(f.reason)},
          f.severity == "FAIL"   ? "bad"
          : f.severity == "WARN" ? "warn"
                                 : "",
          fmt::format("{}-finding-{}", ctx.id, f.number));
  }
  return std::string("<h3>Findings, worst first</h3><p class=\"note\">") +
         (v.aggregated() ? "A finding's link opens its node's cell in the rail's node strip; its blocks and cells are "
                           "outlined."
                         : "A finding's link opens its row in the bandwidth heatmap; its cells are outlined in every "
                           "heatmap.") +
         "</p>" + t.html();
}

std::string pair_tests_table(const ValidateRun& v, const nlohmann::json& pairs, const char* title) {
  if (!pairs.is_array() || pairs.empty()) return "";
  Table t({"a", "b", "rail a", "rail b", "a->b (GB/s)", "b->a (GB/s)", "both (GB/s)", "p50 (us)", "p99 (us)",
           "p99.9 (us)", "spread", "error"});
  const auto name = [&](const nlohmann::json& p, const char* k) {
    const int i = p.value(k, -1);
    return i >= 0 && i < static_cast<int>(v.nodes.size()) ? v.nodes[i] : fmt::format("node {}", i);
  };
  for (const auto& p : pairs) {
    const bool ok = p.value("ok", false);
    t.row({esc(name(p, "node_a")), esc(name(p, "node_b")), num(number_at(p, "rail_a")), num(number_at(p, "rail_b")),
           num(number_at(p, "bw_ab")), num(number_at(p, "bw_ba")), num(number_at(p, "bidir")),
           num(number_at(p, "lat_p50")), num(number_at(p, "lat_p99")), num(number_at(p, "lat_p999")),
           num(number_at(p, "bw_spread"), 2), esc(text_at(p, "error"))},
          ok ? "" : "bad");
  }
  return fmt::format("<details{}><summary>{} ({})</summary>", pairs.size() <= 16 ? " open" : "", title, pairs.size()) +
         t.html() + "</details>\n";
}

// The inventory, one row per node and slot; a row a finding names is marked, and so is
// a speed or MTU that differs from the rest of its rail.
std::string inventory_table(const nlohmann::json& doc, const ValidateRun& v) {
  const auto inv = doc.value("inventory", nlohmann::json::array());
  if (inv.empty()) return "";
  std::map<int, std::map<std::string, int>> speed_votes, mtu_votes;
  for (const auto& e : inv) {
    const auto nic = e.value("nic", nlohmann::json::object());
    ++speed_votes[e.value("slot", 0)][num(number_at(nic, "speed_gbps"))];
    ++mtu_votes[e.value("slot", 0)][num(number_at(nic, "mtu"))];
  }
  const auto usual = [](const std::map<std::string, int>& votes) {
    return std::max_element(votes.begin(), votes.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  };
  Table t({"node", "slot", "rank", "nic", "found", "state", "speed (Gb/s)", "MTU", "address", "carrier changes",
           "link downed", "finding"});
  // A 1,024 x 8 SU has 8,192 NICs: past this many, only the marked ones get a row.
  constexpr size_t kAllRows = 512;
  const bool all_rows = inv.size() <= kAllRows;
  int marked = 0;
  for (const auto& e : inv) {
    const auto nic = e.value("nic", nlohmann::json::object());
    const int slot = e.value("slot", 0), node = v.node_index(text_at(e, "node"));
    std::string named;
    bool finding = false;
    const auto it = v.by_link.find({node, slot});
    if (it != v.by_link.end())
      for (size_t i : it->second)
        if (v.findings[i].kind == "inventory")
          finding = true, named += fmt::format("#{} {} ", v.findings[i].number, v.findings[i].reason);
    const bool found = nic.value("found", false), up = nic.value("up", false);
    const std::string speed = num(number_at(nic, "speed_gbps")), mtu = num(number_at(nic, "mtu"));
    const auto cell = [](bool odd, const std::string& text) {
      return odd ? "<span class=\"m\">" + text + "</span>" : text;
    };
    const bool odd_speed = speed != usual(speed_votes[slot]), odd_mtu = mtu != usual(mtu_votes[slot]);
    const bool mismatch = finding || !found || !up || odd_speed || odd_mtu;
    marked += mismatch;
    if (!mismatch && !all_rows) continue;
    t.row({esc(text_at(e, "node")), fmt::format("{}", slot), num(number_at(e, "rank")), esc(text_at(nic, "nic")),
           cell(!found, found ? "yes" : "no"), cell(!up, esc(text_at(nic, "state"))), cell(odd_speed, speed),
           cell(odd_mtu, mtu), esc(text_at(nic, "address", text_at(nic, "gid"))),
           num(number_at(nic, "carrier_changes")), num(number_at(nic, "link_downed")), esc(named)},
          mismatch ? "mismatch" : "");
  }
  return fmt::format(
             "<h3>Inventory</h3><p class=\"note\">{} of {} NIC(s) marked: not found, not up, named by a finding, or a "
             "speed or MTU unlike the rest of its rail (in bold).{}</p>",
             marked, inv.size(),
             all_rows ? "" : fmt::format(" More than {} NICs: only the marked ones are listed.", kAllRows)) +
         t.html();
}

std::string collectives_table(const nlohmann::json& doc) {
  const auto it = doc.find("collectives");
  if (it == doc.end()) return "";
  if (it->is_string()) return "<h3>Collectives</h3><p class=\"note\">" + esc(it->get<std::string>()) + "</p>\n";
  if (!it->is_array() || it->empty()) return "";
  Table t({"collective", "algo", "bytes", "ranks", "time (us)", "busbw (GB/s)", "needed (GB/s)", "", "verdict"});
  for (const auto& c : *it) {
    const double busbw = number_at(c, "busbw_gbs"), need = number_at(c, "need_busbw_gbs");
    const std::string error = text_at(c, "error");
    const bool ok = error.empty() && busbw >= need;
    const double fill = need > 0 ? std::clamp(busbw / need, 0.0, 2.0) : 0;
    t.row({esc(text_at(c, "collective")), esc(text_at(c, "algo")), esc(size_label(c.value("bytes", uint64_t{0}))),
           num(number_at(c, "ranks")), num(number_at(c, "time_us"), 4), num(busbw), num(need),
           fmt::format("<span class=\"ratio\" title=\"busbw / needed\"><span style=\"width:{:.0f}px\"></span>"
                       "<i></i></span> {}",
                       fill * 45, pct(busbw / need)),
           ok ? "PASS" : esc("FAIL " + error)},
          ok ? "" : "bad");
  }
  return "<h3>Collectives against their thresholds</h3>" + t.html();
}

}  // namespace

const nlohmann::json& ValidateRun::rails() const {
  static const nlohmann::json kNone = nlohmann::json::array();
  return rails_ ? *rails_ : kNone;
}

int ValidateRun::node_index(const std::string& name) const {
  const auto it = index.find(name);
  return it == index.end() ? -1 : it->second;
}

ValidateRun ValidateRun::read(const nlohmann::json& doc) {
  ValidateRun v;
  if (const auto& rails = member(doc, "rails"); rails.is_array()) v.rails_ = &rails;
  const auto add = [&v](std::string name) {
    if (v.index.try_emplace(name, static_cast<int>(v.nodes.size())).second) v.nodes.push_back(std::move(name));
  };
  for (const auto& r : v.rails())
    if (v.nodes.empty())
      for (const auto& n : member(r, "nodes")) add(n.is_string() ? n.get<std::string>() : n.dump());
  // Before the rail checks, only the inventory names the nodes.
  if (v.nodes.empty())
    for (const auto& e : member(doc, "inventory")) add(text_at(e, "node"));
  int number = 0;
  for (const auto& f : doc.value("findings", nlohmann::json::array())) {
    v.findings.push_back({++number, text_at(f, "severity"), text_at(f, "kind"), text_at(f, "subject"),
                          text_at(f, "reason"), f.value("node", -1), f.value("rail", -1)});
  }
  for (size_t i = 0; i < v.findings.size(); ++i)
    if (v.findings[i].node >= 0 && v.findings[i].rail >= 0)
      v.by_link[{v.findings[i].node, v.findings[i].rail}].push_back(i);
  v.retests = doc.value("retest_pairs", nlohmann::json::array());
  return v;
}

std::string validate_section(const RunContext& ctx) {
  const auto& doc = ctx.run.doc;
  const ValidateRun v = ValidateRun::read(doc);
  std::optional<ValidateRun> base;
  if (ctx.baseline) base.emplace(ValidateRun::read(ctx.baseline->doc));
  const std::vector<RailGrid> grids = read_rail_grids(v, ctx.run.matrices.get());
  const std::vector<WorstLink> worst = worst_links(grids, ctx.options.worst_links);
  std::string out = banner(doc, v);
  out += findings_table(ctx, doc, v);
  out += worst_links_table(ctx, v, grids, worst);
  if (!v.rails().empty()) out += rail_table(v);  // none with --fabric-only
  out += fabric_section(doc);
  if (v.aggregated() && !grids.empty()) {  // no rails measured: validate_heatmaps says so
    out += validate_summary(ctx, v, grids, worst);
    if (base)
      out +=
          "<p class=\"note\">Against the baseline: at this size the report draws no per-link ratio map; "
          "railbench compare judges every link against it.</p>\n";
  } else {
    const std::vector<RailGrid> base_grids =
        base ? read_rail_grids(*base, ctx.baseline->matrices.get()) : std::vector<RailGrid>{};
    out += validate_heatmaps(ctx, v, grids, base ? &*base : nullptr, base_grids, worst);
  }
  out += collectives_table(doc);
  out += pair_tests_table(v, doc.value("retest_pairs", nlohmann::json::array()), "Re-tests");
  out += pair_tests_table(v, doc.value("cross_rail_pairs", nlohmann::json::array()), "Cross-rail spot checks");
  out += inventory_table(doc, v);
  return out;
}

}  // namespace railbench::report
