// validate's fabric phase in the report: the leaf-spine fabric drawn with each link
// coloured by what the phase found on it, the links with evidence against them (votes,
// bad and good flows), and the ECMP balance per leaf. Reads the results' "fabric"
// object (bench/commands/validate/FABRIC.md, "In the results file").
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "bench/offline/report/html.h"
#include "bench/offline/report/validate_data.h"

namespace railbench::report {

namespace {

struct FabricLinkView {
  std::string name, leaf, spine, finding;
  double votes = 0, median_fraction = NAN, chance_p = NAN;
  int bad = 0, good = 0;
  bool failed() const { return finding.rfind("FAIL", 0) == 0; }
  bool warned() const { return !finding.empty() && !failed(); }
  bool by_chance() const { return !std::isnan(chance_p); }
};

std::vector<FabricLinkView> read_links(const nlohmann::json& fabric) {
  std::vector<FabricLinkView> links;
  for (const auto& l : member(fabric, "links")) {
    FabricLinkView v;
    v.name = text_at(l, "link");
    v.leaf = text_at(l, "leaf");
    v.spine = text_at(l, "spine");
    v.finding = text_at(l, "finding");
    v.votes = number_at(l, "votes");
    v.median_fraction = number_at(l, "median_fraction");
    v.chance_p = number_at(l, "chance_p");
    v.bad = static_cast<int>(number_at(l, "bad_flows"));
    v.good = static_cast<int>(number_at(l, "good_flows"));
    if (std::isnan(v.votes)) v.votes = 0;
    links.push_back(std::move(v));
  }
  return links;
}

// Names in the order they first appear (the config's order: SU by SU, rail by rail).
std::vector<std::string> in_order(const std::vector<FabricLinkView>& links, std::string FabricLinkView::*field) {
  std::vector<std::string> names;
  for (const auto& l : links)
    if (!(l.*field).empty() && std::find(names.begin(), names.end(), l.*field) == names.end())
      names.push_back(l.*field);
  return names;
}

const char* link_colour(const FabricLinkView& l) {
  if (l.failed()) return "#d62728";
  if (l.warned() || l.by_chance()) return "#e6a100";
  return l.bad > 0 ? "#8c8c8c" : "#2e8b57";
}

std::string link_title(const FabricLinkView& l) {
  std::string t = fmt::format("{}: {} bad and {} good flow(s), median {} of the expected rate, votes {}", l.name, l.bad,
                              l.good, std::isnan(l.median_fraction) ? "-" : pct(l.median_fraction), num(l.votes));
  if (l.by_chance()) t += fmt::format("; chosen, then left unblamed: chance explains it (p = {})", num(l.chance_p, 2));
  if (!l.finding.empty()) t += "; " + l.finding;
  return t;
}

// Spines in a row above, leaves in a row below, a line per link: red where the phase
// named it (blamed, down, withdrawn), amber where chance explained it, grey where some
// of its flows were bad, green where none was. Its width grows with its flows.
std::string drawing(const std::vector<FabricLinkView>& links) {
  const auto spines = in_order(links, &FabricLinkView::spine);
  const auto leaves = in_order(links, &FabricLinkView::leaf);
  if (spines.empty() || leaves.empty()) return "";
  const int box_w = 78, gap = 14, margin = 16;
  const int cols = static_cast<int>(std::max(spines.size(), leaves.size()));
  const int width = std::max(560, 2 * margin + cols * (box_w + gap));
  const int height = 230, spine_y = 20, leaf_y = 180, box_h = 26;
  auto x_of = [&](size_t i, size_t n) {
    const double step = static_cast<double>(width - 2 * margin) / static_cast<double>(n);
    return margin + step * (static_cast<double>(i) + 0.5);
  };
  auto index = [](const std::vector<std::string>& v, const std::string& s) {
    return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
  };
  std::string svg = fmt::format(
      "<figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"the leaf-spine fabric, each link coloured by its verdict\">\n",
      width, height, width, height);
  // Healthy links first, so a named one is drawn on top.
  std::vector<const FabricLinkView*> order;
  for (const auto& l : links) order.push_back(&l);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    auto rank = [](const FabricLinkView& l) { return l.failed() ? 3 : (l.warned() || l.by_chance()) ? 2 : l.bad > 0; };
    return rank(*a) < rank(*b);
  });
  for (const auto* l : order) {
    const size_t s = index(spines, l->spine), f = index(leaves, l->leaf);
    if (s >= spines.size() || f >= leaves.size()) continue;
    const double w = 1.5 + std::min(4.0, (l->bad + l->good) / 4.0);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{:.1f}\"{}>"
        "<title>{}</title></line>\n",
        x_of(f, leaves.size()), leaf_y, x_of(s, spines.size()), spine_y + box_h, link_colour(*l), w,
        l->failed() ? "" : " stroke-opacity=\"0.75\"", esc(link_title(*l)));
  }
  auto boxes = [&](const std::vector<std::string>& names, int y) {
    for (size_t i = 0; i < names.size(); ++i) {
      const double x = x_of(i, names.size());
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\" fill=\"#f4f4f4\" stroke=\"#555\"/>"
          "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n",
          x - box_w / 2.0, y, box_w, box_h, x, y + 17, esc(names[i]));
    }
  };
  boxes(spines, spine_y);
  boxes(leaves, leaf_y);
  svg +=
      "</svg><figcaption>Spines above, leaves below. Red: a link the phase named (blamed, down or withdrawn); "
      "amber: its bad flows are what chance gives at the run's background rate; grey: some bad flows, "
      "explained elsewhere; green: every flow good. Hover a link for its evidence.</figcaption></figure>\n";
  return svg;
}

