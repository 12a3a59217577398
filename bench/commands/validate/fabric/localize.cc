// From flows to the switch link at fault (localize.h). Evidence rules, where the header
// leaves a choice:
//  - a bad flow counts on every link it may have crossed (its known links and, for a cut
//    path, each next candidate); a good flow counts only on the links it surely crossed.
//    Blame needs the bad flows; exoneration needs certainty.
//  - blamed holds one link per ambiguity group (the lowest index); the group itself, with
//    the links no flow tells apart from it, is in `ambiguous`.
#include "bench/commands/validate/fabric/localize.h"

#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/core/stats.h"

namespace railbench {
namespace {

bool is_bad(const FlowObservation& f) {
  return f.health != FlowHealth::good;
}

// Every link a flow may have crossed: its known links, then its next candidates.
std::vector<int> cover_of(const FlowObservation& f) {
  std::vector<int> c = f.links;
  c.insert(c.end(), f.next_candidates.begin(), f.next_candidates.end());
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

void check_links(int link_count, const std::vector<FlowObservation>& flows) {
  if (link_count < 0) throw UsageError(fmt::format("localize: {} fabric links: give 0 or more", link_count));
  for (const auto& f : flows) {
    for (const auto* list : {&f.links, &f.next_candidates}) {
      for (int l : *list) {
        if (l < 0 || l >= link_count) {
          throw UsageError(
              fmt::format("localize: flow '{}' crosses link {}, not one of the fabric's {} links: "
                          "map its path with the config the fabric was built from",
                          f.label, l, link_count));
        }
      }
    }
  }
}

// Whether the link `l`, crossed the way the NIC's bad flows crossed it (up out of their
// source's leaf: first on the path; down: second), carried the other NICs' flows well:
// at least one good, and twice as many good as bad. Then it explains their bad flows
// worse than the NIC does.
bool fine_for_others(const std::vector<FlowObservation>& flows, int nic, int l) {
  std::set<size_t> ways;  // positions on the path
  for (const auto& f : flows) {
    if ((f.src_nic != nic && f.dst_nic != nic) || !is_bad(f)) continue;
    for (size_t k = 0; k < f.links.size(); ++k)
      if (f.links[k] == l) ways.insert(k);
  }
  int good = 0, bad = 0;
  for (const auto& f : flows) {
    if (f.src_nic == nic || f.dst_nic == nic) continue;
    bool through = false;
    for (size_t k : ways) through = through || (k < f.links.size() && f.links[k] == l);
    if (!through) continue;
    (is_bad(f) ? bad : good) += 1;
  }
  return good >= 1 && good >= 2 * bad;
}

// 1. Host side: a NIC whose flows are (nearly) all bad, on 2+ paths that no single fabric
// link has in common (one shared link would explain them as well as the NIC does), or
// whose bad flows all crossed links that carried the other NICs' flows well (its few
// flows hashed onto one spine: the NIC, not that link).
bool host_side(const std::vector<FlowObservation>& flows, const std::vector<int>& mine, int nic,
               const LocalizeOptions& o) {
  if (static_cast<int>(mine.size()) < o.min_flows_per_nic) return false;
  std::set<std::pair<std::vector<int>, std::vector<int>>> paths;
  std::optional<std::set<int>> common;  // the known links on every bad flow's path
  int bad = 0;
  for (int i : mine) {
    const auto& f = flows[i];
    if (!is_bad(f)) continue;
    ++bad;
    paths.emplace(f.links, f.next_candidates);
    std::set<int> known(f.links.begin(), f.links.end());
    if (!common) {
      common = known;
    } else {
      std::set<int> both;
      std::set_intersection(common->begin(), common->end(), known.begin(), known.end(),
                            std::inserter(both, both.end()));
      common = std::move(both);
    }
  }
  if (bad < o.host_bad_fraction * static_cast<double>(mine.size()) || !common) return false;
  if (common->empty()) return paths.size() >= 2;
  return std::all_of(common->begin(), common->end(), [&](int l) { return fine_for_others(flows, nic, l); });
}

std::vector<int> host_side_nics(const std::vector<FlowObservation>& flows, const LocalizeOptions& o) {
  std::map<int, std::vector<int>> per_nic;
  for (int i = 0; i < static_cast<int>(flows.size()); ++i) {
    const auto& f = flows[i];
    if (f.src_nic >= 0) per_nic[f.src_nic].push_back(i);
    if (f.dst_nic >= 0 && f.dst_nic != f.src_nic) per_nic[f.dst_nic].push_back(i);
  }
  std::vector<int> nics;
  for (const auto& [nic, mine] : per_nic) {
    if (host_side(flows, mine, nic, o)) nics.push_back(nic);
  }
  return nics;
}

// Per link, the fabric flows (those of no host-side NIC) that bear on it.
struct LinkFlows {
  std::vector<std::vector<int>> bad;   // may have crossed it
  std::vector<std::vector<int>> good;  // surely crossed it
};

LinkFlows collect(int link_count, const std::vector<FlowObservation>& flows, const std::vector<bool>& fabric) {
  LinkFlows lf{std::vector<std::vector<int>>(link_count), std::vector<std::vector<int>>(link_count)};
  for (int i = 0; i < static_cast<int>(flows.size()); ++i) {
    if (!fabric[i]) continue;
    if (is_bad(flows[i])) {
      for (int l : cover_of(flows[i])) lf.bad[l].push_back(i);
    } else {
      auto known = flows[i].links;
      std::sort(known.begin(), known.end());
      known.erase(std::unique(known.begin(), known.end()), known.end());
      for (int l : known) lf.good[l].push_back(i);
    }
  }
  return lf;
}

// 2. 007's votes: a bad flow gives 1/h to each of the h hops of its path; a cut path's
// last hop is one of its candidates, so that 1/h is split over them.
std::vector<LinkEvidence> evidence(const std::vector<FlowObservation>& flows, const std::vector<bool>& fabric,
                                   const LinkFlows& lf) {
  const int link_count = static_cast<int>(lf.bad.size());
  std::vector<LinkEvidence> ev(link_count);
  for (int i = 0; i < static_cast<int>(flows.size()); ++i) {
    const auto& f = flows[i];
    if (!fabric[i] || !is_bad(f)) continue;
    const bool cut = !f.next_candidates.empty();
    const double h = static_cast<double>(f.links.size()) + (cut ? 1 : 0);
    if (h == 0) continue;
    for (int l : f.links) ev[l].votes += 1 / h;
    for (int l : f.next_candidates) ev[l].votes += 1 / h / static_cast<double>(f.next_candidates.size());
  }
  for (int l = 0; l < link_count; ++l) {
    ev[l].link = l;
    ev[l].bad_flows = static_cast<int>(lf.bad[l].size());
    ev[l].good_flows = static_cast<int>(lf.good[l].size());
    std::vector<double> fractions;
    for (const auto* list : {&lf.bad[l], &lf.good[l]}) {
      for (int i : *list) {
        fractions.push_back(flows[i].fraction);
        ev[l].retransmits += flows[i].retransmits;
      }
    }
    // A link no flow crossed keeps the default 1: nothing says it is slow.
    if (!fractions.empty()) ev[l].median_fraction = median(std::move(fractions));
  }
  return ev;
}

// The candidates for blame. A link with more good flows than bad is not one, unless some
// bad flow could have crossed no other link (then it is `forced`).
struct Candidates {
  std::vector<bool> eligible, forced;
};

Candidates candidates(const std::vector<FlowObservation>& flows, const std::vector<bool>& fabric, const LinkFlows& lf) {
  const size_t n = lf.bad.size();
  Candidates c{std::vector<bool>(n), std::vector<bool>(n)};
  for (size_t i = 0; i < flows.size(); ++i) {
    if (!fabric[i] || !is_bad(flows[i])) continue;
    const auto cover = cover_of(flows[i]);
    if (cover.size() == 1) c.forced[cover[0]] = true;
  }
  for (size_t l = 0; l < n; ++l) {
    c.eligible[l] = c.forced[l] || (!lf.bad[l].empty() && lf.good[l].size() <= lf.bad[l].size());
  }
  return c;
}

struct Cover {
  std::vector<int> links;     // chosen, in the order chosen
  std::vector<bool> covered;  // per flow: a chosen link may have carried it
  bool tied = false;          // a step had more than one best link
};

void take(Cover& c, int l, const LinkFlows& lf) {
  c.links.push_back(l);
  for (int i : lf.bad[l]) c.covered[i] = true;
}

// 3a. Greedy hitting set: the forced links, then while some link explains more than its
// penalty, the one whose newly explained bad flows minus penalty x good flows is largest.
Cover greedy(size_t flow_count, const LinkFlows& lf, const Candidates& cand, double penalty) {
  Cover c{{}, std::vector<bool>(flow_count), false};
  const int n = static_cast<int>(lf.bad.size());
  for (int l = 0; l < n; ++l) {
    if (cand.forced[l]) take(c, l, lf);
  }
  for (;;) {
    int best = -1, at_best = 0;
    double best_score = 0;
    for (int l = 0; l < n; ++l) {
      if (!cand.eligible[l]) continue;  // a chosen link has no fresh flow left
      const auto fresh = std::count_if(lf.bad[l].begin(), lf.bad[l].end(), [&](int i) { return !c.covered[i]; });
      if (fresh == 0) continue;
      const double score = static_cast<double>(fresh) - penalty * static_cast<double>(lf.good[l].size());
      if (score <= 0) continue;
      if (best < 0 || score > best_score + 1e-9) {
        best = l, best_score = score, at_best = 1;
      } else if (std::abs(score - best_score) <= 1e-9) {
        ++at_best;
      }
    }
    if (best < 0) break;
    c.tied = c.tied || at_best > 1;
    take(c, best, lf);
  }
  return c;
}

struct GlpProbDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};

// The ILP's matrix, 1-based as GLPK wants it.
struct Sparse {
  std::vector<int> row{0}, col{0};
  std::vector<double> val{0};
  void add(int r, int c, double v) { row.push_back(r), col.push_back(c), val.push_back(v); }
};

// 3b. Exact: the fewest eligible links that explain every flow greedy explained, then the
// fewest good flows they carry. x_l (binary): link l blamed; y_g (0..1): good flow g
// crosses a blamed link (y_g >= x_l for each of its links). Minimize W sum x + sum y with
// W above the number of good flows, so one link fewer always wins. Nullopt: no optimum.
std::optional<std::vector<int>> exact_cover(const Cover& greedy_cover, const LinkFlows& lf, const Candidates& cand) {
  std::vector<int> links;  // column j+1 is links[j]
  for (int l = 0; l < static_cast<int>(lf.bad.size()); ++l) {
    if (cand.eligible[l] &&
        std::any_of(lf.bad[l].begin(), lf.bad[l].end(), [&](int i) { return greedy_cover.covered[i]; })) {
      links.push_back(l);
    }
  }
  std::map<int, std::vector<int>> bad_rows, good_cols;  // flow -> its candidate columns
  for (size_t j = 0; j < links.size(); ++j) {
    for (int i : lf.bad[links[j]]) {
      if (greedy_cover.covered[i]) bad_rows[i].push_back(static_cast<int>(j) + 1);
    }
    for (int g : lf.good[links[j]]) good_cols[g].push_back(static_cast<int>(j) + 1);
  }
  if (links.empty()) return std::vector<int>{};
  glp_term_out(GLP_OFF);
  std::unique_ptr<glp_prob, GlpProbDeleter> lp(glp_create_prob());
  glp_set_obj_dir(lp.get(), GLP_MIN);
  const int xs = static_cast<int>(links.size());
  const double weight = static_cast<double>(good_cols.size()) + 1;
  glp_add_cols(lp.get(), xs + static_cast<int>(good_cols.size()));
  for (int j = 1; j <= xs; ++j) {
    glp_set_col_kind(lp.get(), j, GLP_BV);
    if (cand.forced[links[j - 1]]) glp_set_col_bnds(lp.get(), j, GLP_FX, 1, 1);
    glp_set_obj_coef(lp.get(), j, weight);
  }
  Sparse m;
  int rows = 0;
  for (const auto& [flow, cols] : bad_rows) {
    ++rows;
    for (int j : cols) m.add(rows, j, 1);
  }
  const int bad_row_count = rows;
  int y = xs;
  for (const auto& [flow, cols] : good_cols) {
    glp_set_col_bnds(lp.get(), ++y, GLP_DB, 0, 1);
    glp_set_obj_coef(lp.get(), y, 1);
    for (int j : cols) m.add(++rows, y, 1), m.add(rows, j, -1);
  }
  glp_add_rows(lp.get(), rows);
  for (int r = 1; r <= rows; ++r) glp_set_row_bnds(lp.get(), r, GLP_LO, r <= bad_row_count ? 1 : 0, 0);
  glp_load_matrix(lp.get(), static_cast<int>(m.val.size()) - 1, m.row.data(), m.col.data(), m.val.data());
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.presolve = GLP_ON;
  parm.msg_lev = GLP_MSG_OFF;
  if (glp_intopt(lp.get(), &parm) != 0 || glp_mip_status(lp.get()) != GLP_OPT) return std::nullopt;
  std::vector<int> chosen;
  for (int j = 1; j <= xs; ++j) {
    if (glp_mip_col_val(lp.get(), j) > 0.5) chosen.push_back(links[j - 1]);
  }
  return chosen;
}

bool same_flows(const LinkFlows& lf, int a, int b) {
  auto sorted = [](std::vector<int> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  return sorted(lf.bad[a]) == sorted(lf.bad[b]) && sorted(lf.good[a]) == sorted(lf.good[b]);
}

// 4. The links no flow tells apart from a blamed one. Each blamed link is replaced by the
// lowest index of its group, so the answer does not depend on the solver's pick.
void ambiguity(Localization& out, const LinkFlows& lf) {
  std::vector<int> blamed;
  for (int l : out.blamed) {
    std::vector<int> group;
    for (int m = 0; m < static_cast<int>(lf.bad.size()); ++m) {
      if (m == l || same_flows(lf, l, m)) group.push_back(m);
    }
    if (std::find(blamed.begin(), blamed.end(), group.front()) != blamed.end()) continue;
    blamed.push_back(group.front());
    if (group.size() > 1) out.ambiguous.push_back(std::move(group));
  }
  out.blamed = std::move(blamed);
}

// The flows of no host-side NIC: the ones that bear on fabric links.
std::vector<bool> fabric_flows_of(const std::vector<FlowObservation>& flows, const std::vector<int>& host_nics) {
  std::vector<bool> fabric(flows.size(), true);
  for (size_t i = 0; i < flows.size(); ++i)
    for (int nic : host_nics) fabric[i] = fabric[i] && flows[i].src_nic != nic && flows[i].dst_nic != nic;
  return fabric;
}

}  // namespace

bool crosses(const FlowObservation& f, int link) {
  return std::find(f.links.begin(), f.links.end(), link) != f.links.end() ||
         std::find(f.next_candidates.begin(), f.next_candidates.end(), link) != f.next_candidates.end();
}

// 5. Chance (applied by the verdict to localize's answer): the background rate is that
// of the fabric flows through no blamed link, and at least one flow in all of them (a
// quiet run's zero is no proof that noise is impossible). The least likely blame goes
// first; its flows then join the background of the others.
void drop_chance_links(const std::vector<FlowObservation>& flows, Localization& out, const LocalizeOptions& o) {
  const std::vector<bool> fabric = fabric_flows_of(flows, out.host_nics);
  int fabric_flows = 0;
  for (size_t i = 0; i < flows.size(); ++i) fabric_flows += fabric[i];
  while (!out.blamed.empty()) {
    int bg_bad = 0, bg_all = 0;
    for (size_t i = 0; i < flows.size(); ++i) {
      if (!fabric[i]) continue;
      if (std::any_of(out.blamed.begin(), out.blamed.end(), [&](int l) { return crosses(flows[i], l); })) continue;
      ++bg_all;
      bg_bad += is_bad(flows[i]);
    }
    const double rate =
        std::max(bg_all > 0 ? static_cast<double>(bg_bad) / bg_all : 0.0, 1.0 / std::max(fabric_flows, 1));
    ChanceLink worst;
    for (int l : out.blamed) {
      const LinkEvidence& e = out.links.at(l);
      const double p = binomial_tail(e.bad_flows, e.bad_flows + e.good_flows, rate);
      if (worst.link < 0 || p > worst.p_value)
        worst = ChanceLink{l, e.bad_flows, e.bad_flows + e.good_flows, bg_bad, bg_all, p};
    }
    if (worst.p_value <= o.chance_alpha) return;
    out.blamed.erase(std::find(out.blamed.begin(), out.blamed.end(), worst.link));
    std::erase_if(out.ambiguous, [&](const std::vector<int>& g) { return g.front() == worst.link; });
    out.by_chance.push_back(worst);
    for (size_t i = 0; i < flows.size(); ++i) {
      if (fabric[i] && is_bad(flows[i]) && crosses(flows[i], worst.link) &&
          std::none_of(out.blamed.begin(), out.blamed.end(), [&](int l) { return crosses(flows[i], l); }) &&
          std::find(out.unexplained_flows.begin(), out.unexplained_flows.end(), static_cast<int>(i)) ==
              out.unexplained_flows.end())
        out.unexplained_flows.push_back(static_cast<int>(i));
    }
  }
}

double binomial_tail(int k, int n, double p) {
  if (k <= 0) return 1;
  if (k > n) return 0;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  double sum = 0;
  for (int i = k; i <= n; ++i) {
    const double log_term = std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + i * std::log(p) +
                            (n - i) * std::log1p(-p);
    sum += std::exp(log_term);
  }
  return std::min(sum, 1.0);
}

Localization localize(int link_count, const std::vector<FlowObservation>& flows, const LocalizeOptions& options) {
  check_links(link_count, flows);
  Localization out;
  out.host_nics = host_side_nics(flows, options);
  const std::vector<bool> fabric = fabric_flows_of(flows, out.host_nics);
  const LinkFlows lf = collect(link_count, flows, fabric);
  out.links = evidence(flows, fabric, lf);
  const Candidates cand = candidates(flows, fabric, lf);
  const Cover cover = greedy(flows.size(), lf, cand, options.good_penalty);
  out.blamed = cover.links;
  if (cover.tied) {
    if (auto exact = exact_cover(cover, lf, cand)) out.blamed = std::move(*exact);
  }
  ambiguity(out, lf);
  std::stable_sort(out.blamed.begin(), out.blamed.end(), [&](int a, int b) {
    return out.links[a].votes > out.links[b].votes || (out.links[a].votes == out.links[b].votes && a < b);
  });
  std::vector<bool> explained(flows.size());
  for (int l : out.blamed) {
    for (int i : lf.bad[l]) explained[i] = true;
  }
  for (size_t i = 0; i < flows.size(); ++i) {
    if (fabric[i] && is_bad(flows[i]) && !explained[i]) out.unexplained_flows.push_back(static_cast<int>(i));
  }
  return out;
}

EcmpBalance ecmp_balance(const std::vector<int>& uplinks, const std::vector<FlowObservation>& flows) {
  EcmpBalance b;
  b.flows_per_link.assign(uplinks.size(), 0);
  int total = 0;
  for (const auto& f : flows) {
    for (size_t u = 0; u < uplinks.size(); ++u) {
      if (std::find(f.links.begin(), f.links.end(), uplinks[u]) != f.links.end()) ++b.flows_per_link[u], ++total;
    }
  }
  if (uplinks.empty() || total == 0) return b;
  const int most = *std::max_element(b.flows_per_link.begin(), b.flows_per_link.end());
  b.max_over_mean = most / (static_cast<double>(total) / static_cast<double>(uplinks.size()));
  b.links_used =
      static_cast<int>(std::count_if(b.flows_per_link.begin(), b.flows_per_link.end(), [](int n) { return n > 0; }));
  return b;
}

}  // namespace railbench