std::string evidence_table(const std::vector<FabricLinkView>& links) {
  std::vector<const FabricLinkView*> shown;
  for (const auto& l : links)
    if (l.bad > 0 || !l.finding.empty() || l.by_chance()) shown.push_back(&l);
  if (shown.empty()) return "<p class=\"note\">No link carried a bad flow and the phase named none.</p>\n";
  std::stable_sort(shown.begin(), shown.end(), [](const auto* a, const auto* b) { return a->votes > b->votes; });
  Table t({"link", "bad flows", "good flows", "median<br>(of expected)", "votes", "chance<br>(p)", "finding"});
  for (const auto* l : shown)
    t.row({esc(l->name), fmt::format("{}", l->bad), fmt::format("{}", l->good),
           std::isnan(l->median_fraction) ? "-" : pct(l->median_fraction), num(l->votes),
           l->by_chance() ? num(l->chance_p, 2) : "", esc(l->finding)},
          l->failed()                       ? "bad"
          : (l->warned() || l->by_chance()) ? "warn"
                                            : "");
  return "<p class=\"note\">Links with evidence against them, most votes first (each bad flow votes 1/h for the h "
         "links of its path).</p>\n" +
         t.html();
}

std::string ecmp_table(const nlohmann::json& fabric) {
  Table t({"leaf", "flows", "flows per uplink", "max / mean", "uplinks used"});
  for (const auto& e : member(fabric, "ecmp")) {
    std::string per;
    for (const auto& [spine, n] : member(e, "flows_per_uplink").items())
      per += fmt::format("{}{} {}", per.empty() ? "" : ", ", spine, n.is_number() ? n.get<int>() : 0);
    const double ratio = number_at(e, "max_over_mean");
    t.row(
        {esc(text_at(e, "leaf")), num(number_at(e, "flows")), esc(per), num(ratio), num(number_at(e, "uplinks_used"))},
        ratio >= 2 ? "warn" : "");
  }
  if (t.empty()) return "";
  return "<h4>ECMP balance</h4><p class=\"note\">Per leaf, how its flows to other leaves spread over its uplinks; "
         "2x the mean or more on one uplink is polarized hashing.</p>\n" +
         t.html();
}

// The ECMP sweep (validate --ecmp-sweep): per flow count, the spread and the aggregate
// against the ideal, measured and as the traced paths allow.
std::string sweep_table(const nlohmann::json& fabric) {
  const auto& sweep = member(fabric, "ecmp_sweep");
  Table t({"flows / connection", "flows", "uplink max / mean", "uplinks used", "Gb/s", "ideal Gb/s", "measured",
           "paths allow"});
  auto share = [](double x) { return x > 0 ? fmt::format("{:.0f}%", 100 * x) : std::string("-"); };
  for (const auto& s : member(sweep, "steps")) {
    const double allowed = number_at(s, "predicted_fraction");
    t.row({num(number_at(s, "flows_per_connection")), num(number_at(s, "flows")), num(number_at(s, "max_over_mean")),
           fmt::format("{} of {}", num(number_at(s, "uplinks_used")), num(number_at(s, "uplinks"))),
           num(number_at(s, "measured_gbps")), num(number_at(s, "ideal_gbps")),
           share(number_at(s, "measured_fraction")), share(allowed)},
          allowed < 0.9 ? "warn" : "");
  }
  if (t.empty()) return "";
  return fmt::format(
             "<h4>ECMP sweep</h4><p class=\"note\">A cross-SU all-to-all, each NIC to {} NIC(s) of its rail in other "
             "SUs, with each count of flows per connection: the aggregate against the ideal (a perfect spread), "
             "measured and as the traced paths allow (max-min fair).</p>\n",
             num(number_at(sweep, "peers"))) +
         t.html();
}

}  // namespace

std::string fabric_section(const nlohmann::json& doc) {
  const auto& fabric = member(doc, "fabric");
  if (!fabric.is_object()) return "";
  const auto links = read_links(fabric);
  int flows = 0, reached = 0;
  for (const auto& f : member(fabric, "flows")) {
    flows += text_at(f, "health") != "skipped";
    reached += f.value("reached", false);
  }
  std::string out = fmt::format(
      "<h3>Fabric</h3><p class=\"note\">{} flow(s) over {} leaf-spine link(s), {} reached their destination; "
      "paths traced in {} s, flows measured in {} s.</p>\n",
      flows, links.size(), reached, num(number_at(fabric, "discovery_s")), num(number_at(fabric, "measure_s")));
  out += drawing(links);
  out += evidence_table(links);
  out += ecmp_table(fabric);
  out += sweep_table(fabric);
  std::string host;
  for (const auto& h : member(fabric, "host_side")) host += (host.empty() ? "" : ", ") + h.get<std::string>();
  if (!host.empty())
    out += "<p class=\"note\">Bad on every path (the host's NIC, cable or leaf port, judged by the pair tests): " +
           esc(host) + "</p>\n";
  return out;
}

}  // namespace railbench::report
